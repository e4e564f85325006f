// fsdp_wire.c - FSDP's narrow wires, the precision's part of the style: the bf16 all-gather of a
// unit (the bf16 parameter policy), the bf16 reduce-scatter (--mixed-precision-reduce
// bfloat16) and torchao's fp8 all-gather of the float8-converted weights
// (--float8-fsdp-all-gather) with its structure check. fsdp.c decides when a unit moves;
// this file, in which bytes.
// defines: hp_fsdp_gather_bf16, hp_fsdp_reduce_in_bf16, hp_fsdp_f8_param, hp_fsdp_span_converted,
//          hp_fsdp_gather_fp8, hp_fsdp_float8_amax, hp_fsdp_check_fp8_gather
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/float8.h"
#include "hyperpar/structure.h"
#include "fsdp_internal.h"

// The bf16 all-gather of one stack's span (precision.md §2.1 rows 2-3): this rank rounds its
// fp32 shard into its own slot of the bf16 staging (the first half of comm_buf), the group
// exchanges 2 bytes an element, and the staging is widened in place, from the end (a float i
// covers bf16 elements 2i and 2i+1, both read already), into the floats the copy-out reads.
// A group of one gathers nothing (as in fp32: the call counts stay the same).
const float *hp_fsdp_gather_bf16(hp_fsdp_state *fs, const stack_span *sp) {
    const size_t n = (size_t)sp->n, total = n * (size_t)sp->G;
    hp_bf16 *wire = (hp_bf16 *)(void *)fs->comm_buf;
    hp_bf16 *own = wire + (size_t)hp_comm_rank(fs->comm, sp->group) * n;
    hp_bf16_pack(own, fs->p_shard + sp->s0, n);
    hp_allgather_bf16(fs->comm, sp->group, wire, own, sp->G > 1 ? n : 0);
    unsigned char *bytes = (unsigned char *)fs->comm_buf;
    for (size_t i = total; i-- > 0;) {
        hp_bf16 b;
        memcpy(&b, bytes + 2 * i, sizeof b);
        const float f = hp_bf16_to_float(b);
        memcpy(bytes + 4 * i, &f, sizeof f);
    }
    return fs->comm_buf;
}

// --mixed-precision-reduce bfloat16: unit u's grads of one stack span, bf16 values, staged
// (G, n) in comm_buf, packed there in place to 2 bytes (each element is written behind the
// ones still to read), reduce-scattered in bf16 into the n elements after them, all-reduced
// over dp_replicate the same way and widened into the shard's grads g. Blocking: the
// nonblocking slots hold fp32 rows. The failpoints of the fp32 reduction don't apply here.
void hp_fsdp_reduce_in_bf16(hp_fsdp_state *fs, const stack_span *sp, float *g) {
    const size_t n = (size_t)sp->n, G = (size_t)sp->G;
    float *staged = fs->comm_buf;
    for (int i = sp->i0; i < sp->i1; i++)
        for (int k = 0; k < sp->G; k++)
            hp_fsdp_chunk_copy(&fs->pt->p[i], k, hp_fsdp_grad_of(fs, i),
                       staged + (size_t)k * n + (fs->pt->p[i].shard_offset - sp->s0), 1);
    if (hp_structure_enabled() && (G > 1 || fs->d.dp_replicate > 1))
        hp_fsdp_keep_reduce_inputs(fs, sp, staged);
    hp_bf16_narrow_in_place(staged, G * n);
    hp_bf16 *wire = (hp_bf16 *)(void *)staged, *sum = wire + G * n;
    hp_reduce_scatter_bf16(fs->comm, sp->group, sum, wire, n);
    hp_allreduce_sum_bf16(fs->comm, HP_G_DP_REPLICATE, sum, n);
    hp_bf16_unpack(g, sum, n);
}

// ---- --float8-fsdp-all-gather (torchao fsdp_utils.py, precision.md §5.4, §8)

int hp_fsdp_f8_param(const hp_fsdp_state *fs, int i) { return fs->f8ag && fs->f8_on[i]; }

// Bytes an element of parameter i on the wire: 1 (fp8 codes), 2 (bf16), 4 (fp32).
static size_t wire_width(const hp_fsdp_state *fs, int i) {
    return hp_fsdp_f8_param(fs, i) ? 1 : fs->bf16 ? 2 : 4;
}

// max |x| over n, a NaN kept (as the linear's amax)
static float amax_of(const float *x, int64_t n) {
    float m = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        const float a = fabsf(x[k]);
        if (isnan(a) || a > m) m = a;
    }
    return m;
}

