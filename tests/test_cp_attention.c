// test_cp_attention.c - ring attention (cp.h) against plain causal attention over the whole
// sequence, under mpirun. Every rank builds the same full q/k/v/dout, computes the
// reference with one kernel call over all S, takes its cp rows and runs the cp version;
// out, lse, dq, dk, dv must match to 1e-5 relative (Frobenius, over all ranks), for both
// rotate methods and both layouts. Also checked: the traffic on the cp group equals the
// formula of docs/traffic_cp.md, the block-skip counters (equal work per rank with the
// head-tail layout), bit-identical reruns, bit-identical out/lse/dq across rotate methods,
// accumulation into the grads, and empty input (B = 0, Sl = 0).
//   mpirun -np C test_cp_attention          cp = C = world
//   mpirun -np 4 test_cp_attention tp2      cp = 2, tp = 2: cp groups {0,2} and {1,3}
//   mpirun -np 2 test_cp_attention bad      odd local length with head-tail -> error exit
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/comm.h"
#include "hyperpar/bf16.h"
#include "hyperpar/cp.h"
#include "hyperpar/cp_stats.h"
#include "hyperpar/kernels.h"
#include "hyperpar/rng.h"

enum { S = 64, B = 2, H = 4, Hkv = 2, HD = 8 };
#define TOL 1e-5
#define DINIT 0.5f // grads start here: the cp backward must add, not overwrite

#define TEST_B B
#define TEST_S S
#include "test_mpi_util.h"

static void fill(float *x, size_t n, uint64_t stream) { fill_seeded(x, n, 1234, stream); }

typedef struct {
    float *q, *k, *v, *dout;            // full inputs (B,S,H,hd) / (B,S,Hkv,hd)
    float *out, *lse, *dq, *dk, *dv;     // full reference results
} full_set;

typedef struct {
    float *out, *lse, *dq, *dk, *dv;     // one cp run's local results
} local_res;

// Expected bytes on the cp group for one forward + backward (docs/traffic_cp.md).
static void expected_traffic(uint64_t want[HP_OP_COUNT], uint64_t calls[HP_OP_COUNT],
                             hp_cp_rotate rot, int C, int Sl) {
    memset(want, 0, HP_OP_COUNT * sizeof *want);
    memset(calls, 0, HP_OP_COUNT * sizeof *calls);
    if (C == 1) return;
    const uint64_t n = (uint64_t)B * Sl * Hkv * HD; // floats of one rank's K (and of V)
    if (rot == HP_ROTATE_ALLGATHER) {
        want[HP_OP_ALLGATHER] = 2 * (2 * n * 4);          // K,V gathered in fwd and again in bwd
        calls[HP_OP_ALLGATHER] = 2;
        want[HP_OP_REDUCE_SCATTER] = (uint64_t)C * 2 * n * 4; // dK,dV slots of all C sources
        calls[HP_OP_REDUCE_SCATTER] = 1;
    } else {
        want[HP_OP_SENDRECV] = (uint64_t)(C - 1) * 2 * n * 4   // fwd: K,V shifted C-1 times
                             + (uint64_t)(C - 1) * 4 * n * 4   // bwd: K,V,dK,dV shifted C-1 times
                             + 2 * n * 4;                      // bwd: dK,dV home, one last hop
        calls[HP_OP_SENDRECV] = (uint64_t)(C - 1) + (uint64_t)C;
    }
}

