# float8.cmake - the float8 linears (docs/float8.md, precision.md §5): the kernel's three recipes
# against a reference written in the test, and the module filter end to end (a filter naming
# every block linear gives the plain bf16 run bit for bit, with or without the fp8 all-gather; one
# naming some linears gives a third result; the fp8 all-gather of every linear a fourth). The layouts are recipes (M3-tp2-f8t, ...: tests/recipes.cmake), the faults failpoints.
add_executable(test_float8_linear tests/test_float8_linear.c)
target_link_libraries(test_float8_linear PRIVATE hyperpar m)
add_test(NAME float8_linear COMMAND test_float8_linear)
set_tests_properties(float8_linear PROPERTIES LABELS L0 TIMEOUT 60)

add_test(NAME float8_filter COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/run_float8_filter.sh
                                    $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/float8_filter)
set_tests_properties(float8_filter PROPERTIES LABELS L0 TIMEOUT 120)
