// kernels.h - fp32 layer kernels over plain buffers (llm.c style).
// Conventions: outputs first, grads have a `d` prefix, dims last; every backward
// ACCUMULATES (+=) into its grads. Shapes are in the comments; all row-major.
// defines: linear, embedding, rmsnorm, rope, attention (blockwise, log-sum-exp merge),
//          swiglu, router scores / top-k, cross-entropy pieces (vocab-parallel), optimisers,
//          float8 linear (emulated torchao recipes)
#ifndef HYPERPAR_KERNELS_H
#define HYPERPAR_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include "hyperpar/float8.h"

// ---- linear: y = x @ w^T  (w is [out, in] like torch.nn.Linear) ----------------------
void hp_linear_forward(float *y,            // (N, out)  overwritten
                       const float *x,      // (N, in)
                       const float *w,      // (out, in)
                       int N, int in, int out);
void hp_linear_backward(float *dx,          // (N, in)   += dy @ w     (may be NULL)
                        float *dw,          // (out, in) += dy^T @ x   (may be NULL)
                        const float *dy,    // (N, out)
                        const float *x,     // (N, in)
                        const float *w,     // (out, in)
                        int N, int in, int out);
// The same with dx written (dx = dy @ w) instead of added to: the first of the products that
// sum into one dx, without a zero-fill first. The same bits as zero-filling dx and calling
// hp_linear_backward: the BLAS zeroes C for beta = 0 and then adds the same partial products.
void hp_linear_backward_first(float *dx,    // (N, in)   = dy @ w
                              float *dw,    // (out, in) += dy^T @ x   (may be NULL)
                              const float *dy, const float *x, const float *w,
                              int N, int in, int out);

// The same three under the bf16 policy: x, w and dy hold bf16 values (low 16 bits zero; the
// caller rounded them), the products run with bf16 operands and fp32 accumulation (oneDNN's
// bf16 matmul, or sgemm of the same values), outputs stay fp32 for the caller to round once.
void hp_linear_forward_bf16(float *y, const float *x, const float *w, int N, int in, int out);
void hp_linear_backward_bf16(float *dx, float *dw, const float *dy, const float *x, const float *w,
                             int N, int in, int out);
void hp_linear_backward_first_bf16(float *dx, float *dw, const float *dy, const float *x,
                                   const float *w, int N, int in, int out);

// ---- float8 linear (precision.md §5, float8_linear.c): torchao's recipes, emulated ----------
// Every fp8 operand of the three GEMMs is cast with scale = fp8_max / amax (hp_fp8_scale; the
// rowwise recipes floor it to 2^k) and dequantised; the GEMM is hp_gemm of the dequantised
// operands (fp32), its output left for the caller to round once to the param dtype. The amax
// values are inputs: the caller computes them on its local tensors (hp_float8_*_amax) and may
// MAX-reduce those over a dim split across ranks before the product, so the kernel never
// knows about ranks. Which amax covers what (the counts: hp_float8_amax_sizes):
typedef struct hp_float8_amax {
    float *x;     // forward x (N, in):  tensorwise (1); rowwise (N): row i over in
    float *w;     // forward w (out, in): tensorwise (1); rowwise (out): row o over in
    float *dy;    // dgrad dy (N, out):  tensorwise (1, e5m2); rowwise (N): row i over out
    float *wt;    // dgrad w: rowwise (in): column k over out; rowwise-gw-hp (1); tensorwise: w's
    float *dyt;   // wgrad dy: rowwise (out): column o over N; else none
    float *xt;    // wgrad x:  rowwise (in): column k over N; else none (tensorwise: x's)
} hp_float8_amax;
typedef struct { int x, w, dy, wt, dyt, xt; } hp_float8_amax_n;   // the counts, 0: unused
void hp_float8_amax_sizes(hp_float8_amax_n *n, hp_float8_recipe recipe, int N, int in, int out);
// max |x[i]| over n values (a NaN kept: torch.max of abs propagates it).
float hp_float8_amax_all(const float *x, size_t n);
// The local amax of x and w (a->x, a->w), and of the backward's operands (a->dy, wt, dyt, xt).
void hp_float8_forward_amax(hp_float8_amax *a, const float *x, const float *w, hp_float8_recipe recipe,
                            int N, int in, int out);
void hp_float8_backward_amax(hp_float8_amax *a, const float *dy, const float *x, const float *w,
                             hp_float8_recipe recipe, int N, int in, int out);
