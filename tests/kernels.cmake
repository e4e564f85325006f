# kernels.cmake - unit tests of the fp32 layer kernels (no MPI calls): naive double
# references, finite-difference gradients, blockwise attention merges, vocab-sliced CE.
add_executable(test_kernels tests/test_kernels.c)
target_link_libraries(test_kernels PRIVATE hyperpar)
add_test(NAME kernels COMMAND test_kernels)
set_tests_properties(kernels PROPERTIES LABELS L0 TIMEOUT 60)

add_executable(test_kernels_attention tests/test_kernels_attention.c)
target_link_libraries(test_kernels_attention PRIVATE hyperpar)
target_include_directories(test_kernels_attention PRIVATE ${CMAKE_SOURCE_DIR}/src)   # kernels/gemm.h: the backends
add_test(NAME kernels_attention COMMAND test_kernels_attention)
set_tests_properties(kernels_attention PROPERTIES LABELS L0 TIMEOUT 60)
# the bf16 forms under oneDNN's bf16 matmul: skipped (exit 77, one line) below avx512_core
add_test(NAME kernels_attention_onednn_bf16 COMMAND test_kernels_attention onednn-bf16)
set_tests_properties(kernels_attention_onednn_bf16 PROPERTIES LABELS L0 TIMEOUT 60 SKIP_RETURN_CODE 77)
