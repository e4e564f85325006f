# metrics.cmake - what hp run prints and writes, and its validation rounds (training-job.md §5-6,
# docs/metrics.md). The bad inputs (validation.steps x batch > windows, log_freq 0, ...) are
# cases of tests/bad_inputs/cases.txt.

# the library's rounds on 2 ranks: bitwise repeatable, training untouched, equal across
# 1 process, dp_shard 2, tp 2, cp 2, pp 2 and MoE ep 2 within the verifier's loss tolerance
add_executable(test_validation ${CMAKE_CURRENT_LIST_DIR}/test_validation.c)
target_link_libraries(test_validation PRIVATE hyperpar)
add_test(NAME validation_rounds COMMAND ${HP_MPIEXEC} -np 2 $<TARGET_FILE:test_validation>)
set_tests_properties(validation_rounds PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 2)

# hp run's line, metrics.jsonl (fields, recounted F, tflops and mfu from tps), loss.svg (XML), the
# log and validation schedules, a round repeated bit for bit by another run at the same
# parameters, training unchanged by rounds, -1 = every full batch
add_test(NAME metrics_files
         COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/check_metrics.py files $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/metrics_files)
set_tests_properties(metrics_files PROPERTIES LABELS L0 TIMEOUT 180)
# the peak mfu divides by is the machine's, not the load's: measured once into HP_CACHE_DIR, the
# same figure for the next run, a line of the file used as written, --metrics.peak_tflops, a
# cache that cannot be written (metrics_peak.c)
add_test(NAME metrics_peak_kept
         COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/check_metrics.py peak $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/metrics_peak)
set_tests_properties(metrics_peak_kept PROPERTIES LABELS L0 TIMEOUT 180)
# the validation loss of hp run under 1 process, dp_shard 2, tp 2 and pp 2, within 1e-5 relative
add_test(NAME metrics_val_layouts
         COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/check_metrics.py layouts $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/metrics_layouts)
set_tests_properties(metrics_val_layouts PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2)
# a resumed run keeps its history: the earlier records before the checkpoint's step kept bit for
# bit in metrics.jsonl, the rest appended after a second job record, loss.svg from step 1
add_test(NAME metrics_resume_keeps_history
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_metrics_resume.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/metrics_resume)
set_tests_properties(metrics_resume_keeps_history PROPERTIES LABELS L0 TIMEOUT 120)
# the job file and the metrics as a program embedding libhyperpar calls them (public headers only):
# hp_job_load, config.toml read back, a 3-step loop writing metrics.jsonl and loss.svg
add_executable(test_job_metrics ${CMAKE_CURRENT_LIST_DIR}/test_job_metrics.c)
target_link_libraries(test_job_metrics PRIVATE hyperpar)
add_test(NAME metrics_library_api COMMAND ${HP_MPIEXEC} -np 1 $<TARGET_FILE:test_job_metrics>
                                          ${CMAKE_CURRENT_BINARY_DIR}/metrics_library_api)
set_tests_properties(metrics_library_api PROPERTIES LABELS L0 TIMEOUT 60)
