# ulysses.cmake - the Ulysses attention core alone against full causal attention (U = 2, 4, 8,
# and U x C = 2 x 2 with both rotate methods; H = 8, Hkv = 2 and 4).
add_executable(test_ulysses tests/test_ulysses.c)
target_link_libraries(test_ulysses PRIVATE hyperpar)
foreach(np 2 4 8)
  add_test(NAME ulysses_attention_u${np} COMMAND ${HP_MPIEXEC} -np ${np} $<TARGET_FILE:test_ulysses>)
  set_tests_properties(ulysses_attention_u${np} PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2)
endforeach()
add_test(NAME ulysses_attention_2x2 COMMAND ${HP_MPIEXEC} -np 4 $<TARGET_FILE:test_ulysses> 2x2)
set_tests_properties(ulysses_attention_2x2 PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2)

# hp plan --ulysses 8 on tiny: the kv replication factor and the ulysses, fsdp and loss groups
add_test(NAME plan_ulysses8
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/expect_exit.sh 0 -
           "kv replication factor 2 -> 1 per ulysses rank"
           "ulysses +1 x 8 +[{]0,1,2,3,4,5,6,7[}]"
           "fsdp +1 x 8 +[{]0,1,2,3,4,5,6,7[}]"
           "loss +1 x 8 +[{]0,1,2,3,4,5,6,7[}]"
           "cp +8 x 1"
           -- $<TARGET_FILE:hp> plan --ulysses 8)
set_tests_properties(plan_ulysses8 PROPERTIES LABELS L0 TIMEOUT 30)
