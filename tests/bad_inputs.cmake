# bad_inputs.cmake - every bad invocation of tests/bad_inputs/cases.txt exits with its code and
# one clear line in under 2 s (issue: input that never crashes hp).
add_test(NAME bad_inputs
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/bad_inputs/run.sh $<TARGET_FILE:hp>
                 ${CMAKE_SOURCE_DIR}/tests/bad_inputs/cases.txt)
set_tests_properties(bad_inputs PROPERTIES LABELS L0 TIMEOUT 300)
if(HP_SANITIZE)   # ASan + UBSan run everything several times slower: the 2 s rule is the normal build's
  set_tests_properties(bad_inputs PROPERTIES ENVIRONMENT "HP_BAD_INPUT_MS=10000")
endif()
