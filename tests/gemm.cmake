# gemm.cmake - the GEMM backends behind hp_gemm (src/kernels/gemm.h) and the bf16 rounding
# their operands go through: hp_gemm_bf16 / hp_gemm under openblas and onednn against a naive
# double reference within the derived bound, openblas bit for bit cblas_sgemm, onednn from two
# threads at once; every fp32 pattern through hp_bf16_from_float against an FPU-rounding
# reference; and `hp bench` / `hp run` naming the GEMM library, ISA and threads on their first
# line (tests/check_bench.py gemm), --gemm / HP_GEMM chosen, bad values refused with exit 2.
add_executable(test_gemm tests/test_gemm.c)
target_include_directories(test_gemm PRIVATE src)
target_link_libraries(test_gemm PRIVATE hyperpar)
add_test(NAME gemm_backends COMMAND test_gemm)
set_tests_properties(gemm_backends PROPERTIES LABELS L0 TIMEOUT 60)
# oneDNN's bf16 products: skipped (exit 77, one line) where oneDNN has no bf16 matmul (below avx512_core)
add_test(NAME gemm_onednn_bf16 COMMAND test_gemm onednn-bf16)
set_tests_properties(gemm_onednn_bf16 PROPERTIES LABELS L0 TIMEOUT 60 SKIP_RETURN_CODE 77)

add_executable(test_bf16_exhaustive tests/test_bf16_exhaustive.c)
target_link_libraries(test_bf16_exhaustive PRIVATE hyperpar)
add_test(NAME bf16_exhaustive COMMAND test_bf16_exhaustive)
set_tests_properties(bf16_exhaustive PROPERTIES LABELS L0 TIMEOUT 300 PROCESSORS 2)

# float8.h's casts (e4m3fn, e5m2) over all 2^32 fp32 patterns; L1: too slow for the ASan pass
add_executable(test_float8_exhaustive tests/test_float8_exhaustive.c)
target_link_libraries(test_float8_exhaustive PRIVATE hyperpar)
add_test(NAME float8_exhaustive COMMAND test_float8_exhaustive)
set_tests_properties(float8_exhaustive PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2)

find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME gemm_first_line COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_bench.py
           gemm $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/bench_gemm.json)
  set_tests_properties(gemm_first_line PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 2)
endif()

# the batch-invariant product (hp_gemm_set_invariant): any M or N split, any row offset, one row
# alone, 1 and 2 threads, bf16 operands and the oneDNN backend set give the full call's bits
add_executable(test_gemm_invariant tests/test_gemm_invariant.c)
target_include_directories(test_gemm_invariant PRIVATE src)
set_source_files_properties(tests/test_gemm_invariant.c PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")   # (its scalar order)
target_link_libraries(test_gemm_invariant PRIVATE hyperpar)
add_test(NAME gemm_invariant COMMAND test_gemm_invariant)
set_tests_properties(gemm_invariant PROPERTIES LABELS L0 TIMEOUT 120)
