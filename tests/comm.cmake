# comm.cmake - collectives (src/comm) at 1, 2, 4 and 8 ranks, plus two jobs that must
# abort (not hang) when one rank fails: a bad argument and a real MPI error.
add_executable(test_comm ${CMAKE_CURRENT_LIST_DIR}/test_comm.c)
target_link_libraries(test_comm PRIVATE hyperpar)
foreach(np 1 2 4 8)
  add_test(NAME comm_np${np} COMMAND ${HP_MPIEXEC} -np ${np} $<TARGET_FILE:test_comm>)
  set_tests_properties(comm_np${np} PROPERTIES LABELS L0 TIMEOUT 60)
endforeach()

string(REPLACE ";" " " HP_COMM_MPIEXEC_STR "${HP_MPIEXEC}")
set(HP_COMM_ABORT_arg "root 99 out of range")
set(HP_COMM_ABORT_mpi "comm_move.c:[0-9]*: rank 1: MPI error in send-recv on group world")
foreach(mode arg mpi)
  add_test(NAME comm_abort_${mode} COMMAND sh -c
    "out=$(${HP_COMM_MPIEXEC_STR} -np 2 $<TARGET_FILE:test_comm> --abort-${mode} 2>&1); rc=$?; \
echo \"$out\"; echo \"exit code $rc\"; [ $rc -ne 0 ] && echo \"$out\" | grep -q '${HP_COMM_ABORT_${mode}}'")
  set_tests_properties(comm_abort_${mode} PROPERTIES LABELS L0 TIMEOUT 30)
endforeach()
