# cp.cmake - context parallel: the sequence layouts (L0, one process) and ring attention
# against full causal attention under mpirun (L1).
add_executable(test_cp_layout tests/test_cp_layout.c)
target_link_libraries(test_cp_layout PRIVATE hyperpar)
add_test(NAME cp_layout COMMAND test_cp_layout)
# a bad S must give one line naming the rule and the numbers, and exit code 2
add_test(NAME cp_layout_bad_lb COMMAND sh ${CMAKE_SOURCE_DIR}/tests/expect_exit.sh 2 "needs S divisible by 2\\*C, got S=10 C=4"
         -- $<TARGET_FILE:test_cp_layout> bad-lb)
add_test(NAME cp_layout_bad_contig COMMAND sh ${CMAKE_SOURCE_DIR}/tests/expect_exit.sh 2 "needs S divisible by C, got S=10 C=4"
         -- $<TARGET_FILE:test_cp_layout> bad-contig)
set_tests_properties(cp_layout PROPERTIES LABELS "L0;cp" TIMEOUT 20)
set_tests_properties(cp_layout_bad_lb cp_layout_bad_contig PROPERTIES LABELS "L0;cp" TIMEOUT 20)

add_executable(test_cp_attention tests/test_cp_attention.c)
target_link_libraries(test_cp_attention PRIVATE hyperpar)
foreach(np 1 2 4)
  add_test(NAME cp_attention_np${np} COMMAND ${HP_MPIEXEC} -np ${np} $<TARGET_FILE:test_cp_attention>)
  set_tests_properties(cp_attention_np${np} PROPERTIES LABELS "L1;cp" TIMEOUT 60)
endforeach()
add_test(NAME cp_attention_tp2_np4 COMMAND ${HP_MPIEXEC} -np 4 $<TARGET_FILE:test_cp_attention> tp2)
set_tests_properties(cp_attention_tp2_np4 PROPERTIES LABELS "L1;cp" TIMEOUT 60)
add_test(NAME cp_attention_bad_np2 COMMAND sh ${CMAKE_SOURCE_DIR}/tests/expect_exit.sh 2
         "load-balanced cp needs S divisible by 2\\*C: local length Sl=3 is odd"
         -- ${HP_MPIEXEC} -np 2 $<TARGET_FILE:test_cp_attention> bad)
set_tests_properties(cp_attention_bad_np2 PROPERTIES LABELS "L1;cp" TIMEOUT 60)
# 8 ranks oversubscribed on 2 cores: still ~5 s
add_test(NAME cp_attention_np8 COMMAND ${HP_MPIEXEC} -np 8 $<TARGET_FILE:test_cp_attention>)
set_tests_properties(cp_attention_np8 PROPERTIES LABELS "L1;cp" TIMEOUT 90)
