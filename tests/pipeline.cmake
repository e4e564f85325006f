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

# hp plan reproduces the 16-rank worked example of torchtitan-semantics.md §2.3
# (P,R,S,C,T) = (2,2,2,1,2), EP 4: the group table, row by row, and the stages
set(HP_PLAN_2_3 plan --model tiny-moe --pp 2 --dp-replicate 2 --dp-shard 2 --tp 2 --ep 4)
add_test(NAME plan_semantics_2_3
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/expect_exit.sh 0 -
           "pp +8 x 2 +[{]0,8[}] [{]1,9[}] [{]2,10[}] [{]3,11[}] [{]4,12[}] [{]5,13[}] [{]6,14[}] [{]7,15[}]"
           "tp +8 x 2 +[{]0,1[}] [{]2,3[}] [{]4,5[}] [{]6,7[}] [{]8,9[}] [{]10,11[}] [{]12,13[}] [{]14,15[}]"
           "fsdp +8 x 2 +[{]0,2[}] [{]1,3[}] [{]4,6[}] [{]5,7[}] [{]8,10[}] [{]9,11[}] [{]12,14[}] [{]13,15[}]"
           "dp_replicate +8 x 2 +[{]0,4[}] [{]1,5[}] [{]2,6[}] [{]3,7[}] [{]8,12[}] [{]9,13[}] [{]10,14[}] [{]11,15[}]"
           "batch +4 x 4 +[{]0,2,4,6[}] [{]1,3,5,7[}] [{]8,10,12,14[}] [{]9,11,13,15[}]"
           "loss +4 x 4 +[{]0,2,4,6[}] [{]1,3,5,7[}] [{]8,10,12,14[}] [{]9,11,13,15[}]"
           "ep +4 x 4 +[{]0,1,2,3[}] [{]4,5,6,7[}] [{]8,9,10,11[}] [{]12,13,14,15[}]"
           "efsdp +16 x 1"
           "stage  0  pp rank  0  blocks 0..0  [+] tok_embeddings"
           "stage  1  pp rank  1  blocks 1..1  [+] norm, output"
           -- $<TARGET_FILE:hp> ${HP_PLAN_2_3})
set_tests_properties(plan_semantics_2_3 PROPERTIES LABELS L0 TIMEOUT 30)

# the report draws each pipeline recipe's measured timeline (pp rank x time, F/B/I/W boxes)
set(HP_PP_REPORT ${CMAKE_CURRENT_BINARY_DIR}/pp_report)
add_test(NAME pipeline_report_timeline
         COMMAND sh -c "rm -rf \"$1\" && \"$0\" matrix --only P4 --repeat 1 --no-faults --report \"$1\" && grep -q 'pipeline recipes: the measured last step' \"$1/report.svg\" && grep -c '<title>[FBIW] ' \"$1/report.svg\" | grep -qv '^0$'"
                 $<TARGET_FILE:hp> ${HP_PP_REPORT})
set_tests_properties(pipeline_report_timeline PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2)
