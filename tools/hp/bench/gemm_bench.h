// gemm_bench.h - `hp bench`'s GEMM microbenchmark: one product (the model's y = x w^T at
// M 2048 x N 1024 x K 1024) through each backend and precision of src/kernels/gemm.h, next to
// the bf16 peak (fma_peak.c's VDPBF16PS loop; where oneDNN dispatches to AMX, its bf16 matmul).
// defines: tool_gemm_rates, tool_gemm_measure
#ifndef HP_TOOL_GEMM_BENCH_H
#define HP_TOOL_GEMM_BENCH_H

typedef struct {
    int M, N, K, threads;
    double openblas_sgemm, onednn_f32, onednn_bf16;   // GFLOP/s, best of 3 after a warm-up;
                                                      // bf16: hp_gemm_bf16, packing included
    double onednn_bf16_packed;                        // the bf16 matmul alone (2-byte operands)
    int onednn_has_f32, onednn_has_bf16;              // oneDNN has the matmul here (else its
                                                      // rates stay 0 and its impl is "none")
    char onednn_f32_impl[64], onednn_bf16_impl[64];   // oneDNN's implementation: "brg:avx512_core"
    double bf16_peak;                                 // GFLOP/s; 0 on a CPU without bf16 dot products
    char bf16_peak_isa[48];                           // "avx512_bf16", "amx (oneDNN bf16 matmul)", ""
} tool_gemm_rates;

// Measures every rate at `threads` threads (the BLAS count: oneDNN follows it). ~0.5 s on one
// Zen 5 core. The backend set before the call is set again after it.
void tool_gemm_measure(int threads, tool_gemm_rates *r);

#endif
