// test_mesh.c - the device mesh as a pure function (no MPI): the worked tables of
// torchtitan-semantics.md §2.1-2.3 literally, then every legal configuration up to 16 ranks.
//
// Exhaustive part, for every (P in {1,2}, R, S, C, T, EP, ET) with P*R*S*C*T <= 16 that obeys
// §1/§9 (EP | S*C*T; ET in {1,T}; ET > 1 needs EP > 1; ET = T needs EP | S*C):
//   - both views are bijections rank <-> coordinates; fsdp/batch/loss indices follow §2
//   - every group kind partitions the world; every group has hp_mesh_group_size members,
//     which equals the §3 formula; members are ascending; each member finds the same group
//     at the index given by its coordinates
//   - ep groups are contiguous blocks (ET = 1) or blocks strided by T (ET = T); etp groups
//     are the tp groups (ET = T) or singletons; ep_etp = the union of its members' ep groups
//     and of their etp groups; efsdp * ep * etp = S*C*T
// For P = 1 it also checks that hp_dims_validate accepts exactly these configurations.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/dims.h"
#include "hyperpar/mesh.h"
#include "test_check.h"



static hp_dims mk_u(int P, int R, int S, int U, int C, int T, int EP, int ET) {
    hp_dims d = hp_dims_default();
    d.pp = P; d.dp_replicate = R; d.dp_shard = S; d.ulysses = U; d.cp = C; d.tp = T; d.ep = EP; d.etp = ET;
    d.sp = T > 1;
    d.world = P * R * S * U * C * T;
    return d;
}

static hp_dims mk(int P, int R, int S, int C, int T, int EP, int ET) {
    return mk_u(P, R, S, 1, C, T, EP, ET);
}

static const char *dims_str(const hp_dims *d) {
    static char buf[128];
    snprintf(buf, sizeof buf, "P%d R%d S%d U%d C%d T%d EP%d ET%d", d->pp, d->dp_replicate,
             d->dp_shard, d->ulysses, d->cp, d->tp, d->ep, d->etp);
    return buf;
}

// All groups of kind g as "{a,b} {c,d} ...", in order of their smallest rank.
static void groups_str(const hp_dims *d, hp_group_kind g, char *out, size_t n) {
    int members[64];
    char seen[64] = { 0 };
    size_t len = 0;
    out[0] = '\0';
    for (int rank = 0; rank < d->world; rank++) {
        if (seen[rank]) continue;
        int k = hp_mesh_group(d, g, rank, members, NULL);
        len += (size_t)snprintf(out + len, n - len, "%s{", len ? " " : "");
        for (int i = 0; i < k; i++) {
            seen[members[i]] = 1;
            len += (size_t)snprintf(out + len, n - len, i ? ",%d" : "%d", members[i]);
        }
        len += (size_t)snprintf(out + len, n - len, "}");
    }
}

static void expect_groups(const hp_dims *d, hp_group_kind g, const char *want) {
    char got[1024];
    groups_str(d, g, got, sizeof got);
    CHECK(!strcmp(got, want), "[%s] %s groups: got %s, want %s", dims_str(d), hp_group_name(g), got, want);
}

// ---------------------------------------------------------------------------------------------
// §2.1 dense: W=8, (R,S,C,T) = (1,2,2,2)

static void test_worked_dense(void) {
    hp_dims d = mk(1, 1, 2, 2, 2, 1, 1);
    // rank | s c t | fsdp_idx | batch
    static const int table[8][5] = {
        { 0, 0, 0, 0, 0 }, { 0, 0, 1, 0, 0 }, { 0, 1, 0, 1, 0 }, { 0, 1, 1, 1, 0 },
        { 1, 0, 0, 2, 1 }, { 1, 0, 1, 2, 1 }, { 1, 1, 0, 3, 1 }, { 1, 1, 1, 3, 1 },
    };
    for (int rank = 0; rank < 8; rank++) {
        hp_coords c;
        hp_mesh_coords(&d, rank, &c);
        CHECK(c.s == table[rank][0] && c.c == table[rank][1] && c.t == table[rank][2] &&
              c.fsdp == table[rank][3] && c.batch == table[rank][4] && c.p == 0 && c.r == 0,
              "§2.1 rank %d: s c t fsdp batch = %d %d %d %d %d", rank, c.s, c.c, c.t, c.fsdp, c.batch);
    }
    expect_groups(&d, HP_G_TP, "{0,1} {2,3} {4,5} {6,7}");
    expect_groups(&d, HP_G_CP, "{0,2} {1,3} {4,6} {5,7}");
    expect_groups(&d, HP_G_DP_SHARD, "{0,4} {1,5} {2,6} {3,7}");
    expect_groups(&d, HP_G_BATCH, "{0,4} {1,5} {2,6} {3,7}");
    expect_groups(&d, HP_G_FSDP, "{0,2,4,6} {1,3,5,7}");
    expect_groups(&d, HP_G_LOSS, "{0,2,4,6} {1,3,5,7}");
    expect_groups(&d, HP_G_WORLD, "{0,1,2,3,4,5,6,7}");
    int members[8], me = -1;
    hp_mesh_group(&d, HP_G_FSDP, 6, members, &me);
    CHECK(me == 3, "§2.1 rank 6 local fsdp rank: got %d, want 3", me);
}