// The format grad_output is cast to: e5m2 under tensorwise, e4m3 under the rowwise recipes.
hp_fp8_format hp_float8_grad_format(hp_float8_recipe recipe);
void hp_float8_linear_forward(float *y,             // (N, out) overwritten, fp32
                              const float *x,       // (N, in)
                              const float *w,       // (out, in)
                              const hp_float8_amax *a, hp_float8_recipe recipe, int N, int in, int out);
// dx (N, in) = dy w (dx_beta 0) or += (dx_beta 1), may be NULL; dw (out, in) += dy^T x, may be
// NULL. rowwise-gw-hp's wgrad is the high-precision product: hp_gemm_bf16 when hp_bf16 (x and
// dy bf16-valued), else hp_gemm.
void hp_float8_linear_backward(float *dx, float *dw,
                               const float *dy,     // (N, out)
                               const float *x, const float *w, const hp_float8_amax *a,
                               hp_float8_recipe recipe, int hp_bf16, float dx_beta,
                               int N, int in, int out);

// ---- embedding over a vocab slice [v0, v0+Vl) (rowwise TP); other ids give zero rows --
void hp_embedding_forward(float *out,        // (N, D) overwritten
                          const int *tokens, // (N)
                          const float *table,// (Vl, D)
                          int v0, int Vl, int N, int D);
void hp_embedding_backward(float *dtable,    // (Vl, D) +=
                           const float *dout,// (N, D)
                           const int *tokens,
                           int v0, int Vl, int N, int D);

// ---- RMSNorm: out = x / sqrt(mean(x^2) + eps) * w ---------------------------------------
void hp_rmsnorm_forward(float *out, float *rstd,     // (N, D), (N)
                        const float *x, const float *w, float eps, int N, int D);
void hp_rmsnorm_backward(float *dx, float *dw,        // (N, D) +=, (D) +=
                         const float *dout, const float *x, const float *w,
                         const float *rstd, int N, int D);

// ---- RoPE, interleaved pairs, in place on x (B, S, nh, hd) --------------------------------
// The table of S global positions pos, once per run (TorchTitan's precompute_freqs_cis):
// cs (2, S, hd/2) = cos, then sin of pos[t] * theta^(-2j/hd). 0, or -1 for an odd head_dim.
int hp_rope_table(float *cs, const int *pos, float theta, int S, int hd);
// The same with Llama 3.1's rescale of the frequencies f_j = theta^(-2j/hd) (HF rope_scaling,
// rope_type "llama3"; TorchTitan's apply_scaling): with wavelength w = 2 pi / f_j and
// L = original_max, a pair of w < L / high keeps f_j, one of w > L / low takes f_j / factor,
// and one between blends them, (1 - s) f_j / factor + s f_j with s = (L / w - low) / (high - low).
// factor 0 is plain RoPE, hp_rope_table's bits. 0, or -1 (one line) for an odd head_dim or a
// rescale that is not factor >= 1, 0 < low < high, original_max >= 1.
int hp_rope_table_llama3(float *cs, const int *pos, float theta, float factor, float low, float high,
                         int original_max, int S, int hd);
void hp_rope_forward(float *x, const float *cs, int B, int S, int nh, int hd);
// In place: dx <- R(pos)^T dx (the gradient of the rotation).
void hp_rope_backward(float *dx, const float *cs, int B, int S, int nh, int hd);

// ---- attention, blockwise -----------------------------------------------------------
// Queries i in [q_lo, q_hi) of q attend to keys j in [k_lo, k_hi) of k/v; key j is visible
// to query i iff kpos[j] <= qpos[i] (causal by global position). Query head h reads kv head
// h / (H/Hkv); scale 1/sqrt(hd). The block's result is merged into the running (out, lse)
// by log-sum-exp: initialise out = 0 and lse = -INFINITY. Rows that see no key are untouched.
void hp_attention_forward(float *out,        // (B, Sq, H, hd)  merged into
                          float *lse,        // (B, Sq, H)      merged into
                          const float *q,    // (B, Sq, H, hd)
                          const float *k,    // (B, Sk, Hkv, hd)
                          const float *v,    // (B, Sk, Hkv, hd)
                          const int *qpos,   // (Sq)
                          const int *kpos,   // (Sk)
                          int B, int Sq, int Sk, int H, int Hkv, int hd,
                          int q_lo, int q_hi, int k_lo, int k_hi);
