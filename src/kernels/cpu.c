// cpu.c - hp_cpu_has and the HP_CPU_ISA cap (hyperpar/cpu.h).
// defines: hp_cpu_has, hp_cpu_isa_cap, hp_cpu_isa_cap_name, hp_cpu_isa_check, hp_cpu_isa_widest,
//          hp_cpu_isa_name
//
// __builtin_cpu_supports takes only string literals, so each feature is one case below; the
// compiler reads cpuid once at start-up (and checks XGETBV for the OS's register saving).
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/cpu.h"

static const char *const isa_names[HP_ISA_COUNT] = {
    "sse4_1", "avx", "avx2", "avx512", "avx512_bf16", "amx",
};

const char *hp_cpu_isa_name(hp_cpu_isa isa) {
    return isa >= 0 && isa < HP_ISA_COUNT ? isa_names[isa] : "none";
}

static int isa_parse(const char *s) {
    for (int i = 0; i < HP_ISA_COUNT; i++)
        if (!strcmp(s, isa_names[i])) return i;
    return -1;
}

hp_cpu_isa hp_cpu_isa_cap(void) {
    const char *v = getenv("HP_CPU_ISA");
    if (!v || !*v) return HP_ISA_COUNT;
    const int k = isa_parse(v);
    return k < 0 ? HP_ISA_COUNT : (hp_cpu_isa)k;
}

const char *hp_cpu_isa_cap_name(void) {
    const hp_cpu_isa cap = hp_cpu_isa_cap();
    return cap == HP_ISA_COUNT ? NULL : isa_names[cap];
}

int hp_cpu_isa_check(char *err, size_t n) {
    const char *v = getenv("HP_CPU_ISA");
    if (!v || !*v || isa_parse(v) >= 0) return 0;
    snprintf(err, n, "HP_CPU_ISA=%.40s: the cap must be one of sse4_1, avx, avx2, avx512, avx512_bf16, amx", v);
    return -1;
}

// The level a feature belongs to: the cap allows it when the cap is at least that level.
static hp_cpu_isa level_of(hp_cpu_feature f) {
    switch (f) {
    case HP_CPU_SSE41: return HP_ISA_SSE41;
    case HP_CPU_AVX: return HP_ISA_AVX;
    case HP_CPU_AVX2: case HP_CPU_FMA: return HP_ISA_AVX2;
    case HP_CPU_AVX512F: case HP_CPU_AVX512DQ: case HP_CPU_AVX512BW: case HP_CPU_AVX512VL:
        return HP_ISA_AVX512;
    case HP_CPU_AVX512BF16: return HP_ISA_AVX512_BF16;
    }
    return HP_ISA_AMX;
}

static int cpu_supports(hp_cpu_feature f) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    switch (f) {
    case HP_CPU_SSE41: return __builtin_cpu_supports("sse4.1");
    case HP_CPU_AVX: return __builtin_cpu_supports("avx");
    case HP_CPU_AVX2: return __builtin_cpu_supports("avx2");
    case HP_CPU_FMA: return __builtin_cpu_supports("fma");
    case HP_CPU_AVX512F: return __builtin_cpu_supports("avx512f");
    case HP_CPU_AVX512DQ: return __builtin_cpu_supports("avx512dq");
    case HP_CPU_AVX512BW: return __builtin_cpu_supports("avx512bw");
    case HP_CPU_AVX512VL: return __builtin_cpu_supports("avx512vl");
    case HP_CPU_AVX512BF16: return __builtin_cpu_supports("avx512bf16");
    }
#else
    (void)f;
#endif
    return 0;
}

// The answers of every feature, after the cap, read once: the kernels ask in their inner loops
// (a row of attention, a chunk of AdamW), and the environment does not change during a run.
static _Atomic int answers = -1;

int hp_cpu_has(hp_cpu_feature f) {
    int bits = atomic_load_explicit(&answers, memory_order_relaxed);
    if (bits < 0) {   // (two threads may both compute it: the same bits)
        bits = 0;
        const hp_cpu_isa cap = hp_cpu_isa_cap();
        for (int k = HP_CPU_SSE41; k <= HP_CPU_AVX512BF16; k++)
            if (level_of((hp_cpu_feature)k) <= cap && cpu_supports((hp_cpu_feature)k)) bits |= 1 << k;
        atomic_store_explicit(&answers, bits, memory_order_relaxed);
    }
    return bits >> f & 1;
}

static int cpu_has_amx(void) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && !defined(__clang__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("amx-bf16");
#else
    return 0;
#endif
}

hp_cpu_isa hp_cpu_isa_widest(void) {
    const int avx512 = hp_cpu_has(HP_CPU_AVX512F) && hp_cpu_has(HP_CPU_AVX512DQ) &&
                       hp_cpu_has(HP_CPU_AVX512BW) && hp_cpu_has(HP_CPU_AVX512VL);
    if (avx512 && hp_cpu_has(HP_CPU_AVX512BF16))
        return cpu_has_amx() && hp_cpu_isa_cap() >= HP_ISA_AMX ? HP_ISA_AMX : HP_ISA_AVX512_BF16;
    if (avx512) return HP_ISA_AVX512;
    if (hp_cpu_has(HP_CPU_AVX2) && hp_cpu_has(HP_CPU_FMA)) return HP_ISA_AVX2;
    if (hp_cpu_has(HP_CPU_AVX)) return HP_ISA_AVX;
    return HP_ISA_SSE41;   // (also what a pre-SSE4.1 x86-64 is counted as: only SSE2 loops run)
}
