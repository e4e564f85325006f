# ac.cmake - activation checkpointing (--ac none|full|every:N, config.h hp_run_ac_block):
# the recompute changes no bit (gradients byte for byte, losses) under the tiny, M6 (ring and
# all-gather), C2 (MoE, EP), Ulysses, pp 1f1b and SP layouts, and the activation bytes each run
# measured are hp plan's (L1); a recompute whose routing differs from its forward's stops the
# job with one line (L0); the verifier's catch of a stale recompute is the generated CTest
# failpoint_ac_recompute_stale, and the AC recipes' CTests (recipe_M6-ac-*, recipe_C2-ac-full)
# check the traffic of the recomputed forwards; the every-rank memory check is
# plan_vs_run_activations (tests/plan.cmake).
add_test(NAME ac_bitwise_dense
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_ac_bitwise.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/ac_bitwise_dense tiny ulysses pp sp)
set_tests_properties(ac_bitwise_dense PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2)
add_test(NAME ac_bitwise_8ranks
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_ac_bitwise.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/ac_bitwise_8ranks m6-ring m6-ag c2)
set_tests_properties(ac_bitwise_8ranks PROPERTIES LABELS L1 TIMEOUT 600 PROCESSORS 2)

# the recompute must route every token as its forward did: a recompute from the wrong input
# (HP_FAILPOINT=ac_recompute_stale) on a MoE model stops the job (exit 1) naming the block
add_test(NAME ac_routing_mismatch_stops
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 1
                 "hp: activation checkpointing: the recompute of block [0-9]+ routed row"
                 -- $<TARGET_FILE:hp> run --model tiny-moe --ac full --steps 1 --quiet)
set_tests_properties(ac_routing_mismatch_stops PROPERTIES LABELS L0 TIMEOUT 60
                     ENVIRONMENT "HP_FAILPOINT=ac_recompute_stale")