static void run_case(hp_comm *comm, const full_set *f, hp_cp_rotate rot, int lb, local_res *res) {
    const int C = hp_comm_size(comm, HP_G_CP), cr = hp_comm_rank(comm, HP_G_CP), Sl = S / C;
    const char *rname = rot == HP_ROTATE_RING ? "ring" : "allgather";
    const char *lname = lb ? "head-tail" : "contiguous";
    const size_t nq = (size_t)B * Sl * H * HD, nk = (size_t)B * Sl * Hkv * HD, nl = (size_t)B * Sl * H;
    int pos[S];
    hp_cp_positions(pos, S, C, cr, lb);
    float *q = alloc(nq), *k = alloc(nk), *v = alloc(nk), *dout = alloc(nq);
    float *wout = alloc(nq), *wlse = alloc(nl), *wdq = alloc(nq), *wdk = alloc(nk), *wdv = alloc(nk);
    take_rows(q, f->q, pos, Sl, H * HD);
    take_rows(k, f->k, pos, Sl, Hkv * HD);
    take_rows(v, f->v, pos, Sl, Hkv * HD);
    take_rows(dout, f->dout, pos, Sl, H * HD);
    take_rows(wout, f->out, pos, Sl, H * HD);
    take_rows(wlse, f->lse, pos, Sl, H);
    take_rows(wdq, f->dq, pos, Sl, H * HD);
    take_rows(wdk, f->dk, pos, Sl, Hkv * HD);
    take_rows(wdv, f->dv, pos, Sl, Hkv * HD);

    // out/lse start as garbage: the forward must overwrite them
    res->out = alloc(nq); res->lse = alloc(nl);
    res->dq = alloc(nq); res->dk = alloc(nk); res->dv = alloc(nk);
    for (size_t i = 0; i < nq; i++) { res->out[i] = 7.0f; res->dq[i] = DINIT; }
    for (size_t i = 0; i < nl; i++) res->lse[i] = 7.0f;
    for (size_t i = 0; i < nk; i++) { res->dk[i] = DINIT; res->dv[i] = DINIT; }

    hp_comm_reset_stats(comm);
    hp_cp_stats_reset();
    hp_cp_attention_forward(comm, rot, lb, 0, res->out, res->lse, q, k, v, pos, B, Sl, H, Hkv, HD);
    hp_cp_attention_backward(comm, rot, lb, 0, res->dq, res->dk, res->dv, dout, res->out, res->lse,
                             q, k, v, pos, B, Sl, H, Hkv, HD);
    hp_cp_stats st;
    hp_cp_stats_get(&st);

    // ---- numerics against the single-sequence reference
    double e_out = rel_err(res->out, wout, 0, nq), e_lse = rel_err(res->lse, wlse, 0, nl);
    double e_dq = rel_err(res->dq, wdq, DINIT, nq), e_dk = rel_err(res->dk, wdk, DINIT, nk);
    double e_dv = rel_err(res->dv, wdv, DINIT, nk);
    if (g_wrank == 0)
        printf("C=%d %-9s %-10s rel err: out %.2e lse %.2e dq %.2e dk %.2e dv %.2e\n",
               C, rname, lname, e_out, e_lse, e_dq, e_dk, e_dv);
    CHECK(e_out <= TOL, "C=%d %s %s: out rel err %.3e", C, rname, lname, e_out);
    CHECK(e_lse <= TOL, "C=%d %s %s: lse rel err %.3e", C, rname, lname, e_lse);
    CHECK(e_dq <= TOL, "C=%d %s %s: dq rel err %.3e", C, rname, lname, e_dq);
    CHECK(e_dk <= TOL, "C=%d %s %s: dk rel err %.3e", C, rname, lname, e_dk);
    CHECK(e_dv <= TOL, "C=%d %s %s: dv rel err %.3e", C, rname, lname, e_dv);

    // ---- traffic on the cp group (and nowhere else)
    uint64_t want[HP_OP_COUNT], wcalls[HP_OP_COUNT];
    expected_traffic(want, wcalls, rot, C, Sl);
    for (int op = 0; op < HP_OP_COUNT; op++) {
        uint64_t got = hp_comm_bytes(comm, HP_G_CP, (hp_op_kind)op);
        uint64_t gc = hp_comm_calls(comm, HP_G_CP, (hp_op_kind)op);
        CHECK(got == want[op], "C=%d %s %s: cp %s bytes %llu, formula %llu", C, rname, lname,
              hp_op_name((hp_op_kind)op), (unsigned long long)got, (unsigned long long)want[op]);
        CHECK(gc == wcalls[op], "C=%d %s %s: cp %s calls %llu, expected %llu", C, rname, lname,
              hp_op_name((hp_op_kind)op), (unsigned long long)gc, (unsigned long long)wcalls[op]);
    }
    uint64_t other = 0;
    for (int g = 0; g < HP_G_COUNT; g++)
        for (int op = 0; op < HP_OP_COUNT; op++)
            if (g != HP_G_CP) other += hp_comm_bytes(comm, (hp_group_kind)g, (hp_op_kind)op);
    CHECK(other == 0, "C=%d %s %s: %llu bytes counted outside the cp group", C, rname, lname,
          (unsigned long long)other);

    // ---- block skipping: the work handed to the kernel
    const uint64_t BH = (uint64_t)B * H;
    uint64_t wpairs, wfull, wdiag, wskip;
    if (C == 1) { wpairs = BH * S * S; wfull = 0; wdiag = 1; wskip = 0; }
    else if (lb) { // chunk r sees r earlier chunks + itself, chunk 2C-1-r sees 2C-1-r + itself
        uint64_t kk = (uint64_t)(Sl / 2) * (Sl / 2);
        wpairs = BH * (2 * C + 1) * kk; wfull = 2 * C - 1; wdiag = 2; wskip = 2 * C - 1;
    } else {
        wpairs = BH * (uint64_t)(cr + 1) * Sl * Sl; wfull = cr; wdiag = 1; wskip = C - 1 - cr;
    }
    CHECK(st.fwd_pairs == wpairs && st.bwd_pairs == wpairs,
          "C=%d %s %s cp rank %d: pairs fwd %llu bwd %llu, expected %llu", C, rname, lname, cr,
          (unsigned long long)st.fwd_pairs, (unsigned long long)st.bwd_pairs,
          (unsigned long long)wpairs);
    CHECK(st.full == wfull && st.diag == wdiag && st.skipped == wskip && st.fwd_calls == wfull + wdiag
          && st.bwd_calls == st.fwd_calls,
          "C=%d %s %s cp rank %d: blocks full %llu diag %llu skipped %llu calls %llu/%llu", C, rname,
          lname, cr, (unsigned long long)st.full, (unsigned long long)st.diag,
          (unsigned long long)st.skipped, (unsigned long long)st.fwd_calls,
          (unsigned long long)st.bwd_calls);
    if (lb) { // balanced: the same number of pairs on every rank
        unsigned long long mn = st.fwd_pairs, mx = st.fwd_pairs;
        MPI_Allreduce(MPI_IN_PLACE, &mn, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &mx, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        CHECK(mn == mx, "C=%d %s head-tail: work not balanced, pairs %llu..%llu", C, rname, mn, mx);
        if (g_wrank == 0 && rot == HP_ROTATE_ALLGATHER)
            printf("C=%d head-tail: %llu query-key pairs per rank (no skipping: %llu)\n", C, mx,
                   (unsigned long long)(BH * C * Sl * Sl));
    }

    // ---- a rerun is bit-identical
    float *out2 = alloc(nq), *lse2 = alloc(nl), *dq2 = alloc(nq), *dk2 = alloc(nk), *dv2 = alloc(nk);
    for (size_t i = 0; i < nq; i++) dq2[i] = DINIT;
    for (size_t i = 0; i < nk; i++) { dk2[i] = DINIT; dv2[i] = DINIT; }
    hp_cp_attention_forward(comm, rot, lb, 0, out2, lse2, q, k, v, pos, B, Sl, H, Hkv, HD);
    hp_cp_attention_backward(comm, rot, lb, 0, dq2, dk2, dv2, dout, out2, lse2, q, k, v, pos,
                             B, Sl, H, Hkv, HD);
    int same = !memcmp(out2, res->out, nq * 4) && !memcmp(lse2, res->lse, nl * 4) &&
               !memcmp(dq2, res->dq, nq * 4) && !memcmp(dk2, res->dk, nk * 4) &&
               !memcmp(dv2, res->dv, nk * 4);
    CHECK(same, "C=%d %s %s: rerun is not bit-identical", C, rname, lname);

    // ---- K/V in 2 bytes (the bf16 policy): with bf16 values k and v, the same bits as the
    // 4-byte exchange of the same values
    float *kb = alloc(nk), *vb = alloc(nk);
    memcpy(kb, k, nk * 4); memcpy(vb, v, nk * 4);
    hp_bf16_round(kb, nk); hp_bf16_round(vb, nk);
    float *o[2], *l[2], *gq[2], *gk[2], *gv[2];
    for (int w = 0; w < 2; w++) {
        o[w] = alloc(nq); l[w] = alloc(nl); gq[w] = alloc(nq); gk[w] = alloc(nk); gv[w] = alloc(nk);
        for (size_t i = 0; i < nq; i++) gq[w][i] = DINIT;
        for (size_t i = 0; i < nk; i++) { gk[w][i] = DINIT; gv[w][i] = DINIT; }
        hp_cp_attention_forward(comm, rot, lb, w, o[w], l[w], q, kb, vb, pos, B, Sl, H, Hkv, HD);
        hp_cp_attention_backward(comm, rot, lb, w, gq[w], gk[w], gv[w], dout, o[w], l[w], q, kb, vb,
                                 pos, B, Sl, H, Hkv, HD);
    }
    same = !memcmp(o[0], o[1], nq * 4) && !memcmp(l[0], l[1], nl * 4) && !memcmp(gq[0], gq[1], nq * 4) &&
           !memcmp(gk[0], gk[1], nk * 4) && !memcmp(gv[0], gv[1], nk * 4);
    CHECK(same, "C=%d %s %s: K/V in 2 bytes differs from the 4-byte exchange of the same bf16 values",
          C, rname, lname);
    for (int w = 0; w < 2; w++) { free(o[w]); free(l[w]); free(gq[w]); free(gk[w]); free(gv[w]); }
    free(kb); free(vb);

    free(out2); free(lse2); free(dq2); free(dk2); free(dv2);
    free(q); free(k); free(v); free(dout);
    free(wout); free(wlse); free(wdq); free(wdk); free(wdv);
}

static void free_res(local_res *r) { free(r->out); free(r->lse); free(r->dq); free(r->dk); free(r->dv); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int W;
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
    const char *mode = argc > 1 ? argv[1] : "";
    const int tp = strcmp(mode, "tp2") == 0 ? 2 : 1;

    hp_dims d = hp_dims_default();
    d.tp = tp;
    d.cp = W / tp;
    d.world = W;
    char err[256];
    if (W % tp != 0 || hp_dims_validate(&d, NULL, NULL, err, sizeof err) != 0) {
        if (g_wrank == 0) printf("test_cp_attention: bad mesh for %d ranks: %s\n", W, err);
        MPI_Finalize();
        return 1;
    }
    hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &d, 1);
    const int C = hp_comm_size(comm, HP_G_CP);

    if (strcmp(mode, "bad") == 0) { // an odd local length cannot be cut into head and tail
        float x[2 * 3 * H * HD], l[2 * 3 * H];
        int pos[3] = {0, 1, 2};
        hp_cp_attention_forward(comm, HP_ROTATE_RING, 1, 0, x, l, x, x, x, pos, 1, 3, H, Hkv, HD);
        printf("test_cp_attention: bad arguments were accepted\n");
        MPI_Finalize();
        return 1;
    }
    if (S % (2 * C) != 0) {
        if (g_wrank == 0) printf("test_cp_attention: S=%d not divisible by 2*C=%d\n", S, 2 * C);
        MPI_Finalize();
        return 1;
    }

    // ---- the full-sequence reference, identical on every rank
    const size_t NQ = (size_t)B * S * H * HD, NK = (size_t)B * S * Hkv * HD, NL = (size_t)B * S * H;
    full_set f = { alloc(NQ), alloc(NK), alloc(NK), alloc(NQ),
                   alloc(NQ), alloc(NL), alloc(NQ), alloc(NK), alloc(NK) };
    fill(f.q, NQ, 1); fill(f.k, NK, 2); fill(f.v, NK, 3); fill(f.dout, NQ, 4);
    int fpos[S];
    for (int j = 0; j < S; j++) fpos[j] = j;
    for (size_t i = 0; i < NL; i++) f.lse[i] = -INFINITY;
    hp_attention_forward(f.out, f.lse, f.q, f.k, f.v, fpos, fpos, B, S, S, H, Hkv, HD, 0, S, 0, S);
    hp_attention_backward(f.dq, f.dk, f.dv, f.dout, f.out, f.lse, f.q, f.k, f.v, fpos, fpos,
                          B, S, S, H, Hkv, HD, 0, S, 0, S);

    const int Sl = S / C;
    const size_t nq = (size_t)B * Sl * H * HD, nl = (size_t)B * Sl * H;
    for (int lb = 1; lb >= 0; lb--) {
        local_res ag, ring;
        run_case(comm, &f, HP_ROTATE_ALLGATHER, lb, &ag);
        run_case(comm, &f, HP_ROTATE_RING, lb, &ring);
        // the same blocks merge in the same order whichever way they travelled
        int same = !memcmp(ag.out, ring.out, nq * 4) && !memcmp(ag.lse, ring.lse, nl * 4) &&
                   !memcmp(ag.dq, ring.dq, nq * 4);
        CHECK(same, "C=%d lb=%d: out/lse/dq differ between allgather and ring", C, lb);
        free_res(&ag);
        free_res(&ring);
    }

    // ---- empty input: nothing to do, nothing sent, no crash (NULL buffers are fine)
    hp_comm_reset_stats(comm);
    hp_cp_attention_forward(comm, HP_ROTATE_RING, 1, 0, NULL, NULL, NULL, NULL, NULL, NULL, 0, Sl, H, Hkv, HD);
    hp_cp_attention_backward(comm, HP_ROTATE_ALLGATHER, 1, 0, NULL, NULL, NULL, NULL, NULL, NULL,
                             NULL, NULL, NULL, NULL, B, 0, H, Hkv, HD);
    uint64_t tot = 0;
    for (int op = 0; op < HP_OP_COUNT; op++) tot += hp_comm_calls(comm, HP_G_CP, (hp_op_kind)op);
    CHECK(tot == 0, "empty input made %llu cp calls", (unsigned long long)tot);

    free(f.q); free(f.k); free(f.v); free(f.dout);
    free(f.out); free(f.lse); free(f.dq); free(f.dk); free(f.dv);
    hp_comm_free(comm);

    int fails = g_fail;
    MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_wrank == 0)
        printf("test_cp_attention (world %d, cp %d%s): %d passed, %d failed\n", W, C,
               tp > 1 ? ", tp 2" : "", g_pass, fails);
    MPI_Finalize();
    return fails ? 1 : 0;
}
