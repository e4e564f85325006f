// test_ulysses.c - the Ulysses attention core alone (ulysses.h) against plain causal attention
// over the whole sequence, under mpirun. Every rank builds the same full q/k/v/dout (S = 64,
// H = 8, Hkv = 2 and 4), computes the reference with one kernel call, takes its own tokens
// (cp head-tail first, then its ulysses part) and runs the Ulysses version: out, dq, dk, dv
// must be within 1e-5 relative (Frobenius, over all ranks). Also: the bytes on the ulysses
// group equal docs/traffic.md's formula, and kv repetition (Hkv < U) sums the copies' grads.
// Attentions sharing their scratch give a private one's bits, in fp32 and under the bf16 policy.
//   mpirun -np U test_ulysses            ulysses = U = world (2, 4, 8)
//   mpirun -np 4 test_ulysses 2x2        ulysses 2 x cp 2 (both rotate methods)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/comm.h"
#include "hyperpar/cp.h"
#include "hyperpar/kernels.h"
#include "hyperpar/rng.h"
#include "hyperpar/ulysses.h"

enum { S = 64, B = 2, H = 8, HD = 8 };
#define TOL 1e-5
#define DINIT 0.25f   // grads start here: the backward must add, not overwrite

#define TEST_B B
#define TEST_S S
#include "test_mpi_util.h"

static void fill(float *x, size_t n, uint64_t stream) { fill_seeded(x, n, 4321, stream); }

// One attention's inputs (this rank's tokens) and what it gives (grads accumulated onto DINIT).
typedef struct { const float *q, *k, *v, *dout; } attn_in;
typedef struct { float *o, *dq, *dk, *dv; } attn_out;

static attn_out out_alloc(size_t nq, size_t nk) {
    attn_out r = { alloc(nq), alloc(nq), alloc(nk), alloc(nk) };
    for (size_t i = 0; i < nq; i++) r.dq[i] = DINIT;
    for (size_t i = 0; i < nk; i++) r.dk[i] = r.dv[i] = DINIT;
    return r;
}
static void out_free(attn_out *r) { free(r->o); free(r->dq); free(r->dk); free(r->dv); }
static int out_same(const attn_out *a, const attn_out *b, size_t nq, size_t nk) {
    return !memcmp(a->o, b->o, nq * 4) && !memcmp(a->dq, b->dq, nq * 4) && !memcmp(a->dk, b->dk, nk * 4) &&
           !memcmp(a->dv, b->dv, nk * 4);
}

// Two attentions sharing one set of exchange buffers (hp_ulysses_attn_share_scratch), run as a
// model runs two blocks (both forwards, then the backwards in reverse) on inputs in[0], in[1],
// each give what a private attention gives on its input, bit for bit; sharing is refused across
// sizes, across wire modes or after a forward. wire_bf16: the bf16 policy, whose attentions keep
// their gathered q, k, v in 2 bytes and run on the shared scratch's fp32 copies - give them
// different inputs, or a backward reading the other's copies goes unseen.
static void check_shared(hp_comm *comm, int U, int C, int Hkv, hp_cp_rotate rotate, int wire_bf16,
                         const attn_in in[2], const int *pos_cp) {
    const int Su = S / C / U;
    const size_t nq = (size_t)B * Su * H * HD, nk = (size_t)B * Su * Hkv * HD;
    attn_out want[2], got[2];
    for (int b = 0; b < 2; b++) {   // the private runs
        want[b] = out_alloc(nq, nk);
        got[b] = out_alloc(nq, nk);
        hp_ulysses_attn *one = hp_ulysses_attn_init(B, Su, H, Hkv, HD, U, C, wire_bf16);
        if (!one) { CHECK(0, "init"); return; }
        hp_ulysses_attention_forward(one, comm, rotate, 1, want[b].o, in[b].q, in[b].k, in[b].v, pos_cp);
        hp_ulysses_attention_backward(one, comm, rotate, 1, want[b].dq, want[b].dk, want[b].dv, in[b].dout, pos_cp);
        hp_ulysses_attn_free(one);
    }
    hp_ulysses_attn *ua[2] = { hp_ulysses_attn_init(B, Su, H, Hkv, HD, U, C, wire_bf16),
                               hp_ulysses_attn_init(B, Su, H, Hkv, HD, U, C, wire_bf16) };
    hp_ulysses_attn *other = hp_ulysses_attn_init(B, 2 * Su, H, Hkv, HD, U, C, wire_bf16);
    hp_ulysses_attn *wire = hp_ulysses_attn_init(B, Su, H, Hkv, HD, U, C, !wire_bf16);
    CHECK(ua[0] && ua[1] && other && wire && hp_ulysses_attn_share_scratch(other, ua[0]) == -1 &&
          hp_ulysses_attn_share_scratch(wire, ua[0]) == -1 && hp_ulysses_attn_share_scratch(ua[1], ua[0]) == 0,
          "U %d Hkv %d wire %d: attentions of one size share their exchange buffers, another size or "
          "wire is refused", U, Hkv, wire_bf16 ? 2 : 4);
    hp_ulysses_attn_free(other);
    hp_ulysses_attn_free(wire);
    if (!ua[0] || !ua[1]) return;
    for (int b = 0; b < 2; b++)
        hp_ulysses_attention_forward(ua[b], comm, rotate, 1, got[b].o, in[b].q, in[b].k, in[b].v, pos_cp);
    hp_ulysses_attn *late = hp_ulysses_attn_init(B, Su, H, Hkv, HD, U, C, wire_bf16);
    float *ot = alloc(nq);
    if (late) hp_ulysses_attention_forward(late, comm, rotate, 1, ot, in[0].q, in[0].k, in[0].v, pos_cp);
    CHECK(late && hp_ulysses_attn_share_scratch(late, ua[0]) == -1, "U %d Hkv %d: sharing refused after a forward", U, Hkv);
    hp_ulysses_attn_free(late);
    free(ot);
    for (int b = 1; b >= 0; b--)
        hp_ulysses_attention_backward(ua[b], comm, rotate, 1, got[b].dq, got[b].dk, got[b].dv, in[b].dout, pos_cp);
    int same = 1;
    for (int b = 0; b < 2; b++) {
        same &= out_same(&got[b], &want[b], nq, nk);
        out_free(&got[b]);
        out_free(&want[b]);
    }
    CHECK(same, "U %d Hkv %d wire %d: two attentions sharing their exchange buffers = private ones, bit for bit",
          U, Hkv, wire_bf16 ? 2 : 4);
    hp_ulysses_attn_free(ua[0]);
    hp_ulysses_attn_free(ua[1]);
}