// The scale amax of each converted weight of a span: this rank's master shard (its padding is
// zeros), MAX over the shard group, then over tp for the weights tp splits. counted: the
// step's collectives (hp_allreduce_max); else the structure check's own (raw MPI, uncounted).
// amax gets one value per converted param of [i0, i1), in order; returns how many.
static int span_amax(hp_fsdp_state *fs, const stack_span *sp, float *amax, int counted, int local_fsdp) {
    int n = 0, n_tp = 0;
    for (int i = sp->i0; i < sp->i1; i++) {
        if (!hp_fsdp_f8_param(fs, i)) continue;
        const hp_param *p = &fs->pt->p[i];
        amax[n++] = amax_of(fs->p_shard + p->shard_offset, p->shard_numel);
        n_tp += p->tp_size > 1;
    }
    if (n == 0) return 0;
    if (sp->G > 1) {
        if (!counted) {
            hp_mpi_allreduce(hp_comm_mpi(fs->comm, sp->group), amax, n, MPI_FLOAT, MPI_MAX, "float8-fsdp-amax-check");
        } else if (!local_fsdp) {
            hp_allreduce_max(fs->comm, sp->group, amax, (size_t)n);
        } else {   // (the bug: the same bytes move, each rank keeps its own amax)
            float *lost = malloc((size_t)n * sizeof *lost);
            if (!lost) hp_fail_line_and_abort(1, "hp: out of memory (float8 amax)");
            memcpy(lost, amax, (size_t)n * sizeof *lost);
            hp_allreduce_max(fs->comm, sp->group, lost, (size_t)n);
            free(lost);
        }
    }
    if (n_tp > 0) {   // the tp-split ones, packed, then back in place
        float *t = malloc((size_t)n_tp * sizeof *t);
        if (!t) hp_fail_line_and_abort(1, "hp: out of memory (float8 amax)");
        int j = 0, q = 0;
        for (int i = sp->i0; i < sp->i1; i++)
            if (hp_fsdp_f8_param(fs, i)) { if (fs->pt->p[i].tp_size > 1) t[j++] = amax[q]; q++; }
        if (counted) hp_allreduce_max(fs->comm, HP_G_TP, t, (size_t)n_tp);
        else hp_mpi_allreduce(hp_comm_mpi(fs->comm, HP_G_TP), t, n_tp, MPI_FLOAT, MPI_MAX, "float8-fsdp-amax-check");
        j = q = 0;
        for (int i = sp->i0; i < sp->i1; i++)
            if (hp_fsdp_f8_param(fs, i)) { if (fs->pt->p[i].tp_size > 1) amax[q] = t[j++]; q++; }
        free(t);
    }
    return n;
}

int hp_fsdp_span_converted(const hp_fsdp_state *fs, const stack_span *sp) {
    int n = 0;
    for (int i = sp->i0; i < sp->i1; i++) n += hp_fsdp_f8_param(fs, i);
    return n;
}

// The fp8 all-gather of one stack's span: each rank writes its slot of the byte staging (the
// start of comm_buf) in the span's element order, the converted weights as e4m3 codes of
// master * scale (1 byte), the other tensors as bf16 (2) or fp32 (4) - one flat buffer, as
// FSDP2 gathers its mixed dtypes - the group exchanges the slots, and they are decoded in
// place into floats (G, n), from the end: a decoded float i sits at byte 4i or later, at or
// past its own source byte and past every source before it, so nothing unread is written.
// The fp8 values decode to value(q) / scale, the linear's dequantised weight itself.
const float *hp_fsdp_gather_fp8(hp_fsdp_state *fs, const stack_span *sp) {
    const size_t n = (size_t)sp->n, G = (size_t)sp->G;
    float *amax = malloc((size_t)(sp->i1 - sp->i0 + 1) * sizeof *amax);
    size_t *boff = malloc((size_t)(sp->i1 - sp->i0 + 1) * sizeof *boff);
    if (!amax || !boff) hp_fail_line_and_abort(1, "hp: out of memory (float8 all-gather)");
    span_amax(fs, sp, amax, 1, hp_failpoint(HP_FP_FLOAT8_FSDP_AMAX_LOCAL));
    size_t w = 0;   // bytes of one member's slot
    for (int i = sp->i0, q = 0; i < sp->i1; i++) {
        boff[i - sp->i0] = w;
        w += (size_t)fs->pt->p[i].shard_numel * wire_width(fs, i);
        if (hp_fsdp_f8_param(fs, i)) { fs->f8_amax[i] = amax[q++]; fs->f8_valid[i] = 1; }
    }
    unsigned char *bytes = (unsigned char *)fs->comm_buf;
    unsigned char *own = bytes + (size_t)hp_comm_rank(fs->comm, sp->group) * w;
    for (int i = sp->i0; i < sp->i1; i++) {
        const hp_param *p = &fs->pt->p[i];
        const float *x = fs->p_shard + p->shard_offset;
        unsigned char *dst = own + boff[i - sp->i0];
        const size_t cnt = (size_t)p->shard_numel;
        if (hp_fsdp_f8_param(fs, i)) hp_fp8_quantize(dst, x, cnt, hp_fp8_scale(fs->f8_amax[i], HP_FP8_E4M3, 0), HP_FP8_E4M3);
        else if (fs->bf16) {
            for (size_t k = 0; k < cnt; k++) {
                const hp_bf16 b = hp_bf16_from_float(x[k]);
                memcpy(dst + 2 * k, &b, sizeof b);
            }
        } else memcpy(dst, x, cnt * sizeof(float));
    }
    hp_allgather_bytes(fs->comm, sp->group, bytes, own, G > 1 ? w : 0);
    for (size_t k = G; k-- > 0;)
        for (int i = sp->i1; i-- > sp->i0;) {
            const hp_param *p = &fs->pt->p[i];
            const size_t ww = wire_width(fs, i), e0 = k * n + (size_t)(p->shard_offset - sp->s0);
            const unsigned char *src = bytes + k * w + boff[i - sp->i0];
            const float s = hp_fsdp_f8_param(fs, i) ? hp_fp8_scale(fs->f8_amax[i], HP_FP8_E4M3, 0) : 0.0f;
            for (size_t e = (size_t)p->shard_numel; e-- > 0;) {
                float f;
                if (ww == 1) f = hp_fp8_to_float(src[e], HP_FP8_E4M3) / s;
                else if (ww == 2) { hp_bf16 b; memcpy(&b, src + 2 * e, sizeof b); f = hp_bf16_to_float(b); }
                else memcpy(&f, src + 4 * e, sizeof f);
                memcpy(bytes + 4 * (e0 + e), &f, sizeof f);
            }
        }
    free(amax);
    free(boff);
    return fs->comm_buf;
}

