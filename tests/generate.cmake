# generate.cmake - generation (generate.h, tests/test_generate.c): the KV cache against the
# training forward, tp / pp / tp x pp against one process (logits, greedy ids, seeded samples),
# the sampler's rules; and hp generate end to end (tests/run_generate.sh).
add_executable(test_generate ${CMAKE_CURRENT_LIST_DIR}/test_generate.c)
target_link_libraries(test_generate PRIVATE hyperpar)
foreach(np 1 2 4)
  set(level L0)
  set(procs ${np})
  if(np EQUAL 4)
    set(level L1)
    set(procs 2)
  endif()
  add_test(NAME generate_np${np} COMMAND ${HP_MPIEXEC} -np ${np} $<TARGET_FILE:test_generate>)
  set_tests_properties(generate_np${np} PROPERTIES LABELS ${level} TIMEOUT 120 PROCESSORS ${procs}
                       ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
endforeach()
add_test(NAME generate_cli COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/run_generate.sh $<TARGET_FILE:hp>)
set_tests_properties(generate_cli PROPERTIES LABELS L0 TIMEOUT 180 PROCESSORS 2 SKIP_RETURN_CODE 77
                     ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
add_test(NAME sample_during_training COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/run_sample.sh $<TARGET_FILE:hp>)
set_tests_properties(sample_during_training PROPERTIES LABELS L0 TIMEOUT 180 PROCESSORS 2 SKIP_RETURN_CODE 77
                     ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
