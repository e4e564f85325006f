// cpu.h - what this CPU can run, as hp's kernels ask it, and the cap HP_CPU_ISA puts on it.
// defines: hp_cpu_feature, hp_cpu_has, hp_cpu_isa_cap, hp_cpu_isa_cap_name, hp_cpu_isa_check,
//          hp_cpu_isa_widest, hp_cpu_isa_name
//
// Every vector path of hp (the attention's and exp's AVX-512 and AVX2 loops, AdamW's AVX, the
// BLAS core hp asks OpenBLAS for, the FMA peak, oneDNN's widest ISA) asks hp_cpu_has, never
// cpuid itself. HP_CPU_ISA caps the answers, so one machine can run what a narrower CPU would:
//
//   HP_CPU_ISA=avx2 hp run --tp 2 --steps 3 --verify
//     // hp_cpu_has(HP_CPU_AVX512F) == 0 on an AVX-512 machine; the AVX2 loops run; OpenBLAS
//     // gets a core of AVX2 kernels and oneDNN avx2 at most (unless OPENBLAS_CORETYPE or
//     // ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA say otherwise); hp --version names the cap
//
// The levels, each containing the ones before it: sse4_1, avx, avx2 (AVX2 + FMA), avx512
// (AVX-512 F, DQ, BW, VL: the Skylake-SP set), avx512_bf16 (+ AVX512_BF16), amx (no cap).
// A cap above what the CPU has changes nothing: the cap only ever removes features.
#ifndef HYPERPAR_CPU_H
#define HYPERPAR_CPU_H
#include <stddef.h>

typedef enum {
    HP_CPU_SSE41, HP_CPU_AVX, HP_CPU_AVX2, HP_CPU_FMA,
    HP_CPU_AVX512F, HP_CPU_AVX512DQ, HP_CPU_AVX512BW, HP_CPU_AVX512VL, HP_CPU_AVX512BF16,
} hp_cpu_feature;

typedef enum {   // the cap levels, narrowest first
    HP_ISA_SSE41, HP_ISA_AVX, HP_ISA_AVX2, HP_ISA_AVX512, HP_ISA_AVX512_BF16, HP_ISA_AMX,
    HP_ISA_COUNT
} hp_cpu_isa;

// 1 when the CPU (and the OS, which must save the wide registers) has the feature and the
// HP_CPU_ISA cap allows it. Cheap: the answers are read once.
int hp_cpu_has(hp_cpu_feature f);

// The cap HP_CPU_ISA sets (HP_ISA_COUNT when unset or empty; a bad value counts as unset here:
// hp_cpu_isa_check refuses it).
hp_cpu_isa hp_cpu_isa_cap(void);

// "avx2" when HP_CPU_ISA caps the answers, NULL when it does not.
const char *hp_cpu_isa_cap_name(void);

// 0 when HP_CPU_ISA is unset, empty or one of the level names; else -1 with one line in err
// naming the value and the allowed names.
int hp_cpu_isa_check(char *err, size_t n);

// The widest level the answers reach (after the cap): what a process here runs.
hp_cpu_isa hp_cpu_isa_widest(void);

// A level's name, as HP_CPU_ISA spells it ("avx512_bf16").
const char *hp_cpu_isa_name(hp_cpu_isa isa);

#endif
