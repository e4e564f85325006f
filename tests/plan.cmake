# plan.cmake - `hp plan` for real models (issue 15): the published parameter counts of the named
# models and of Hugging Face config.json files, the --memory report and its JSON keys, a 16384-rank
# plan, and --search returning a legal layout that fits (checked by planning it again). No MPI.
# Times are printed by the scripts, never asserted (the machine is shared).
add_executable(test_plan ${CMAKE_CURRENT_LIST_DIR}/test_plan.c)
target_link_libraries(test_plan PRIVATE hyperpar)
add_test(NAME plan_library COMMAND test_plan)
set_tests_properties(plan_library PROPERTIES LABELS L0 TIMEOUT 60)

# hp_cli_test comes from dims.cmake (included before this file: tests/*.cmake in name order)
set(HP_PLAN_CONFIGS ${CMAKE_CURRENT_LIST_DIR}/plan_configs)
hp_cli_test(plan_params_llama3_8b 0 - "F:params_total 8,030,261,248" -- plan --model llama3-8b --memory)
hp_cli_test(plan_params_llama3_70b 0 - "F:params_total 70,553,706,496" -- plan --model llama3-70b --memory)
hp_cli_test(plan_params_llama3_405b 0 - "F:params_total 405,853,388,800" -- plan --model llama3-405b --memory)
hp_cli_test(plan_params_mixtral 0 - "F:params_total 46,702,792,704" -- plan --model mixtral-8x7b --memory)
hp_cli_test(plan_hf_config_70b 0 - "F:params_total 70,553,706,496" "F:model llama3.1-70b (dense)"
  -- plan --model-config ${HP_PLAN_CONFIGS}/llama3.1-70b.json --memory)
hp_cli_test(plan_hf_config_405b 0 - "F:params_total 405,853,388,800"
  -- plan --model-config ${HP_PLAN_CONFIGS}/llama3.1-405b.json --memory)
# 16384 ranks: the groups by stride, no rank table beyond 8 rows, the memory and time model
hp_cli_test(plan_world_16k 0 - "F:groups (16384 ranks" "F:tp              2048 x 8"
  "F:... (16384 ranks in all; --ranks prints every one" "F:params_total 405,853,388,800"
  "step [0-9.e+]+ s without overlap \\(MFU [0-9.]+%\\)" "^  assume: "
  -- plan --model llama3-405b --tp 8 --nproc 16384 --seq-len 8192 --batch 2048 --memory --hw h100)
# a run of a planning-size model is refused before any rank starts, with one line
hp_cli_test(plan_run_405b_refused 2 "largest buffer \\(a gathered FSDP unit\\) would hold" -- run --model llama3-405b)

add_test(NAME plan_json COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_plan_json.sh $<TARGET_FILE:hp>)
add_test(NAME plan_search_16k COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_plan_search.sh $<TARGET_FILE:hp>
         16384 llama3-405b 80GiB 8192 2048 h100)
add_test(NAME plan_search_moe COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_plan_search.sh $<TARGET_FILE:hp>
         512 mixtral-8x7b 80GiB 4096 512 h100)
# without --hw: the ranking counts the pipeline's bubble (bytes / (1 - bubble), stated in the
# header); bytes alone put pp 32 GPipe with 4 microbatches (89% bubble) first for this search
add_test(NAME plan_search_no_hw COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_plan_search.sh $<TARGET_FILE:hp>
         16384 llama3-70b 80GiB 8192 2048)
set_tests_properties(plan_search_no_hw PROPERTIES ENVIRONMENT MAX_FIRST_BUBBLE=50)
set_tests_properties(plan_json plan_search_16k plan_search_moe plan_search_no_hw PROPERTIES LABELS L0 TIMEOUT 120)
# under ASan the 16k search allocates for minutes (95 s alone on 2 cores at 1028790 and today,
# 3.5 s without ASan): room, so a neighbour test cannot time it out (.ci/run's ASan stage leaves it
# out: plan_search_moe runs the same search under ASan)
if(HP_SANITIZE)
  set_tests_properties(plan_search_16k PROPERTIES TIMEOUT 400)
endif()
# 70B on 64 ranks cannot fit 16 GiB a rank (16 bytes a parameter / 64 = 16.4 GiB persistent):
# the answer says so in one line, with the closest layout
hp_cli_test(plan_search_none_fit 1
  "none of the [0-9]+ legal layouts of world 64 fits 16 GiB per rank; the smallest peak is [0-9.]+ GiB \\(pp"
  -- plan --search --world 64 --model llama3-70b --mem-per-rank 16GiB --seq-len 8192 --batch 64)
# --reshard-after-forward always rules pp out of the search, and the search says so
hp_cli_test(plan_search_reshard_always 0 - "F:--reshard-after-forward always: pp layouts are not legal"
  -- plan --search --world 16 --model llama3-8b --mem-per-rank 80GiB --seq-len 4096 --batch 16
     --reshard-after-forward always)
# every rank and every group of a 16384-rank world (--ranks): a few MB of text
hp_cli_test(plan_world_16k_ranks 0 - "^  16383 " "F:,16383}" -- plan --nproc 16384 --batch 16384 --ranks)
set_tests_properties(plan_world_16k_ranks PROPERTIES LABELS L1)
# measured against predicted: hp bench --memory's allocated persistent and working bytes per rank
# at dp_shard 1, 2, 4 (under mpirun) equal hp plan's, rank by rank
add_test(NAME plan_vs_bench_memory COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_plan_vs_bench.sh $<TARGET_FILE:hp> small)
set_tests_properties(plan_vs_bench_memory PROPERTIES LABELS L1 TIMEOUT 300)
# measured against predicted, activations: every rank of each layout (tiny, SP, Ulysses, M6,
# C2 with EP, pp 1f1b alone and with tp x dp_shard) under --ac none, full and every:2 allocates
# exactly hp_plan_activations_predict's bytes (the tracking allocator's activations category,
# and hp_trainer_activation_bytes where it counts everything), and full AC takes less
add_executable(test_ac_memory tests/test_ac_memory.c)
target_link_libraries(test_ac_memory PRIVATE hyperpar)
add_test(NAME plan_vs_run_activations COMMAND ${HP_MPIEXEC} -np 8 $<TARGET_FILE:test_ac_memory>)
set_tests_properties(plan_vs_run_activations PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2
                     ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