// ---------------------------------------------------------------------------------------------
// §2.2 MoE on the same 8 ranks (S*C*T = 8)

static void test_worked_moe(void) {
    hp_dims d = mk(1, 1, 2, 2, 2, 4, 1);   // EP=4, ET=1
    CHECK(hp_dims_efsdp(&d) == 2, "§2.2 EP4 ET1 efsdp = %d", hp_dims_efsdp(&d));
    expect_groups(&d, HP_G_EP, "{0,1,2,3} {4,5,6,7}");
    expect_groups(&d, HP_G_EFSDP, "{0,4} {1,5} {2,6} {3,7}");
    expect_groups(&d, HP_G_ETP, "{0} {1} {2} {3} {4} {5} {6} {7}");
    hp_coords c;
    hp_mesh_coords(&d, 5, &c);
    CHECK(c.ep == 1, "§2.2 rank 5 ep_idx = %d, want 1", c.ep);
    int members[8], me = -1;
    int n = hp_mesh_group(&d, HP_G_EFSDP, 5, members, &me);
    CHECK(n == 2 && members[0] == 1 && members[1] == 5 && me == 1, "§2.2 rank 5 efsdp group");

    d = mk(1, 1, 2, 2, 2, 4, 2);           // EP=4, ET=T=2
    CHECK(hp_dims_efsdp(&d) == 1, "§2.2 EP4 ET2 efsdp = %d", hp_dims_efsdp(&d));
    expect_groups(&d, HP_G_EP, "{0,2,4,6} {1,3,5,7}");
    expect_groups(&d, HP_G_EFSDP, "{0} {1} {2} {3} {4} {5} {6} {7}");
    expect_groups(&d, HP_G_ETP, "{0,1} {2,3} {4,5} {6,7}");
    expect_groups(&d, HP_G_EP_ETP, "{0,1,2,3,4,5,6,7}");

    d = mk(1, 1, 2, 2, 2, 2, 2);           // EP=2, ET=T=2
    CHECK(hp_dims_efsdp(&d) == 2, "§2.2 EP2 ET2 efsdp = %d", hp_dims_efsdp(&d));
    expect_groups(&d, HP_G_EP, "{0,2} {1,3} {4,6} {5,7}");
    expect_groups(&d, HP_G_EFSDP, "{0,4} {1,5} {2,6} {3,7}");
    expect_groups(&d, HP_G_ETP, "{0,1} {2,3} {4,5} {6,7}");

    d = mk(1, 1, 2, 2, 2, 2, 1);           // EP=2 (HEAD; ET=1)
    CHECK(hp_dims_efsdp(&d) == 4, "§2.2 EP2 ET1 efsdp = %d", hp_dims_efsdp(&d));
    expect_groups(&d, HP_G_EP, "{0,1} {2,3} {4,5} {6,7}");
    expect_groups(&d, HP_G_EFSDP, "{0,2,4,6} {1,3,5,7}");
}

// ---------------------------------------------------------------------------------------------
// §2.3 HSDP + PP + MoE: W=16, (P,R,S,C,T) = (2,2,2,1,2), EP=4. pp > 1 is refused by
// hp_dims_validate, but the mesh function is defined for it.

