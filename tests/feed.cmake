# feed.cmake - the program's own batch (hp_trainer_feed / hp_trainer_step_batch, train.h): fed
# the ids a data source gives, synthetic or an llm.c shard, the steps are bit for bit the data
# path's (loss, grad norm, lr, parameters) on 1 process, dp_shard 2, cp 2, tp 2 x dp_shard 2,
# pp 2 x dp_shard 2 and cp 2 x dp_shard 2, both batch forms; bad batches are refused with one
# line on every rank and change nothing (tests/test_feed.c).
add_executable(test_feed ${CMAKE_CURRENT_LIST_DIR}/test_feed.c)
target_link_libraries(test_feed PRIVATE hyperpar)
foreach(np 1 2 4)
  set(level L0)
  set(procs ${np})
  if(np EQUAL 4)
    set(level L1)
    set(procs 2)
  endif()
  add_test(NAME feed_np${np} COMMAND ${HP_MPIEXEC} -np ${np} $<TARGET_FILE:test_feed> ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(feed_np${np} PROPERTIES LABELS ${level} TIMEOUT 120 PROCESSORS ${procs}
                       ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
endforeach()
