# moe.cmake - the MoE block and its expert-parallel dispatch (src/model/moe.c,
# src/parallel/ep_dispatch.c) against a single-process reference.
add_executable(test_moe tests/test_moe.c)
target_link_libraries(test_moe PRIVATE hyperpar)
target_include_directories(test_moe PRIVATE ${CMAKE_SOURCE_DIR}/src)   # precision/precision.h: the bf16 policy

# L0: one process (MPI_Init still runs; no launcher needed)
add_test(NAME moe_single COMMAND test_moe single)
# L2: expert parallel over the world, tp x ep layouts
add_test(NAME moe_ep_np2 COMMAND ${HP_MPIEXEC} -np 2 $<TARGET_FILE:test_moe> ep)
add_test(NAME moe_ep_np4 COMMAND ${HP_MPIEXEC} -np 4 $<TARGET_FILE:test_moe> ep)
add_test(NAME moe_tp_np4 COMMAND ${HP_MPIEXEC} -np 4 $<TARGET_FILE:test_moe> tp)
set_tests_properties(moe_single PROPERTIES LABELS "L0" TIMEOUT 60)
set_tests_properties(moe_ep_np2 moe_ep_np4 moe_tp_np4 PROPERTIES LABELS "L2" TIMEOUT 120)
# a layout mismatch (local experts vs ep rank) stops the job with one line, never hangs
add_test(NAME moe_bad_ep_np2 COMMAND sh ${CMAKE_SOURCE_DIR}/tests/expect_exit.sh 1
         "moe dispatch: local experts start at 0 but ep rank 1 owns \\[4, 8\\)"
         -- ${HP_MPIEXEC} -np 2 $<TARGET_FILE:test_moe> bad-ep)
set_tests_properties(moe_bad_ep_np2 PROPERTIES LABELS "L2" TIMEOUT 60)