static void test_worked_hsdp_pp(void) {
    hp_dims d = mk(2, 2, 2, 1, 2, 4, 1);
    CHECK(hp_dims_efsdp(&d) == 1, "§2.3 efsdp = %d", hp_dims_efsdp(&d));
    for (int rank = 0; rank < 16; rank++) {
        hp_coords c;
        hp_mesh_coords(&d, rank, &c);
        CHECK(rank == c.p * 8 + c.r * 4 + c.s * 2 + c.t && c.c == 0 && c.p == rank / 8 &&
              c.batch == 2 * c.r + c.s, "§2.3 rank %d coords", rank);
    }
    expect_groups(&d, HP_G_PP, "{0,8} {1,9} {2,10} {3,11} {4,12} {5,13} {6,14} {7,15}");
    expect_groups(&d, HP_G_TP, "{0,1} {2,3} {4,5} {6,7} {8,9} {10,11} {12,13} {14,15}");
    expect_groups(&d, HP_G_FSDP, "{0,2} {1,3} {4,6} {5,7} {8,10} {9,11} {12,14} {13,15}");
    expect_groups(&d, HP_G_DP_REPLICATE, "{0,4} {1,5} {2,6} {3,7} {8,12} {9,13} {10,14} {11,15}");
    expect_groups(&d, HP_G_BATCH, "{0,2,4,6} {1,3,5,7} {8,10,12,14} {9,11,13,15}");
    expect_groups(&d, HP_G_LOSS, "{0,2,4,6} {1,3,5,7} {8,10,12,14} {9,11,13,15}");
    expect_groups(&d, HP_G_EP, "{0,1,2,3} {4,5,6,7} {8,9,10,11} {12,13,14,15}");
    // expert HSDP mesh [dp_replicate, efsdp] = 2x1: efsdp singletons, replicated over R
    expect_groups(&d, HP_G_EFSDP, "{0} {1} {2} {3} {4} {5} {6} {7} {8} {9} {10} {11} {12} {13} {14} {15}");
    // HSDP dense mesh of rank 0: reduce-scatter over {0,2}, all-reduce over {0,4}
    int m[16];
    int n = hp_mesh_group(&d, HP_G_FSDP, 0, m, NULL);
    CHECK(n == 2 && m[0] == 0 && m[1] == 2, "§2.3 rank 0 fsdp group");
    n = hp_mesh_group(&d, HP_G_DP_REPLICATE, 0, m, NULL);
    CHECK(n == 2 && m[0] == 0 && m[1] == 4, "§2.3 rank 0 dp_replicate group");
}

// ---------------------------------------------------------------------------------------------
// exhaustive

static int legal(int S, int C, int T, int EP, int ET) {
    if ((S * C * T) % EP) return 0;
    if (ET > 1 && EP == 1) return 0;
    if (EP > 1 && ET != 1 && ET != T) return 0;
    if (EP > 1 && ET == T && T > 1 && (S * C) % EP) return 0;
    return 1;
}

// §3 sizes of each group kind.
static int formula_size(const hp_dims *d, hp_group_kind g) {
    const int P = d->pp, R = d->dp_replicate, S = d->dp_shard * d->ulysses, C = d->cp, T = d->tp;
    switch (g) {
    case HP_G_WORLD: return P * R * S * C * T;
    case HP_G_ULYSSES: return d->ulysses;
    case HP_G_PP: return P;
    case HP_G_DP_REPLICATE: return R;
    case HP_G_DP_SHARD: return d->dp_shard;
    case HP_G_CP: return C;
    case HP_G_TP: return T;
    case HP_G_FSDP: return S * C;
    case HP_G_BATCH: return R * d->dp_shard;
    case HP_G_LOSS: return R * S * C;
    case HP_G_EP: return d->ep;
    case HP_G_ETP: return d->etp;
    case HP_G_EFSDP: return S * C * T / (d->ep * d->etp);
    case HP_G_EP_ETP: return d->ep * d->etp;
    default: return -1;
    }
}

// The local index a rank must have in its group of kind g (row-major over the group's axes).
static int expected_index(const hp_dims *d, hp_group_kind g, int rank, const hp_coords *c) {
    switch (g) {
    case HP_G_WORLD: return rank;
    case HP_G_PP: return c->p;
    case HP_G_DP_REPLICATE: return c->r;
    case HP_G_DP_SHARD: return c->s;
    case HP_G_ULYSSES: return c->u;
    case HP_G_CP: return c->c;
    case HP_G_TP: return c->t;
    case HP_G_FSDP: return c->fsdp;
    case HP_G_BATCH: return c->batch;
    case HP_G_LOSS: return c->loss;
    case HP_G_EP: return c->ep;
    case HP_G_ETP: return c->etp;
    case HP_G_EFSDP: return c->efsdp;
    case HP_G_EP_ETP: return c->ep * d->etp + c->etp;
    default: return -1;
    }
}

static int contains(const int *a, int n, int x) {
    for (int i = 0; i < n; i++) if (a[i] == x) return 1;
    return 0;
}