// Backward of one block, given the FINAL out and lse of the rows (after every merge).
void hp_attention_backward(float *dq,        // (B, Sq, H, hd)  +=
                           float *dk,        // (B, Sk, Hkv, hd) +=
                           float *dv,        // (B, Sk, Hkv, hd) +=
                           const float *dout,// (B, Sq, H, hd)
                           const float *out, // (B, Sq, H, hd)
                           const float *lse, // (B, Sq, H)
                           const float *q, const float *k, const float *v,
                           const int *qpos, const int *kpos,
                           int B, int Sq, int Sk, int H, int Hkv, int hd,
                           int q_lo, int q_hi, int k_lo, int k_hi);
// The same under the bf16 policy (q, k, v and dout bf16-valued): the two products of bf16
// operands - the scores q k^T and dP = dout v^T - run as bf16 GEMMs (fp32 accumulation, the
// GEMM backend's bf16 kernels); P and dS stay fp32, and so do their products. With the
// OpenBLAS backend the bits are the fp32 functions' (a product of two bf16 is exact in fp32).
void hp_attention_forward_bf16(float *out, float *lse, const float *q, const float *k, const float *v,
                               const int *qpos, const int *kpos, int B, int Sq, int Sk, int H, int Hkv,
                               int hd, int q_lo, int q_hi, int k_lo, int k_hi);
void hp_attention_backward_bf16(float *dq, float *dk, float *dv, const float *dout, const float *out,
                                const float *lse, const float *q, const float *k, const float *v,
                                const int *qpos, const int *kpos, int B, int Sq, int Sk, int H, int Hkv,
                                int hd, int q_lo, int q_hi, int k_lo, int k_hi);

// ---- SwiGLU gate: h = silu(a) * b, elementwise -----------------------------------------
void hp_swiglu_forward(float *h, const float *a, const float *b, size_t n);
// The backward writes da and db (no zero-fill first): each has one writer in the model.
void hp_swiglu_backward(float *da, float *db,          // (n) written
                        const float *dh, const float *a, const float *b, size_t n);

// ---- MoE router -----------------------------------------------------------------------
// scores (N, E) = softmax (score_func 0) or sigmoid (1) of logits (N, E).
void hp_router_scores_forward(float *scores, const float *logits, int N, int E, int score_func);
void hp_router_scores_backward(float *dlogits,        // (N, E) +=
                               const float *dscores, const float *scores,
                               int N, int E, int score_func);
// Per row: the K highest scores, in descending order, a tie going to the lower expert id.
// idx (N, K); gates (N, K) = score (renormalised to sum 1 if route_norm) * route_scale.
void hp_router_topk(int *idx, float *gates, const float *scores,
                    int N, int E, int K, int route_norm, float route_scale);
void hp_router_topk_backward(float *dscores,          // (N, E) +=
                             const float *dgates,     // (N, K)
                             const int *idx, const float *scores,
                             int N, int E, int K, int route_norm, float route_scale);

// ---- cross-entropy over a vocab slice [v0, v0+Vl) (loss parallel) -----------------------
// labels == -100 are ignored. The full-vocab statistics come from combining the slices:
//   m = max over slices of local max; se = sum over slices of local sumexp(logits - m);
//   tl = sum over slices of local target logit; loss_i = log(se) + m - tl.
void hp_ce_local_max(float *m, const float *logits, int N, int Vl);               // m (N) =
void hp_ce_local_sumexp(float *se, const float *logits, const float *m, int N, int Vl); // se (N) =
void hp_ce_local_target(float *tl, const float *logits, const int *labels,
                        int v0, int N, int Vl);                                    // tl (N) =
// dlogits (N, Vl) = scale * (softmax - onehot(label)) for valid rows, 0 for ignored ones;
// dlogits may be logits (in place: bf16 storage unpacks the kept logits there).
void hp_ce_backward(float *dlogits, const float *logits, const float *m, const float *se,
                    const int *labels, int v0, float scale, int N, int Vl);

// ---- optimisers on flat (sharded) buffers ---------------------------------------------
void hp_sgd_update(float *p, const float *g, size_t n, float lr);
// AdamW (decoupled weight decay), step t >= 1, bias-corrected.
void hp_adamw_update(float *p, const float *g, float *m, float *v, size_t n,
                     float lr, float beta1, float beta2, float eps, float weight_decay, int t);

#endif
