# failpoints.cmake - the fault-injection CTests (include/hyperpar/failpoint.h): one test per
# failpoint runs the smallest recipe it affects with HP_FAILPOINT=<name> through
# tests/run_failpoint.sh, which expects `hp run ... --verify --quiet --json F` to exit 1 and the
# verifier's result (failed check | worst gradient | worst parameter) to match the failpoint's
# regex: the verifier is shown to catch every fault (label L1). The same recipes pass without a
# failpoint: they are recipe_* CTests of recipes.cmake, except moe-tp2, which gets its own
# baseline below. `hp matrix --faults-only --report DIR` turns the same runs into the
# "faults caught" table (DIR/faults.md; docs/verification.md shows it).
#
# The list mirrors the registry of src/util/failpoint.c; `failpoints_list_sync` fails when they
# drift apart (and when a failpoint's flags differ from its matrix recipe's).
#   ctest -R failpoint_              every failpoint     ctest -R failpoint_ce_max_local   one
set(HP_FP_LIST ${CMAKE_CURRENT_BINARY_DIR}/failpoints_cmake.txt)
set(HP_FP_OUT ${CMAKE_CURRENT_BINARY_DIR}/failpoints)
file(WRITE ${HP_FP_LIST} "")

# the recipes' flags, as hp_recipe_flags writes them (every degree explicit)
set(FP_M1B   --model tiny --dp-replicate 2 --dp-shard 1 --cp 1 --tp 1)
set(FP_M2TP2 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 2 --no-sp)
set(FP_M3TP2 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 2 --sp)
set(FP_M4S2  --model tiny --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1)
set(FP_M5AG  --model tiny --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --cp-rotate allgather)
set(FP_M5RG  --model tiny --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --cp-rotate ring)
set(FP_M7TP1 --model tiny --dp-replicate 2 --dp-shard 2 --cp 1 --tp 1)
set(FP_AEP   --model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1 --ep 2 --etp 1)
set(FP_S1B   --model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp --ep 4 --etp 1)
set(FP_MOETP2 --model tiny-moe --dp-replicate 1 --dp-shard 1 --cp 1 --tp 2 --no-sp)
set(FP_P1F1B --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --pp 2 --layers 4 --pp-schedule 1f1b --pp-microbatches 4)

# hp_failpoint_test(NAME RECIPE TOUCHES FLAGS...)
function(hp_failpoint_test name recipe touches)
  string(REPLACE ";" " " flags "${ARGN}")
  file(APPEND ${HP_FP_LIST} "${name}\t${recipe}\t${flags}\t${touches}\n")
  add_test(NAME failpoint_${name}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_failpoint.sh $<TARGET_FILE:hp> ${name}
                   "${touches}" ${HP_FP_OUT} -- ${ARGN})
  set_tests_properties(failpoint_${name} PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2)
endfunction()

