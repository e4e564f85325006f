# pipeline.cmake - pipeline parallel: the layout and schedules alone (L0), and the step under
# pp against gradient accumulation, bitwise, across schedules (L1).
add_executable(test_pipeline tests/test_pipeline.c)
target_link_libraries(test_pipeline PRIVATE hyperpar)
add_test(NAME pipeline_schedules COMMAND test_pipeline)
set_tests_properties(pipeline_schedules PROPERTIES LABELS L0 TIMEOUT 60)

add_test(NAME pipeline_bitwise
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_pp_bitwise.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/pp_bitwise)
set_tests_properties(pipeline_bitwise PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2)
