# examples.cmake - builds every example program (example_<folder>) on the public API and runs
# each folder's run.sh as a CTest, labelled with the level of the recipes it covers (docs/recipes.md):
# 01 L0, 02 L1, 03 L1, 04 L1, 05 L2, 06 L2, 07 L1, 08 L1, negative_tests L0. run.sh finds the binaries
# through BUILD_DIR, which the test passes in.
# Each program is one main.c on the public headers alone, linked like a user's program.
set(HP_EXAMPLES_DIR ${CMAKE_CURRENT_LIST_DIR})

set(HP_EXAMPLE_LEVELS
  01_mlp_tensor_parallel L0
  02_mlp_seq_parallel L1
  03_mini_transformer_fsdp_tp L1
  04_transformer_fsdp_cp L1
  05_moe_ep_fsdp L2
  06_moe_ep_tp_etp L2
  07_ulysses_cp L1
  08_pipeline L1)
list(LENGTH HP_EXAMPLE_LEVELS n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET HP_EXAMPLE_LEVELS ${i} ex)
  list(GET HP_EXAMPLE_LEVELS ${j} level)
  add_executable(example_${ex} ${HP_EXAMPLES_DIR}/${ex}/main.c)
  target_link_libraries(example_${ex} PRIVATE hyperpar)
  add_test(NAME example_${ex} COMMAND sh ${HP_EXAMPLES_DIR}/${ex}/run.sh)
  set_tests_properties(example_${ex} PROPERTIES LABELS ${level} TIMEOUT 120 PROCESSORS 2
                       ENVIRONMENT "BUILD_DIR=$<TARGET_FILE_DIR:example_${ex}>;MPIRUN=${MPIEXEC_EXECUTABLE}"
                       FAIL_REGULAR_EXPRESSION "FAIL")
endforeach()

# every negative case refused, nothing left running: alone, so its process count is its own
add_test(NAME example_negative_tests COMMAND sh ${HP_EXAMPLES_DIR}/negative_tests/run.sh)
set_tests_properties(example_negative_tests PROPERTIES LABELS L0 TIMEOUT 180 RUN_SERIAL ON
                     ENVIRONMENT "BUILD_DIR=$<TARGET_FILE_DIR:hp>;MPIRUN=${MPIEXEC_EXECUTABLE}")
