# async_tp.cmake - async TP (docs/async_tp.md): bitwise the plain TP path on every TP recipe row
# that has an -async variant (M3, B2, M6, M7-tp2, S2, C4, C5, each in fp32 or bf16 or both;
# float8 tensorwise), and the refusals. (Each row's other precision runs the same regions: the
# bf16 one adds the 2-byte gather, which B2-bf16, M3-tp4-bf16 ... cover; the matrix verifies
# every -async recipe against one process.)
add_test(NAME async_tp_equals_tp
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_async_tp_equal.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/async_tp_equals_tp
                 M3-tp2 M3-tp4-bf16 B2 B2-bf16 M6-ag M7-tp2-bf16 S2 S2-bf16 C4-bf16 C5)
set_tests_properties(async_tp_equals_tp PROPERTIES LABELS L1 TIMEOUT 600 PROCESSORS 2)

# float8 tensorwise: the 1-byte SP all-gathers overlapped, every row block cast with the tensor's
# scale, bitwise the plain float8 path (docs/float8.md)
add_test(NAME async_tp_equals_tp_float8
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_async_tp_equal.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/async_tp_equals_tp_float8
                 M3-tp2-ac-f8t B2-f8ag M7-tp2-f8t S2-f8t P6-f8t U5-f8t)
set_tests_properties(async_tp_equals_tp_float8 PROPERTIES LABELS L1 TIMEOUT 600 PROCESSORS 2)

# the same comparison catches a chunk consumed at the wrong row offset (failpoint
# async_tp_chunk_offset): the async dump differs from the plain one, and the script exits 1
add_test(NAME async_tp_equals_tp_catches_chunk_offset
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 1 - "FAIL: M3-tp2: .* differs under --async-tp"
                 -- sh ${CMAKE_SOURCE_DIR}/tests/run_async_tp_equal.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/async_tp_equals_tp_fault M3-tp2)
set_tests_properties(async_tp_equals_tp_catches_chunk_offset PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2
                     ENVIRONMENT "HP_FAILPOINT=async_tp_chunk_offset")

# the oneDNN backend picks its blocking from the shape: equal too, because both paths issue the
# same row-block GEMM calls (docs/async_tp.md)
add_test(NAME async_tp_equals_tp_onednn
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_async_tp_equal.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/async_tp_equals_tp_onednn B2 M3-tp4)
set_tests_properties(async_tp_equals_tp_onednn PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2
                     ENVIRONMENT "EXTRA=--gemm onednn")
# ... and under oneDNN's bf16 matmul, skipped (77, one line) where oneDNN has none (below avx512_core)
add_test(NAME async_tp_equals_tp_onednn_bf16
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/need.sh $<TARGET_FILE:hp> onednn-bf16 --
                 sh ${CMAKE_SOURCE_DIR}/tests/run_async_tp_equal.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/async_tp_equals_tp_onednn_bf16 B2-bf16)
set_tests_properties(async_tp_equals_tp_onednn_bf16 PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2
                     ENVIRONMENT "EXTRA=--gemm onednn" SKIP_RETURN_CODE 77)

# torchtitan#3869: --async-tp accepted but never applied (failpoint async_tp_not_applied) fails
# `hp run` with one line naming the step (the verifier's case is failpoint_async_tp_not_applied)
add_test(NAME async_tp_unapplied_fails_run
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 1
                 "--async-tp: step 1 ran 0 fused ops overlapped on some rank .*async TP was not applied"
                 -- $<TARGET_FILE:hp> run --model tiny --tp 2 --async-tp --steps 2)
set_tests_properties(async_tp_unapplied_fails_run PROPERTIES LABELS L1 TIMEOUT 60 PROCESSORS 2
                     ENVIRONMENT "HP_FAILPOINT=async_tp_not_applied")