// x rounded to bf16 and scaled by f (a power of two: still bf16), into a new buffer
static float *bf16_copy(const float *x, size_t n, float f) {
    float *y = alloc(n);
    for (size_t i = 0; i < n; i++) y[i] = hp_bf16_round_float(x[i]) * f;
    return y;
}

static void run_case(int U, int C, int Hkv, hp_cp_rotate rotate) {
    hp_dims d = hp_dims_default();
    d.ulysses = U; d.cp = C; d.dp_shard = 1; d.world = U * C;
    char err[256];
    if (hp_dims_validate(&d, NULL, NULL, err, sizeof err) != 0) { CHECK(0, "dims: %s", err); return; }
    hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &d, 1);
    const hp_coords *co = hp_comm_coords(comm);
    const size_t nq = (size_t)B * S * H * HD, nk = (size_t)B * S * Hkv * HD;
    float *q = alloc(nq), *k = alloc(nk), *v = alloc(nk), *dout = alloc(nq);
    fill(q, nq, 1); fill(k, nk, 2); fill(v, nk, 3); fill(dout, nq, 4);
    // the reference: causal attention over all S positions in one call
    int pos_all[S];
    for (int i = 0; i < S; i++) pos_all[i] = i;
    float *out = alloc(nq), *lse = alloc((size_t)B * S * H), *dq = alloc(nq), *dk = alloc(nk), *dv = alloc(nk);
    for (size_t i = 0; i < (size_t)B * S * H; i++) lse[i] = -INFINITY;
    hp_attention_forward(out, lse, q, k, v, pos_all, pos_all, B, S, S, H, Hkv, HD, 0, S, 0, S);
    hp_attention_backward(dq, dk, dv, dout, out, lse, q, k, v, pos_all, pos_all, B, S, S, H, Hkv, HD, 0, S, 0, S);
    // this rank's tokens
    const int Sc = S / C, Su = Sc / U;
    int pos_cp[S], pos[S];
    hp_cp_positions(pos_cp, S, C, co->c, 1);
    hp_seq_positions(pos, S, C, co->c, U, co->u, 1);
    float *ql = alloc((size_t)B * Su * H * HD), *kl = alloc((size_t)B * Su * Hkv * HD), *vl = alloc((size_t)B * Su * Hkv * HD);
    float *dl = alloc((size_t)B * Su * H * HD), *ol = alloc((size_t)B * Su * H * HD);
    float *dql = alloc((size_t)B * Su * H * HD), *dkl = alloc((size_t)B * Su * Hkv * HD), *dvl = alloc((size_t)B * Su * Hkv * HD);
    take_rows(ql, q, pos, Su, H * HD); take_rows(kl, k, pos, Su, Hkv * HD);
    take_rows(vl, v, pos, Su, Hkv * HD); take_rows(dl, dout, pos, Su, H * HD);
    for (size_t i = 0; i < (size_t)B * Su * H * HD; i++) dql[i] = DINIT;
    for (size_t i = 0; i < (size_t)B * Su * Hkv * HD; i++) dkl[i] = dvl[i] = DINIT;
    hp_ulysses_attn *ua = hp_ulysses_attn_init(B, Su, H, Hkv, HD, U, C, 0);
    CHECK(ua != NULL, "init U %d Hkv %d", U, Hkv);
    if (!ua) return;
    hp_comm_reset_stats(comm);
    hp_ulysses_attention_forward(ua, comm, rotate, 1, ol, ql, kl, vl, pos_cp);
    const uint64_t fwd_bytes = hp_comm_bytes(comm, HP_G_ULYSSES, HP_OP_ALLTOALL);
    hp_ulysses_attention_backward(ua, comm, rotate, 1, dql, dkl, dvl, dl, pos_cp);
    const uint64_t all_bytes = hp_comm_bytes(comm, HP_G_ULYSSES, HP_OP_ALLTOALL);
    // the expected rows
    float *ow = alloc((size_t)B * Su * H * HD), *dqw = alloc((size_t)B * Su * H * HD);
    float *dkw = alloc((size_t)B * Su * Hkv * HD), *dvw = alloc((size_t)B * Su * Hkv * HD);
    take_rows(ow, out, pos, Su, H * HD); take_rows(dqw, dq, pos, Su, H * HD);
    take_rows(dkw, dk, pos, Su, Hkv * HD); take_rows(dvw, dv, pos, Su, Hkv * HD);
    const double e_out = rel_err(ol, ow, 0, (size_t)B * Su * H * HD);
    const double e_dq = rel_err(dql, dqw, DINIT, (size_t)B * Su * H * HD);
    const double e_dk = rel_err(dkl, dkw, DINIT, (size_t)B * Su * Hkv * HD);
    const double e_dv = rel_err(dvl, dvw, DINIT, (size_t)B * Su * Hkv * HD);
    const char *rot = rotate == HP_ROTATE_RING ? "ring" : "allgather";
    CHECK(e_out <= TOL && e_dq <= TOL && e_dk <= TOL && e_dv <= TOL,
          "U %d C %d Hkv %d %s: out %.2e dq %.2e dk %.2e dv %.2e", U, C, Hkv, rot, e_out, e_dq, e_dk, e_dv);
    // traffic: each exchange sends (U-1)/U of its buffer; q-sized and kv-sized (after repetition)
    const uint64_t q_n = (uint64_t)B * Su * H * HD, kv_n = (uint64_t)B * Su * (Hkv > U ? Hkv : U) * HD;
    const uint64_t want_fwd = (2 * q_n + 2 * kv_n) / U * (U - 1) * 4;
    CHECK(fwd_bytes == want_fwd && all_bytes == 2 * want_fwd, "U %d Hkv %d: ulysses bytes %llu / %llu, want %llu / %llu",
          U, Hkv, (unsigned long long)fwd_bytes, (unsigned long long)all_bytes,
          (unsigned long long)want_fwd, (unsigned long long)(2 * want_fwd));
    if (g_wrank == 0)
        printf("U %d x C %d, Hkv %d (kv repeated x%d), %-9s: out %.2e dq %.2e dk %.2e dv %.2e\n", U, C, Hkv,
               hp_ulysses_kv_repeat(Hkv, U), rot, e_out, e_dq, e_dk, e_dv);
    hp_ulysses_attn_free(ua);
    const attn_in same[2] = { { ql, kl, vl, dl }, { ql, kl, vl, dl } };
    check_shared(comm, U, C, Hkv, rotate, 0, same, pos_cp);
    // the bf16 policy: bf16 inputs, the second attention's others than the first's
    const size_t lq = (size_t)B * Su * H * HD, lk = (size_t)B * Su * Hkv * HD;
    float *b16[8] = { bf16_copy(ql, lq, 1), bf16_copy(kl, lk, 1), bf16_copy(vl, lk, 1), bf16_copy(dl, lq, 1),
                      bf16_copy(ql, lq, 0.5f), bf16_copy(kl, lk, 2), bf16_copy(vl, lk, -1), bf16_copy(dl, lq, 0.25f) };
    const attn_in two[2] = { { b16[0], b16[1], b16[2], b16[3] }, { b16[4], b16[5], b16[6], b16[7] } };
    check_shared(comm, U, C, Hkv, rotate, 1, two, pos_cp);
    for (int i = 0; i < 8; i++) free(b16[i]);
    free(q); free(k); free(v); free(dout); free(out); free(lse); free(dq); free(dk); free(dv);
    free(ql); free(kl); free(vl); free(dl); free(ol); free(dql); free(dkl); free(dvl);
    free(ow); free(dqw); free(dkw); free(dvw);
    hp_comm_free(comm);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    const int two_d = argc > 1 && !strcmp(argv[1], "2x2");
    for (int Hkv = 2; Hkv <= 4; Hkv += 2) {
        if (two_d) {
            run_case(2, 2, Hkv, HP_ROTATE_ALLGATHER);
            run_case(2, 2, Hkv, HP_ROTATE_RING);
        } else {
            run_case(world, 1, Hkv, HP_ROTATE_ALLGATHER);
        }
    }
    int f = g_fail;
    MPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_wrank == 0) printf("test_ulysses: %d passed, %d failed\n", g_pass, f);
    MPI_Finalize();
    return f ? 1 : 0;
}
