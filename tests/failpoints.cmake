# failpoints.cmake - the fault-injection CTests (include/hyperpar/failpoint.h): one test per
# failpoint, failpoint_<NAME>, runs the smallest recipe it affects with HP_FAILPOINT=<name>
# through tests/run_failpoint.sh, which expects `hp run ... --verify --quiet --json F` to exit 1
# and the verifier's result (failed check | worst gradient | worst parameter) to match the
# failpoint's regex: the verifier is shown to catch every fault (label L1). Those tests are
# generated from the registry (src/util/failpoint.c) with the recipe CTests (tests/recipes.cmake:
# `hp matrix --ctest`), so there is no list here to drift; tests/test_recipes.c checks that a
# failpoint of a matrix recipe runs that recipe's flags. The same recipes pass without a
# failpoint: they are recipe_* CTests, and a failpoint's recipe that is no matrix recipe (moe-tp2)
# gets a generated failpoint_baseline_<recipe>.
# `hp matrix --faults-only --report DIR` turns the same runs into the "faults caught" table
# (DIR/faults.md; docs/verification.md shows it).
#   ctest -R failpoint_              every failpoint     ctest -R failpoint_ce_max_local   one
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

# kept_unit_stale under clipping to 0.05: the stale unit no longer shows in the loss trajectory,
# and the structure check of the parameter all-gather (fp32: the gathered copy must be the
# current master) is what catches it
add_test(NAME failpoint_kept_unit_stale_clipped
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_failpoint.sh $<TARGET_FILE:hp> kept_unit_stale
                 "structure: parameter all-gather" ${CMAKE_CURRENT_BINARY_DIR}/failpoints_clipped --
                 --model tiny --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1 --pp 2 --layers 4
                 --pp-schedule 1f1b --pp-microbatches 4 --max-norm 0.05)
set_tests_properties(failpoint_kept_unit_stale_clipped PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2)