static void check_config(const hp_dims *d) {
    const int W = d->world, S = d->dp_shard, U = d->ulysses, C = d->cp, T = d->tp, EP = d->ep, ET = d->etp;
    const int SCT = S * U * C * T;
    const char *name = dims_str(d);
    int fails_before = check_failed;

    CHECK(hp_dims_efsdp(d) * EP * ET == SCT, "[%s] efsdp*ep*etp != S*C*T", name);
    // coordinates: both views are bijections and follow the §2 formulas
    char seen_dense[16] = { 0 }, seen_sparse[16] = { 0 };
    for (int rank = 0; rank < W; rank++) {
        hp_coords c;
        hp_mesh_coords(d, rank, &c);
        int inner = rank % SCT;
        int dense = ((((c.p * d->dp_replicate + c.r) * S + c.s) * U + c.u) * C + c.c) * T + c.t;
        int sparse = ((c.p * d->dp_replicate + c.r) * hp_dims_efsdp(d) + c.efsdp) * EP * ET + c.ep * ET + c.etp;
        CHECK(dense == rank && sparse == rank, "[%s] rank %d: coords do not rebuild the rank", name, rank);
        CHECK(c.t == rank % T && c.c == (rank / T) % C && c.u == (rank / (T * C)) % U &&
              c.s == (rank / (T * C * U)) % S && c.r == (rank / (T * C * U * S)) % d->dp_replicate &&
              c.p == rank / (T * C * U * S * d->dp_replicate),
              "[%s] rank %d: dense coords", name, rank);
        CHECK(inner == ((c.s * U + c.u) * C + c.c) * T + c.t, "[%s] rank %d: inner", name, rank);
        if (ET == 1)
            CHECK(c.etp == 0 && c.ep == inner % EP && c.efsdp == inner / EP,
                  "[%s] rank %d: sparse coords (etp 1)", name, rank);
        else
            CHECK(c.etp == c.t && c.ep == (inner / T) % EP && c.efsdp == inner / (EP * T),
                  "[%s] rank %d: sparse coords (etp = tp)", name, rank);
        CHECK(c.seq == c.u * C + c.c && c.fsdp == c.s * U * C + c.seq && c.batch == c.r * S + c.s &&
              c.loss == c.batch * U * C + c.seq, "[%s] rank %d: flattened indices", name, rank);
        int in_range = dense >= 0 && dense < W && sparse >= 0 && sparse < W;
        CHECK(in_range && !seen_dense[dense] && !seen_sparse[sparse], "[%s] rank %d: coords not a bijection", name, rank);
        if (in_range) seen_dense[dense] = seen_sparse[sparse] = 1;
    }

    // groups
    for (int g = 0; g < HP_G_COUNT; g++) {
        const int want = formula_size(d, (hp_group_kind)g);
        CHECK(hp_mesh_group_size(d, (hp_group_kind)g) == want, "[%s] %s size %d != formula %d",
              name, hp_group_name((hp_group_kind)g), hp_mesh_group_size(d, (hp_group_kind)g), want);
        int owner[16];   // smallest member of each rank's group
        for (int rank = 0; rank < W; rank++) {
            int m[16], me = -1;
            hp_coords c;
            hp_mesh_coords(d, rank, &c);
            int n = hp_mesh_group(d, (hp_group_kind)g, rank, m, &me);
            CHECK(n == want, "[%s] %s group of %d has %d members", name, hp_group_name((hp_group_kind)g), rank, n);
            if (n != want) continue;
            CHECK(me >= 0 && me < n && m[me] == rank && me == expected_index(d, (hp_group_kind)g, rank, &c),
                  "[%s] %s: rank %d index %d", name, hp_group_name((hp_group_kind)g), rank, me);
            int sorted = 1;
            for (int i = 1; i < n; i++) sorted &= m[i] > m[i - 1];
            CHECK(sorted && m[0] >= 0 && m[n - 1] < W, "[%s] %s: members of %d not ascending in [0,W)",
                  name, hp_group_name((hp_group_kind)g), rank);
            owner[rank] = m[0];
            // every member reports the same group, with itself at its own index
            for (int i = 0; i < n; i++) {
                int m2[16], me2 = -1;
                int n2 = hp_mesh_group(d, (hp_group_kind)g, m[i], m2, &me2);
                CHECK(n2 == n && me2 == i && !memcmp(m, m2, (size_t)n * sizeof *m),
                      "[%s] %s: member %d of rank %d's group disagrees", name, hp_group_name((hp_group_kind)g), m[i], rank);
            }
        }
        // partition: each rank is in exactly the group its owner lists, and the groups cover W
        int n_groups = 0;
        for (int rank = 0; rank < W; rank++) if (owner[rank] == rank) n_groups++;
        CHECK(n_groups * want == W, "[%s] %s: %d groups of %d do not cover %d ranks",
              name, hp_group_name((hp_group_kind)g), n_groups, want, W);
    }

    // sparse nesting
    for (int rank = 0; rank < W; rank++) {
        int ep[16], etp[16], both[16], tp[16];
        int n_ep = hp_mesh_group(d, HP_G_EP, rank, ep, NULL);
        int n_etp = hp_mesh_group(d, HP_G_ETP, rank, etp, NULL);
        int n_both = hp_mesh_group(d, HP_G_EP_ETP, rank, both, NULL);
        int n_tp = hp_mesh_group(d, HP_G_TP, rank, tp, NULL);
        int stride = ET == 1 ? 1 : T;
        for (int i = 0; i < n_ep; i++)
            CHECK(ep[i] == ep[0] + i * stride, "[%s] ep group of %d not a block of stride %d", name, rank, stride);
        if (ET > 1)
            CHECK(n_etp == n_tp && !memcmp(etp, tp, (size_t)n_tp * sizeof *tp), "[%s] etp != tp group of %d", name, rank);
        else
            CHECK(n_etp == 1 && etp[0] == rank, "[%s] etp group of %d not a singleton", name, rank);
        // ep_etp = union of the ep groups (and of the etp groups) of its members
        int ok = n_both == n_ep * n_etp;
        for (int i = 0; i < n_both && ok; i++) {
            int m[16];
            int n = hp_mesh_group(d, HP_G_EP, both[i], m, NULL);
            for (int k = 0; k < n; k++) ok &= contains(both, n_both, m[k]);
            n = hp_mesh_group(d, HP_G_ETP, both[i], m, NULL);
            for (int k = 0; k < n; k++) ok &= contains(both, n_both, m[k]);
        }
        for (int i = 0; i < n_ep; i++) ok &= contains(both, n_both, ep[i]);
        for (int i = 0; i < n_etp; i++) ok &= contains(both, n_both, etp[i]);
        CHECK(ok, "[%s] ep_etp group of %d is not the union of its ep and etp groups", name, rank);
        // the whole sparse group structure lives inside the rank's dense region (same p, r)
        int fsdp_region = rank / SCT;
        for (int i = 0; i < n_both; i++)
            CHECK(both[i] / SCT == fsdp_region, "[%s] ep_etp of %d leaves the S*C*T block", name, rank);
    }
    if (check_failed > fails_before && check_failed - fails_before < 3)
        fprintf(stderr, "  (in config %s)\n", name);
}