hp_failpoint_test(tp_partial_grad_dropped M3-tp2     "norm[.]weight"                 ${FP_M3TP2})
hp_failpoint_test(sp_allgather_layout     M3-tp2     "loss of step 1"                ${FP_M3TP2})
hp_failpoint_test(sp_reduce_scatter_mean  M3-tp2     "gradient"                      ${FP_M3TP2})
hp_failpoint_test(ce_max_local            M2-tp2     "loss of step 1"                ${FP_M2TP2})
hp_failpoint_test(ce_target_dropped       M2-tp2     "loss of step 1"                ${FP_M2TP2})
hp_failpoint_test(fsdp_grad_average       M4-s2      "gradient"                      ${FP_M4S2})
hp_failpoint_test(fsdp_shard_offset       M4-s2      "gradient"                      ${FP_M4S2})
hp_failpoint_test(hsdp_allreduce_dropped  M7-tp1     "replicas of a tensor disagree" ${FP_M7TP1})
hp_failpoint_test(ddp_grad_average        M1b        "gradient"                      ${FP_M1B})
hp_failpoint_test(ring_last_hop_dropped   M5-s1-ring "attention[.]w[kv][.]weight"    ${FP_M5RG})
hp_failpoint_test(cp_kv_positions         M5-s1-ag   "loss of step 1"                ${FP_M5AG})
hp_failpoint_test(cp_skip_diagonal        M5-s1-ag   "loss of step 1"                ${FP_M5AG})
hp_failpoint_test(ep_counts_layout        A-EP       "moe[.]experts"                 ${FP_AEP})
hp_failpoint_test(ep_combine_order        A-EP       "moe[.]"                        ${FP_AEP})
hp_failpoint_test(etp_split_dim           moe-tp2    "moe[.]"                        ${FP_MOETP2})
hp_failpoint_test(gate_grad_tp            moe-tp2    "router[.]gate"                 ${FP_MOETP2})
hp_failpoint_test(token_split_offset      S1b        "moe[.]"                        ${FP_S1B})
hp_failpoint_test(expert_divide_factor    A-EP       "moe[.]experts"                 ${FP_AEP})
hp_failpoint_test(grad_norm_double_count  M2-tp2     "global gradient norm"          ${FP_M2TP2})
hp_failpoint_test(n_global_local          M4-s2      "loss of step 1"                ${FP_M4S2})
hp_failpoint_test(pp_microbatch_loss_scale P1-1f1b   "gradient"                      ${FP_P1F1B})
hp_failpoint_test(pp_stage_exchange       P1-1f1b    "gradient"                      ${FP_P1F1B})
set(FP_U1 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --ulysses 2)
set(FP_U3 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --ulysses 8)
hp_failpoint_test(ulysses_a2a_layout      U1         "loss of step 1"                ${FP_U1})
hp_failpoint_test(ulysses_kv_grad_sum     U3         "attention[.]w[kv]"             ${FP_U3})
# a dropped send must not hang: the watchdog ends the job (run_failpoint.sh: TOUCHES "watchdog")
hp_failpoint_test(pp_send_dropped         P1-hang    "watchdog"                      ${FP_P1F1B} --timeout 5)

# moe-tp2 is no matrix recipe: it passes without a failpoint here
add_test(NAME failpoint_baseline_moe-tp2 COMMAND $<TARGET_FILE:hp> run ${FP_MOETP2} --verify --quiet)
set_tests_properties(failpoint_baseline_moe-tp2 PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2)

# the list above == the registry; >= 16 failpoints; matrix recipes run with their own flags
add_test(NAME failpoints_list_sync
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_failpoints_list.sh $<TARGET_FILE:hp> ${HP_FP_LIST})
set_tests_properties(failpoints_list_sync PROPERTIES LABELS L0 TIMEOUT 30)

# an unknown name is refused before any rank starts: exit 2, one line naming it
add_test(NAME failpoint_unknown_name
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 2
                 "HP_FAILPOINT: unknown failpoint 'no_such_fault'" -- $<TARGET_FILE:hp> run --tp 2)
set_tests_properties(failpoint_unknown_name PROPERTIES LABELS L0 TIMEOUT 30
                     ENVIRONMENT "HP_EXPECT_ONE_LINE=1;HP_FAILPOINT=fsdp_grad_average,no_such_fault")

# the faults-caught table as the matrix report writes it (every failpoint once more), and the
# copy in docs/verification.md is that table (failpoints, recipes, failed checks, verdicts)
set(HP_FP_REPORT ${CMAKE_CURRENT_BINARY_DIR}/failpoints_report)
add_test(NAME failpoints_table
         COMMAND sh -c "rm -rf \"$1\" && \"$0\" matrix --faults-only --report \"$1\" && grep -q '\"faults\"' \"$1/report.json\" && sh \"$2\" \"$1/faults.md\" \"$3\""
                 $<TARGET_FILE:hp> ${HP_FP_REPORT} ${CMAKE_CURRENT_LIST_DIR}/check_faults_doc.sh
                 ${CMAKE_SOURCE_DIR}/docs/verification.md)
set_tests_properties(failpoints_table PROPERTIES LABELS L2 TIMEOUT 600 PROCESSORS 2)
