# plan_vs_run.cmake - issue 15: the planner's prediction equals what a run measures. Each recipe
# runs `hp plan --json` and `hp run --json` (tests/run_plan_vs_run.sh): params_total, the
# persistent bytes, every memory category and every (group, op) of a step equal, the peak
# within 10%. `hp matrix` applies the library's check (hp_plan_check_run) to every recipe;
# test_plan_check shows that check failing on a planted difference.
add_executable(test_plan_check ${CMAKE_CURRENT_LIST_DIR}/test_plan_check.c)
target_link_libraries(test_plan_check PRIVATE hyperpar)
add_test(NAME plan_check_library COMMAND test_plan_check)
add_test(NAME plan_vs_run_quick COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_plan_vs_run.sh $<TARGET_FILE:hp>
         M4-s2 A-EP P1-1f1b)
add_test(NAME plan_vs_run_layouts COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_plan_vs_run.sh $<TARGET_FILE:hp>
         B2 M5-s2-ring U4-ag GA C2-ep4-ag M6-ac-full P5)
set_tests_properties(plan_check_library plan_vs_run_quick PROPERTIES LABELS L0 TIMEOUT 120)
set_tests_properties(plan_vs_run_layouts PROPERTIES LABELS L1 TIMEOUT 300)
# bf16 activation storage (precision.md, "Storage"): the planner equals the run on every category
# where the blocks keep 2-byte stores (zbv's kept dy, MoE, AC with stored blocks beside, Ulysses'
# state, accumulation), and the stores make a bf16 run's activations smaller than fp32's
add_test(NAME plan_vs_run_bf16 COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_plan_vs_run.sh $<TARGET_FILE:hp>
         P4-bf16 S1b-bf16 M6-ac-full-bf16 U6-bf16 GA-bf16)
add_test(NAME bf16_storage_activations COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_bf16_storage.sh $<TARGET_FILE:hp>)
set_tests_properties(plan_vs_run_bf16 PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2)
set_tests_properties(bf16_storage_activations PROPERTIES LABELS L0 TIMEOUT 120)
