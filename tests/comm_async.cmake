# comm_async.cmake - the nonblocking gradient reductions (src/comm/comm_async.c) against the
# blocking calls: same bits, same counters, at 2, 4 and 8 ranks (FSDP, DDP, HSDP groups).
add_executable(test_comm_async ${CMAKE_CURRENT_LIST_DIR}/test_comm_async.c)
target_link_libraries(test_comm_async PRIVATE hyperpar)
foreach(np 2 4 8)
  add_test(NAME comm_async_np${np} COMMAND ${HP_MPIEXEC} -np ${np} $<TARGET_FILE:test_comm_async>)
  set_tests_properties(comm_async_np${np} PROPERTIES LABELS L0 TIMEOUT 120)
endforeach()