static void test_exhaustive(void) {
    int n_configs = 0, n_validated = 0;
    for (int P = 1; P <= 2; P++)
    for (int R = 1; R <= 16; R++)
    for (int S = 1; S <= 16; S++)
    for (int U = 1; U <= 4; U++)
    for (int C = 1; C <= 16; C++)
    for (int T = 1; T <= 16; T++) {
        int W = P * R * S * U * C * T;
        if (W > 16) continue;
        for (int EP = 1; EP <= 16; EP++)
        for (int ET = 1; ET <= 16; ET++) {
            int is_legal = legal(S * U, C, T, EP, ET);   // EP borrows ulysses ranks like dp_shard's
            if (P == 1) {
                // hp_dims_validate (mesh rules only) must agree with the legality rules
                hp_dims v = mk_u(1, R, S, U, C, T, EP, ET);
                char err[256];
                int rc = hp_dims_validate(&v, NULL, NULL, err, sizeof err);
                CHECK((rc == 0) == is_legal, "validate(%s) = %d (%s), legal = %d",
                      dims_str(&v), rc, err, is_legal);
                CHECK(rc == 0 || (rc == HP_EXIT_CONFIG && err[0] && !strchr(err, '\n')),
                      "validate(%s): rc %d, message '%s'", dims_str(&v), rc, err);
                n_validated++;
            }
            if (!is_legal) continue;
            hp_dims d = mk_u(P, R, S, U, C, T, EP, ET);
            check_config(&d);
            n_configs++;
        }
    }
    printf("exhaustive: %d legal configurations checked, %d validated against the rules\n",
           n_configs, n_validated);
    CHECK(n_configs > 300, "only %d configurations enumerated", n_configs);
}

int main(void) {
    for (int g = 0; g < HP_G_COUNT; g++)
        CHECK(hp_group_name((hp_group_kind)g)[0] != '?', "group %d has no name", g);
    CHECK(!strcmp(hp_group_name(HP_G_FSDP), "fsdp") && !strcmp(hp_group_name(HP_G_EP_ETP), "ep_etp"),
          "group names");
    test_worked_dense();
    test_worked_moe();
    test_worked_hsdp_pp();
    test_exhaustive();
    return test_summary("test_mesh");
}
