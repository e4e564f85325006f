// gemm.h - the one matrix product of the kernels (and so of the model): row-major
//   C (M, N) = alpha * op(A) (M, K) @ op(B) (K, N) + beta * C,   op(X) = X or X^T,
// with leading dimensions lda, ldb, ldc as BLAS has them, in two precisions:
//   hp_gemm       fp32 operands, fp32 result;
//   hp_gemm_bf16  operands the caller has already rounded to bf16 (float buffers whose low 16
//                 bits are zero, hyperpar/bf16.h), products accumulated in fp32 into fp32 C.
// Two backends sit behind both, chosen once per process (the tool's --gemm / HP_GEMM):
//   HP_GEMM_OPENBLAS  cblas_sgemm with the caller's arguments (gemm.c): hp_gemm's bits are the
//                     ones of every release before the choice existed; hp_gemm_bf16 is the same
//                     call on the bf16 values (a product of two bf16 is exact in fp32, so this is
//                     the bf16 math with the fp32 kernels' summation order).
//   HP_GEMM_ONEDNN    a oneDNN 2.6 matmul primitive (gemm_onednn.c): f32 x f32 -> f32, or the
//                     operands packed to 2-byte bf16 and bf16 x bf16 -> f32 on AVX512_BF16 / AMX.
// The kernels call hp_gemm / hp_gemm_bf16 and never see which backend runs; both follow the
// BLAS thread count of the process (OPENBLAS_NUM_THREADS, 1 per rank under hp run): oneDNN's
// OpenMP threads are set to it before every call. Either backend may be called from several
// threads at once (hp_par_for's workers under blas_serial).
// defines: hp_gemm_op, hp_gemm_backend, hp_gemm, hp_gemm_bf16, hp_gemm_set_backend,
//          hp_gemm_get_backend, hp_gemm_backend_parse, hp_gemm_backend_name, hp_gemm_info_line,
//          hp_gemm_threads, hp_gemm_backend_supports, hp_gemm_auto_measure, hp_gemm_default_backend, hp_gemm_shutdown,
//          hp_gemm_omp_env, hp_gemm_set_invariant, hp_gemm_get_invariant,
//          hp_gemm_invariant_product
//
//   hp_gemm(HP_GEMM_N, HP_GEMM_T, N, out, in, 1.0f, x, in, w, in, 0.0f, y, out);   // y = x w^T
//   hp_gemm_set_backend(HP_GEMM_ONEDNN);
//   char line[160]; puts(hp_gemm_info_line(line, sizeof line));
//   // "gemm: onednn 2.6.3, isa avx512_core_bf16, 1 thread"
#ifndef HP_KERNELS_GEMM_H
#define HP_KERNELS_GEMM_H
#include <stddef.h>

typedef enum { HP_GEMM_N = 0, HP_GEMM_T = 1 } hp_gemm_op;   // op(X) = X, op(X) = X^T

typedef enum { HP_GEMM_OPENBLAS = 0, HP_GEMM_ONEDNN = 1 } hp_gemm_backend;

void hp_gemm(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha, const float *A,
             int lda, const float *B, int ldb, float beta, float *C, int ldc);

// The same product with bf16 operands (A and B bf16-valued; C fp32, accumulated in fp32).
void hp_gemm_bf16(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc);

// Batch-invariant products (gemm_invariant.c; off by default): with on, every later hp_gemm /
// hp_gemm_bf16 in this process gives each element of C the same bits whatever the call's M and
// N, the element's row and column offset in it, and the thread count: each element is the sum
// over k in order, one rounding per product and per sum, whichever backend is set (no BLAS
// keeps these bits; the mode is its own backend, "invariant"). Slower: the layout-invariant
// step's GEMM. Set it before the first product, from one thread.
void hp_gemm_set_invariant(int on);
int  hp_gemm_get_invariant(void);
void hp_gemm_invariant_product(hp_gemm_op ta, hp_gemm_op tb, int M, int N, int K, float alpha,
                               const float *A, int lda, const float *B, int ldb, float beta,
                               float *C, int ldc);

