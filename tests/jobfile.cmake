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

# the job keys on hp plan's command line: precedence over the file, booleans, TorchTitan's batch
# and model keys (stdout patterns; tests/expect_exit.sh)
set(HP_JOB_EXAMPLES ${CMAKE_CURRENT_SOURCE_DIR}/examples)
hp_cli_test(cli_jobfile_precedence 0 -
  "model tiny \\(dense\\), world 2, seq_len 64, global batch 8"
  -- plan --config ${HP_JOB_EXAMPLES}/debug_model.toml --training.seq-len 64)
hp_cli_test(cli_jobfile_bool_false 0 - "sp off" -- plan --tp 2 --parallelism.sequence_parallel=false)
hp_cli_test(cli_jobfile_bool_no 0 - "sp off" -- plan --parallelism.no-sequence-parallel --tp 2)
hp_cli_test(cli_jobfile_local_batch 0 - "global batch 6"
  -- plan --training.local_batch_size 3 --dp-shard 2)
hp_cli_test(cli_jobfile_llama3 0 - "model llama3-8b \\(dense\\)"
  -- plan --model.name llama3 --model.flavor 8B --tp 8 --nproc 8)

# TorchTitan's own debug_model.toml (examples/torchtitan_debug_model.toml, v0.2.2) as it ships: exit 2
# on its named dataset, trains with --training.dataset_path; 2025's older key names read as today's
add_test(NAME jobfile_torchtitan_debug_model
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/run_jobfile_torchtitan.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_SOURCE_DIR}/examples)
set_tests_properties(jobfile_torchtitan_debug_model PROPERTIES LABELS L0 TIMEOUT 120)
# every key of the installed TorchTitan's JobConfig (the torch 2 venv, torchtitan 0.2.2): known to
# hp, at its default read, at another value accepted or refused by name; skipped (77) without it
add_test(NAME jobfile_torchtitan_keys
         COMMAND sh -c "py=$(sh ${CMAKE_CURRENT_SOURCE_DIR}/scripts/setup_torchtitan.sh) || exit $?; \"$py\" ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_torchtitan_keys.py $<TARGET_FILE:hp>")
set_tests_properties(jobfile_torchtitan_keys PROPERTIES LABELS "L1;torch2" TIMEOUT 300 SKIP_RETURN_CODE 77
                     RESOURCE_LOCK torch2_venv)
