// plan_search.c - `hp plan --search --world N --model M --mem-per-rank SIZE [--hw NAME]`:
// every layout (pp with its default schedule, dp_replicate, dp_shard, cp, tp; ep, etp for MoE)
// whose degrees multiply to N and pass hp_dims_validate, with the fewest microbatches that
// make its predicted peak fit, ranked by the step-time model with --hw, else by the wire bytes
// a rank sends between nodes of 8 (the slowest link), then by all its wire time; ties keep
// the order of enumeration. Prints the top 10 and how many were tried, legal and fit.
// defines: hp_plan_search_cmd
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hyperpar/plan.h"
#include "plan_tool.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define TOP 10

typedef struct layout {
    hp_dims d;
    int microbatches, order;   // order: its place in the enumeration (the tie-break)
    double peak, persistent, key, inter_bytes, step_s, mfu;
} layout;

static int by_key(const void *a, const void *b) {
    const layout *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->order - y->order;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct search {
    const hp_cli *cli;
    const hp_plan_hw *hw;      // the time model, or NULL
    hp_plan_hw topo;           // nodes of 8 for the byte ranking
    double mem;
    layout *fit;
    int n_fit, cap, n_legal, n_tried;
    layout closest;            // the legal layout with the smallest peak, fitting or not
    char last_err[512];
} search;

// The peak of layout d0 with M microbatches, or -1 when (d0, M) is not legal; *d gets the
// validated dims. The smallest peak seen is kept for the answer when nothing fits.
static double peak_with(search *s, const hp_dims *d0, int M, hp_dims *d, hp_plan_memory *mem) {
    hp_run_config rc = s->cli->run;
    rc.microbatches = M;
    *d = *d0;
    char err[512];
    if (hp_dims_validate(d, &s->cli->model, &rc, err, sizeof err) != 0) {
        snprintf(s->last_err, sizeof s->last_err, "%s", err);
        return -1;
    }
    if (hp_plan_memory_predict(&s->cli->model, d, &rc, 0, mem) != 0) return -2;
    if (s->closest.peak == 0 || mem->peak < s->closest.peak) {
        s->closest.d = *d;
        s->closest.microbatches = M;
        s->closest.peak = mem->peak;
    }
    return mem->peak;
}

// The layout d0 with the fewest microbatches (gradient accumulation) that fits, among the
// divisors of the local batch unless --microbatches fixed it. Fewer microbatches gather every
// FSDP unit fewer times; more keep fewer activations. M = 1 is tried first (no accumulation
// buffers); for M >= 2 the peak falls as M grows, so a binary search finds the smallest fit.
static int consider(search *s, hp_dims d0) {
    s->n_tried++;
    hp_run_config rc = s->cli->run;
    const int fixed = rc.microbatches > 1;
    const int local = rc.batch / (d0.dp_replicate * d0.dp_shard);
    int Ms[64], n = 0;   // the 64 smallest divisors (enough for any batch below 2^40)
    for (int M = fixed ? rc.microbatches : 1; M <= (fixed ? rc.microbatches : local) && n < 64; M++)
        if (fixed || local % M == 0) Ms[n++] = M;
    if (n == 0) Ms[n++] = 1;   // the batch does not split: validation says why
    hp_dims d = d0, dm;
    hp_plan_memory mem, mm;
    int legal = 0, fit_M = 0, lo = 0;
    // the first legal M
    for (; lo < n; lo++) {
        const double pk = peak_with(s, &d0, Ms[lo], &d, &mem);
        if (pk == -2) return -1;
        if (pk < 0) continue;
        legal = 1;
        if (pk <= s->mem) fit_M = Ms[lo];
        break;
    }
    // binary search over the rest: the smallest legal M that fits (illegal ones skipped upward).
    // It starts at a lower bound: the activations and scratch scale as 1/M or slower (their
    // terms are per row of a microbatch, plus constants; under pp more microbatches may be in
    // flight), so A + (act + scratch)/M with A the rest at M > 1 never exceeds the real peak,
    // and no M whose bound is over the budget can fit.
    int hi = n - 1;
    lo++;
    if (legal && !fit_M) {
        const double rest = mem.peak - mem.activations - mem.scratch - mem.accumulation +
                            mem.accumulation_if_microbatched, var = mem.activations + mem.scratch;
        const int M1 = Ms[lo - 1];
        while (lo <= hi && rest + var * M1 / Ms[lo] > s->mem) lo++;
        // the bound's first candidate is often the answer: try it before bisecting
        double pk = -1;
        while (lo <= hi && (pk = peak_with(s, &d0, Ms[lo], &dm, &mm)) == -1) lo++;
        if (pk == -2) return -1;
        if (lo <= hi && pk <= s->mem) { fit_M = Ms[lo]; d = dm; mem = mm; }
        lo++;
    }
    const int fit_at_first = fit_M != 0;
    while (legal && !fit_at_first && lo <= hi) {
        const int mid = lo + (hi - lo) / 2;
        int k = mid;
        double pk = -1;
        while (k <= hi && (pk = peak_with(s, &d0, Ms[k], &dm, &mm)) == -1) k++;
        if (pk == -2) return -1;
        if (k > hi) { hi = mid - 1; continue; }        // nothing legal in [mid, hi]
        if (pk <= s->mem) { fit_M = Ms[k]; d = dm; mem = mm; hi = mid - 1; }   // look lower
        else lo = k + 1;
    }
    rc.microbatches = fit_M;
    s->n_legal += legal;
    if (!fit_M) return 0;
    hp_plan_time t;
    hp_plan_time_predict(&s->cli->model, &d, &rc, 0, s->hw ? s->hw : &s->topo, &t);
    if (s->n_fit == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        layout *f = realloc(s->fit, (size_t)s->cap * sizeof *f);
        if (!f) return -1;
        s->fit = f;
    }
    layout *l = &s->fit[s->n_fit++];
    l->d = d;
    l->microbatches = fit_M;
    l->order = s->n_fit - 1;
    l->peak = mem.peak;
    l->persistent = mem.persistent;
    l->inter_bytes = t.inter_bytes;
    l->step_s = t.step_serial_s;
    l->mfu = t.mfu_serial;
    // without --hw: inter-node bytes first, all wire time (at the topology's rates) second
    l->key = s->hw ? t.step_serial_s : t.inter_bytes * 1e6 + t.comm_s;
    return 0;
}

int hp_plan_search_cmd(const hp_cli *cli) {
    const int W = cli->plan_world ? cli->plan_world : cli->nproc;
    if (W <= 0) {
        fprintf(stderr, "hp: --search needs --world N (the number of ranks to lay out)\n");
        return HP_EXIT_CONFIG;
    }
    // the search chooses every degree; one given by hand would be silently overridden
    const hp_dims def = hp_dims_default(), *u = &cli->dims;
    const struct { const char *flag; int given, dflt; } degree[] = {
        { "--dp-replicate", u->dp_replicate, def.dp_replicate }, { "--dp-shard", u->dp_shard, def.dp_shard },
        { "--cp", u->cp, def.cp }, { "--tp", u->tp, def.tp }, { "--pp", u->pp, def.pp },
        { "--ep", u->ep, def.ep }, { "--etp", u->etp, def.etp },
    };
    for (size_t i = 0; i < sizeof degree / sizeof degree[0]; i++)
        if (degree[i].given != degree[i].dflt) {
            fprintf(stderr, "hp: --search chooses the degrees itself: drop %s %d (hp plan without "
                    "--search plans one layout)\n", degree[i].flag, degree[i].given);
            return HP_EXIT_CONFIG;
        }
    search s;
    memset(&s, 0, sizeof s);
    s.cli = cli;
    hp_plan_hw hw;
    if (cli->hw && hp_plan_hw_by_name(cli->hw, &hw) != 0) {
        fprintf(stderr, "hp: --hw expects h100, h200, mi300x or cpu, got '%s'\n", cli->hw);
        return HP_EXIT_CONFIG;
    }
    s.hw = cli->hw ? &hw : NULL;
    hp_plan_hw_by_name("h100", &s.topo);
    if (cli->mem_per_rank) {
        if (hp_plan_parse_size(cli->mem_per_rank, &s.mem) != 0) {
            fprintf(stderr, "hp: --mem-per-rank expects a size > 0 such as 80GiB or 141GB, got '%s'\n",
                    cli->mem_per_rank);
            return HP_EXIT_CONFIG;
        }
    } else if (s.hw && s.hw->mem_bytes > 0) {
        s.mem = s.hw->mem_bytes;
    } else {
        fprintf(stderr, "hp: --search needs --mem-per-rank SIZE (e.g. 80GiB), or --hw with a known memory\n");
        return HP_EXIT_CONFIG;
    }
    const hp_model_config *m = &cli->model;
    const double t0 = now_s();
    // pp outermost (its default schedule), then tp, cp, dp_replicate; dp_shard takes the rest
    for (int P = 1; P <= W && P <= m->n_layers; P++) {
      if (W % P) continue;
      const int Wp = W / P;
      for (int T = 1; T <= Wp; T++) {
        if (Wp % T || m->n_heads % T || m->n_kv_heads % T) continue;
        for (int C = 1; C <= Wp / T; C++) {
            if ((Wp / T) % C) continue;
            const int RS = Wp / (T * C);
            for (int R = 1; R <= RS; R++) {
                if (RS % R) continue;
                hp_dims d = cli->dims;   // keeps --no-sp, --pp-schedule and the like
                d.pp = P;
                d.dp_replicate = R; d.dp_shard = RS / R; d.cp = C; d.tp = T; d.world = W;
                if (m->num_experts == 0) {
                    if (consider(&s, d) != 0) goto oom;
                    continue;
                }
                for (int EP = 1; EP <= m->num_experts; EP++) {
                    if (m->num_experts % EP || (d.dp_shard * C * T) % EP) continue;
                    for (int ETP = 1; ETP <= T; ETP = ETP == 1 && T > 1 ? T : T + 1) {
                        if (EP == 1 && ETP > 1) continue;
                        d.ep = EP; d.etp = ETP;
                        if (consider(&s, d) != 0) goto oom;
                    }
                }
            }
        }
      }
    }
    const double dt = now_s() - t0;
    if (s.n_legal == 0) {
        fprintf(stderr, "hp: no legal layout of world %d for %s (%d tried; the last: %s)\n", W, m->name,
                s.n_tried, s.last_err);
        free(s.fit);
        return HP_EXIT_CONFIG;
    }
    if (s.n_fit > 0) qsort(s.fit, (size_t)s.n_fit, sizeof *s.fit, by_key);   // (s.fit may be NULL)
    printf("hp plan --search: model %s, world %d, seq_len %d, global batch %d, %.4g GiB per rank\n",
           m->name, W, cli->run.seq_len, cli->run.batch, s.mem / GIB);
    printf("  %d layouts tried, %d legal, %d fit; searched in %.3f s\n", s.n_tried, s.n_legal, s.n_fit, dt);
    printf("  ranked by %s\n", s.hw ? "the step-time model on --hw (a model: see hp plan --memory --hw for its assumptions)"
                                   : "wire bytes a rank sends between nodes of 8 ranks, then all wire time");
    if (s.n_fit == 0) {
        const layout *c = &s.closest;
        fprintf(stderr, "hp: none of the %d legal layouts of world %d fits %.4g GiB per rank; the smallest peak "
                "is %.1f GiB (pp %d dp_replicate %d dp_shard %d cp %d tp %d ep %d etp %d microbatches %d)\n",
                s.n_legal, W, s.mem / GIB, c->peak / GIB, c->d.pp, c->d.dp_replicate, c->d.dp_shard, c->d.cp, c->d.tp,
                c->d.ep, c->d.etp, c->microbatches);
        free(s.fit);
        return HP_EXIT_FAIL;
    }
    printf("  %3s %4s %6s %6s %5s %3s %3s %3s %4s   %9s %9s %14s", "#", "pp", "dp_rep", "dp_shd", "cp", "tp", "ep", "etp",
           "mb", "peak GiB", "pers GiB", "inter-node GB");
    if (s.hw) printf(" %10s %6s", "step s", "MFU");
    printf("\n");
    for (int i = 0; i < s.n_fit && i < TOP; i++) {
        const layout *l = &s.fit[i];
        printf("  %3d %4d %6d %6d %5d %3d %3d %3d %4d   %9.2f %9.2f %14.3f", i + 1, l->d.pp, l->d.dp_replicate, l->d.dp_shard,
               l->d.cp, l->d.tp, l->d.ep, l->d.etp, l->microbatches, l->peak / GIB, l->persistent / GIB, l->inter_bytes / 1e9);
        if (s.hw) printf(" %10.4g %5.1f%%", l->step_s, 100 * l->mfu);
        printf("\n");
    }
    free(s.fit);
    return HP_EXIT_OK;
oom:
    free(s.fit);
    fprintf(stderr, "hp: out of memory in --search\n");
    return HP_EXIT_FAIL;
}