// The backend of every later call in this process (default HP_GEMM_OPENBLAS). Set it before
// the first product, from one thread.
void hp_gemm_set_backend(hp_gemm_backend b);
hp_gemm_backend hp_gemm_get_backend(void);

// "openblas" or "onednn" -> 0 and *out; "auto" -> 1 (*out untouched: hp_gemm_auto_measure
// decides); anything else -> -1.
int hp_gemm_backend_parse(const char *name, hp_gemm_backend *out);
const char *hp_gemm_backend_name(hp_gemm_backend b);   // "openblas", "onednn"

// The threads a product runs on now: the BLAS thread count (>= 1).
int hp_gemm_threads(void);

// One line naming the backend now set, its library, ISA and threads:
//   "gemm: onednn 2.6.3, isa avx512_core_bf16, 1 thread"
//   "gemm: openblas 0.3.21, core Haswell, isa avx2, 1 thread"
// Returns buf.
char *hp_gemm_info_line(char *buf, size_t n);

// 1 when backend b runs products of this kind here (bf16 != 0: hp_gemm_bf16's). OpenBLAS always
// does; oneDNN 2.6 has no bf16 matmul below avx512_core (an AVX2 CPU, or HP_CPU_ISA=avx2), so a
// tool asks this before it sets the backend: a product never fails for lack of an ISA.
int hp_gemm_backend_supports(hp_gemm_backend b, int bf16);

// `auto`: times the product of the run's kind (bf16 != 0: hp_gemm_bf16) on both backends on a
// representative shape (the model's x w^T at T 1024, D 1024: a warm-up each, then the best of 3
// calls taking turns, at the current thread count) and returns the faster; `why` gets
// "fp32 1024x1024x1024 at 1 thread: onednn 180.3 GFLOP/s, openblas 95.0 GFLOP/s". A backend
// that cannot run that kind (hp_gemm_backend_supports) is not timed and never returned: `why`
// then says so. Does not change the backend.
hp_gemm_backend hp_gemm_auto_measure(int bf16, char *why, size_t n);

// The backend a tool runs when the user names none (precision.md, "Speed"), for a step of
// step_flops (the whole model's matmul and attention FLOPs of one optimizer step, whatever the
// layout: every rank and the one-process reference decide alike) under the bf16 policy or not:
//   - oneDNN for a bf16 step, where oneDNN runs bf16 instructions here (AVX512_BF16, AMX) and
//     has the bf16 matmul (hp_gemm_backend_supports);
//   - oneDNN for an fp32 step, where the OpenBLAS core this process runs has narrower vectors
//     than the CPU's widest (a preset OPENBLAS_CORETYPE): measured on a Zen 5 with the preset
//     Haswell core, OpenBLAS sgemm 95 GFLOP/s, oneDNN f32 180-190;
//   - OpenBLAS otherwise, and for any step below HP_GEMM_DEFAULT_MIN_STEP_FLOP: oneDNN makes
//     its primitives in every process (about 50 ms measured for the tiny model's), which a step
//     that small does not win back.
// No measurement: the pick depends on the machine, its environment and the step, never on the
// run's timing, so it cannot flip between two runs. `why` gets the reason in one phrase.
#define HP_GEMM_DEFAULT_MIN_STEP_FLOP 1e10
hp_gemm_backend hp_gemm_default_backend(int bf16, double step_flops, char *why, size_t n);

// oneDNN's OpenMP threads spin after each product by default (libgomp), and on a machine with
// as many threads as cores a spinning one holds the core the kernels' own workers (hp_par_for)
// need next: measured on a 2-core Zen 5, the bf16 bench step at 2 threads took 1516-1565 ms
// spinning, 1067-1387 ms with OMP_WAIT_POLICY=PASSIVE, the same bits. libgomp reads the
// variable once, when it loads, so this only prepares the environment: when OMP_WAIT_POLICY is
// unset (or empty) it sets it to PASSIVE and returns 1 (a process started after, or this one
// started again, sees it); a value of the user's is kept (0).
int hp_gemm_omp_env(void);

// Frees what the oneDNN backend made (its engine, streams, primitives, scratch); registered
// with atexit when the backend first runs. A later product starts it again.
void hp_gemm_shutdown(void);

#endif