int hp_fsdp_float8_amax(const hp_fsdp_state *fs, int i, float *amax) {
    if (!fs->f8ag || i < 0 || i >= fs->pt->n || !fs->f8_valid[i]) return 0;
    *amax = fs->f8_amax[i];
    return 1;
}

// The structure check of the fp8 all-gather (structure.h), per span of unit u: every converted
// weight's amax is the MAX over its shard group (and tp) of the master shards' amax, recomputed
// here (HP_CHECK_FLOAT8_SCALE), and this rank's own chunk of the gathered copy is the e4m3 cast
// of its master with that scale, dequantised (HP_CHECK_GATHER): so the bytes every rank sent are
// the cast of the master with the whole tensor's scale.
void hp_fsdp_check_fp8_gather(hp_fsdp_state *fs, int u) {
    stack_span sp;
    for (int st = 0; st < 2; st++) {
        if (!hp_fsdp_stack_span_of(fs, u, (hp_stack)st, &sp) || hp_fsdp_span_converted(fs, &sp) == 0) continue;
        float *want = malloc((size_t)(sp.i1 - sp.i0 + 1) * sizeof *want);
        if (!want) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
        span_amax(fs, &sp, want, 0, 0);
        for (int i = sp.i0, q = 0; i < sp.i1; i++) {
            if (!hp_fsdp_f8_param(fs, i)) continue;
            const hp_param *p = &fs->pt->p[i];
            const float a = want[q++];
            if (!fs->f8_valid[i] || memcmp(&fs->f8_amax[i], &a, sizeof a) != 0)
                hp_structure_fail(HP_CHECK_FLOAT8_SCALE, "unit %d, %s: the fp8 all-gather's amax is %.9g, "
                                  "the MAX over its fsdp%s group of the master shards' %.9g", u, p->name,
                                  fs->f8_valid[i] ? (double)fs->f8_amax[i] : (double)NAN,
                                  p->tp_size > 1 ? " and tp" : "", (double)a);
            else
                hp_structure_pass(HP_CHECK_FLOAT8_SCALE);
            if (!p->on_rank || p->shard_numel == 0 || hp_fsdp_in_shards(fs, u)) continue;
            float *mine = malloc((size_t)p->shard_numel * sizeof(float));
            if (!mine) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
            hp_fsdp_chunk_copy(p, p->fsdp_rank, hp_fsdp_param(fs, i), mine, 1);
            const float *master = fs->p_shard + p->shard_offset;
            const float s = hp_fp8_scale(a, HP_FP8_E4M3, 0);
            int64_t bad = -1;
            for (int64_t k = 0; k < p->shard_numel && bad < 0; k++) {
                if (hp_param_shard_to_local(p, k) < 0) continue;   // padding: not in the copy
                const float v = hp_fp8_to_float(hp_fp8_from_float(master[k] * s, HP_FP8_E4M3), HP_FP8_E4M3) / s;
                if (memcmp(&mine[k], &v, sizeof v) != 0) bad = k;
            }
            free(mine);
            if (bad < 0) hp_structure_pass(HP_CHECK_GATHER);
            else hp_structure_fail(HP_CHECK_GATHER, "unit %d, %s, shard element %lld: the gathered copy is "
                                   "not the e4m3 cast of this rank's master with the group's scale", u,
                                   p->name, (long long)bad);
        }
        free(want);
    }
}

