# jobfile.cmake - the TorchTitan job file (training-job.md §1-2, docs/job_file.md): the TOML
# reader's unit test (L0), and hp run on job files end to end.
add_executable(test_toml tests/test_toml.c)
target_link_libraries(test_toml PRIVATE hyperpar)
target_include_directories(test_toml PRIVATE src)
add_test(NAME test_toml COMMAND test_toml)
set_tests_properties(test_toml PROPERTIES LABELS L0 TIMEOUT 60)

# examples/debug_model.toml end to end on 2 ranks, its config.toml rerun bit for bit
add_test(NAME jobfile_debug_model COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/run_jobfile.sh $<TARGET_FILE:hp>
                                          ${CMAKE_CURRENT_SOURCE_DIR}/examples)
set_tests_properties(jobfile_debug_model PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 2)
