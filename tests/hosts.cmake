# Several hosts for real (issue 42; docs/multi_host.md "Test hosts on one machine", "When a host
# or a link fails"): network-namespace hosts on a bridge (scripts/netns_hosts.sh), mpirun on
# host 1 reaching the others through an rsh agent (scripts/netns_rsh.sh), TCP only. Root only:
# elsewhere each test prints why and exits 77 (skipped). Open MPI only (the agent is Open MPI's
# plm_rsh_agent; MPICH's Hydra: docs/multi_host.md). They take the netns_hosts lock: one at a
# time, so that the bounds on how fast a fault ends the job are not measured on a machine the
# other host tests load too.
#   hosts_layout_*      losses bit for bit those of one machine, --verify, and every group's bytes
#                       on each host's links where `hp plan --ranks-per-node` says
#   hosts_fault_cut     a cut link mid-step: watchdog line, non-zero, within --timeout + 15 s, no
#                       process left on any host (the launcher's leftovers ended by comm_abort.c)
#   hosts_fault_kill    every process of one host SIGKILLed: rank 0's line, the same bound
#   hosts_fault_slow    a throttled link: the job goes on, slower, to its end, same losses
#   hosts_fault_ckpt    a host cut during a checkpoint save: the last complete checkpoint stays
#                       and loads, and the job resumes on the host left (world 4 -> 2) to its end,
#                       its losses within 1e-5 of the uninterrupted run's
#   comm_abort_grace    (any user, one machine) ranks whose MPI_Abort cannot return (their
#                       launcher daemon frozen) exit on their own after the grace, and the daemon
#                       is ended a second later
set(HP_HOSTS_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_hosts_fault.sh)
add_test(NAME comm_abort_grace
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_abort_grace.sh ${HP_MPIEXEC} -- $<TARGET_FILE:test_watchdog>)
set_tests_properties(comm_abort_grace PROPERTIES LABELS L1 TIMEOUT 60 PROCESSORS 2)
if(NOT HP_MPIEXEC_VERSION MATCHES "HYDRA|MPICH")
  set(HP_HOSTS_ENV "HOSTS_MPIRUN=${MPIEXEC_EXECUTABLE}")
  foreach(spec "dense_2x2:2:2:--dp-shard;2;--tp;2"
               "dense_4x1:4:1:--dp-shard;2;--tp;2"
               "moe_2x2:2:2:--model;tiny-moe;--dp-shard;4;--ep;2")
    string(REPLACE ":" ";" parts "${spec}")
    list(GET parts 0 name)
    list(GET parts 1 nhosts)
    list(GET parts 2 slots)
    list(SUBLIST parts 3 -1 flags)
    string(REPLACE "_" "" tag "hp${name}")
    add_test(NAME hosts_layout_${name}
             COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_hosts_layout.sh ${tag} ${CMAKE_SOURCE_DIR}
                     $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/hosts_layout_${name} ${nhosts} ${slots} ${flags})
    set_tests_properties(hosts_layout_${name} PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2
                         SKIP_RETURN_CODE 77 RESOURCE_LOCK netns_hosts ENVIRONMENT "${HP_HOSTS_ENV}")
  endforeach()
  foreach(fault cut kill slow ckpt)
    add_test(NAME hosts_fault_${fault}
             COMMAND sh ${HP_HOSTS_SCRIPT} ${fault} ${CMAKE_SOURCE_DIR} $<TARGET_FILE:hp>
                     ${CMAKE_CURRENT_BINARY_DIR}/hosts_fault_${fault})
    set_tests_properties(hosts_fault_${fault} PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2
                         SKIP_RETURN_CODE 77 RESOURCE_LOCK netns_hosts ENVIRONMENT "${HP_HOSTS_ENV}")
  endforeach()
endif()
