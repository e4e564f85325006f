# comm.cmake - collectives (src/comm) at 1, 2, 4 and 8 ranks, plus two jobs that must
# abort (not hang) when one rank fails: a bad argument and a real MPI error.
add_executable(test_comm ${CMAKE_CURRENT_LIST_DIR}/test_comm.c)
target_link_libraries(test_comm PRIVATE hyperpar)
foreach(np 1 2 4 8)
  add_test(NAME comm_np${np} COMMAND ${HP_MPIEXEC} -np ${np} $<TARGET_FILE:test_comm>)
  set_tests_properties(comm_np${np} PROPERTIES LABELS L0 TIMEOUT 120)
endforeach()

# The same tests over a comm layer built with pieces of at most 64 elements: at 4 and 8
# ranks a piece holds 16 or 8 elements per member, the path a group of more than 64 ranks
# takes with the real bound (hp_comm_chunk), with many pieces in flight. Its own copy of
# src/comm comes first at link time, so the library's is not used.
file(GLOB HP_COMM_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/comm/*.c)
add_executable(test_comm_small_pieces ${CMAKE_CURRENT_LIST_DIR}/test_comm.c ${HP_COMM_SOURCES})
target_compile_definitions(test_comm_small_pieces PRIVATE HP_COMM_PIECE_MAX=64)
target_include_directories(test_comm_small_pieces PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(test_comm_small_pieces PRIVATE hyperpar)
foreach(np 4 8)
  add_test(NAME comm_small_pieces_np${np} COMMAND ${HP_MPIEXEC} -np ${np} $<TARGET_FILE:test_comm_small_pieces>)
  set_tests_properties(comm_small_pieces_np${np} PROPERTIES LABELS L0 TIMEOUT 120)
endforeach()

string(REPLACE ";" " " HP_COMM_MPIEXEC_STR "${HP_MPIEXEC}")
set(HP_COMM_ABORT_arg "root 99 out of range")
# (Open MPI returns a failed request's error to the comm layer; MPICH raises it on
# MPI_COMM_WORLD, whose handler the comm layer replaces: both name the caller's line.)
set(HP_COMM_ABORT_mpi "comm_move.c:[0-9]*: rank 1: MPI error in send-recv on group world")
foreach(mode arg mpi)
  add_test(NAME comm_abort_${mode} COMMAND sh -c
    "out=$(${HP_COMM_MPIEXEC_STR} -np 2 $<TARGET_FILE:test_comm> --abort-${mode} 2>&1); rc=$?; \
echo \"$out\"; echo \"exit code $rc\"; [ $rc -ne 0 ] && echo \"$out\" | grep -Eq '${HP_COMM_ABORT_${mode}}'")
  set_tests_properties(comm_abort_${mode} PROPERTIES LABELS L0 TIMEOUT 30)
endforeach()

# The watchdog (src/comm/comm_wait.c): world rank 3 skips one collective or send/recv and
# the others wait in it. With HP_TIMEOUT=2 the job must end non-zero within 10 s and
# print the watchdog's line naming the op and its group (step 7 is set by the test).
# `test_watchdog --launch N OP` starts itself through hp's launcher (tools/hp/launch/launch*.c).
add_executable(test_watchdog ${CMAKE_CURRENT_LIST_DIR}/test_watchdog.c ${HP_LAUNCH_SOURCES})
target_include_directories(test_watchdog PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../tools/hp ${CMAKE_CURRENT_LIST_DIR}/../src)
target_link_libraries(test_watchdog PRIVATE hyperpar)
add_test(NAME comm_watchdog_api COMMAND $<TARGET_FILE:test_watchdog> --api)
set_tests_properties(comm_watchdog_api PROPERTIES LABELS L0 TIMEOUT 30 ENVIRONMENT HP_TIMEOUT=7.5)
set(HP_WATCHDOG_OPS all-gather:tp all-reduce:dp_shard reduce-scatter:fsdp all-to-all:ep
    send-recv:tp broadcast:world barrier:world)
# Each op's job is started by hp's own launcher (as `hp run` starts its ranks), so it must also
# end with hp's lines only: no MPI_ABORT banner after hp's line, no ORTE_ERROR_LOG teardown
# noise (launch_banner.c; WATCHDOG_HP_LINES_ONLY in run_watchdog.sh). comm_watchdog_mpiexec:
# the same watchdog under the user's own mpiexec, whose output is the launcher's business.
foreach(pair ${HP_WATCHDOG_OPS})
  string(REPLACE ":" ";" pair_list "${pair}")
  list(GET pair_list 0 op)
  list(GET pair_list 1 group)
  add_test(NAME comm_watchdog_${op} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_watchdog.sh
    "hp: watchdog: rank [0-9] waited 2\\.[0-9] s in ${op} on group ${group} \\(step 7\\); aborting the job"
    1 $<TARGET_FILE:test_watchdog> --launch 4 ${op})
  set_tests_properties(comm_watchdog_${op} PROPERTIES LABELS L0 TIMEOUT 30
                       ENVIRONMENT "HP_TIMEOUT=2;WATCHDOG_HP_LINES_ONLY=1")
endforeach()
add_test(NAME comm_watchdog_mpiexec COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_watchdog.sh
  "hp: watchdog: rank [0-9] waited 2\\.[0-9] s in barrier on group world \\(step 7\\); aborting the job"
  1 ${HP_MPIEXEC} -np 4 $<TARGET_FILE:test_watchdog> barrier)
set_tests_properties(comm_watchdog_mpiexec PROPERTIES LABELS L0 TIMEOUT 30 ENVIRONMENT HP_TIMEOUT=2)
# A bad HP_TIMEOUT is refused by hp_comm_init: exit 2 and one line naming the rule.
add_test(NAME comm_watchdog_bad_env COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_watchdog.sh
  "hp: HP_TIMEOUT=abc: the watchdog timeout must be a finite number of seconds > 0"
  2 $<TARGET_FILE:test_watchdog> --launch 2 barrier)
set_tests_properties(comm_watchdog_bad_env PROPERTIES LABELS L0 TIMEOUT 30
                     ENVIRONMENT "HP_TIMEOUT=abc;WATCHDOG_HP_LINES_ONLY=1")

# A rank killed with SIGKILL in the middle of `hp run` (4 ranks) must end the whole job,
# non-zero, in under 10 s; the script prints the measured time. A rank frozen with SIGSTOP
# is noticed by the watchdog alone (HP_TIMEOUT=2): its line must name the op and group.
add_test(NAME comm_killed_rank COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_killed_rank.sh $<TARGET_FILE:hp> KILL)
set_tests_properties(comm_killed_rank PROPERTIES LABELS L1 TIMEOUT 60)
add_test(NAME comm_stopped_rank COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_killed_rank.sh $<TARGET_FILE:hp> STOP)
set_tests_properties(comm_stopped_rank PROPERTIES LABELS L1 TIMEOUT 60 ENVIRONMENT HP_TIMEOUT=2)

# a rank's ordinary non-zero exit ends with hp's own line: the launcher's "process returned a
# non-zero exit code" banner (Open MPI, MPICH) is dropped and the exit code kept (launch_banner.c);
# a killed rank is still named with its signal (comm_killed_rank)
add_test(NAME launch_nonfinite_one_line
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 1 "hp: step [0-9]+: loss .*not finite" --
                 $<TARGET_FILE:hp> run --model tiny --dp-shard 2 --lr 1e30 --steps 5 --quiet)
set_tests_properties(launch_nonfinite_one_line PROPERTIES LABELS L0 TIMEOUT 60 ENVIRONMENT "HP_EXPECT_ONE_LINE=1")
add_test(NAME launch_verify_fail_no_banner
         COMMAND sh -c "\"$0\" run --model tiny --dp-shard 2 --verify --quiet >\"$1.out\" 2>\"$1.err\"; rc=$?; cat \"$1.out\" \"$1.err\"; [ $rc = 1 ] && grep -qx 'verify: FAIL' \"$1.out\" && ! grep -Eqi 'non-zero|BAD TERMINATION' \"$1.err\""
                 $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/launch_verify_fail)
set_tests_properties(launch_verify_fail_no_banner PROPERTIES LABELS L0 TIMEOUT 60
                     ENVIRONMENT "HP_FAILPOINT=fsdp_grad_average")
