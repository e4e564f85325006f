// fma_peak.h - this machine's fp32 peak: how many FLOP/s its FMA units retire when nothing
// else limits them (no memory traffic, no dependency stalls). The physical limit that
// `hp bench` puts beside sgemm and the training step, and the peak mfu divides by when none is
// given (metrics_peak.c).
// defines: hp_fma_peak, hp_fma_isa, hp_fma_bf16_peak
//
//   char isa[16];
//   double widest = hp_fma_peak(2, NULL, isa, sizeof isa);     // e.g. 344.1, "avx512"
//   double kernels = hp_fma_peak(2, hp_blas_core_isa("Haswell"), isa, sizeof isa);   // "avx2"
//
// Each thread runs a register-only loop of independent fused multiply-adds (enough
// accumulators to cover the FMA latency on every port) with the vectors asked for, capped at
// what cpuid allows: AVX-512, AVX2 + FMA, AVX or SSE (multiply + add), or a scalar loop of multiply +
// add. 1 FMA = 2 FLOPs. A BLAS core that runs AVX2 kernels on an AVX-512 CPU (OpenBLAS's
// Haswell, preset by some environments) reaches at most the AVX2 peak: that is the one a step
// is measured against.
#ifndef HP_METRICS_FMA_PEAK_H
#define HP_METRICS_FMA_PEAK_H
#include <stddef.h>

// GFLOP/s of `threads` threads running the loop of `want` ("avx512", "avx2", "avx", "sse";
// NULL = the widest this CPU has) at once (best of 10 timings, ~0.3 s in all); writes the
// instruction set used ("avx512", "avx2", "avx", "sse", "scalar") into isa.
double hp_fma_peak(int threads, const char *want, char *isa, size_t isa_len);
// The instruction set hp_fma_peak(.., want, ..) would use (no timing).
const char *hp_fma_isa(const char *want);
// The bf16 twin: GFLOP/s of `threads` threads running VDPBF16PS (AVX512_BF16: two bf16 products
// added to each fp32 lane, 4 FLOPs a lane) when cpuid has AVX512_BF16, isa "avx512_bf16";
// 0 and isa "" on a CPU without it (AMX is measured by oneDNN's matmul instead: gemm_bench.c).
double hp_fma_bf16_peak(int threads, char *isa, size_t isa_len);

#endif
