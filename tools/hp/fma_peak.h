// fma_peak.h - this machine's fp32 peak: how many FLOP/s its FMA units retire when nothing
// else limits them (no memory traffic, no dependency stalls). The physical limit that
// `hp bench` puts beside sgemm and the training step.
// defines: tool_fma_peak
//
//   char isa[16];
//   double gflops = tool_fma_peak(2, isa, sizeof isa);   // e.g. 344.1, "avx512"
//
// Each thread runs a register-only loop of independent fused multiply-adds (enough
// accumulators to cover the FMA latency on every port) with the widest vectors cpuid allows:
// AVX-512, AVX2 + FMA, or a scalar loop of multiply + add. 1 FMA = 2 FLOPs.
#ifndef HP_TOOL_FMA_PEAK_H
#define HP_TOOL_FMA_PEAK_H
#include <stddef.h>

// GFLOP/s of `threads` threads running the loop at once (best of 10 timings, ~0.3 s in
// all); writes the instruction set used ("avx512", "avx2", "scalar") into isa.
double tool_fma_peak(int threads, char *isa, size_t isa_len);

#endif
