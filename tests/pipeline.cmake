# pipeline.cmake - pipeline parallel: the layout and schedules alone (L0), and the step under
# pp against gradient accumulation, bitwise, across schedules (L1).
add_executable(test_pipeline tests/test_pipeline.c)
target_link_libraries(test_pipeline PRIVATE hyperpar)
add_test(NAME pipeline_schedules COMMAND test_pipeline)
set_tests_properties(pipeline_schedules PROPERTIES LABELS L0 TIMEOUT 60)
