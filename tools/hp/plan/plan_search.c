// plan_search.c - `hp plan --search --world N --model M --mem-per-rank SIZE [--hw NAME]`:
// every layout (pp with each schedule, dp_replicate, dp_shard, ulysses, cp, tp; ep, etp for
// MoE) and activation-checkpointing mode (none, every:2, full; only --ac's when given) whose
// degrees multiply to N and pass hp_dims_validate, with the fewest microbatches that make its
// predicted peak fit, ranked by the step-time model with --hw, else by a cost that counts the
// pipeline's bubble: the wire bytes a rank sends between nodes of 8 or --ranks-per-node N (the
// slowest link), then all its wire time, each divided by 1 - the schedule's ideal bubble (the
// share of the step a pp rank computes; 1 without pp). Bytes alone put pp 32 GPipe with 4
// microbatches first for Llama 3 70B on 16384 ranks: the fewest bytes, and an ideal bubble of
// 89%, a rank idle 9 tenths of the step. Ties keep the order of enumeration. Prints the top 10
// and how many were tried, legal and fit, and the rule it ranked by.
// AC changes only the activations (plan.h: hp_plan_activations), so each (layout, M) is
// predicted once without AC and the other modes swap their activations in.
// defines: tool_plan_search_cmd
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hyperpar/pipeline.h"
#include "hyperpar/plan.h"
#include "plan_tool.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define TOP 10

typedef struct layout {
    hp_dims d;
    int microbatches, ac_every, order;   // order: its place in the enumeration (the tie-break)
    double peak, persistent, key, inter_bytes, step_s, mfu;
    double bubble;                       // the schedule's ideal bubble (0 without pp)
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

// The pipeline's slots in flight (on pp rank 0, the planned rank) and ideal bubble depend only
// on (pp, schedule, pp_virtual, M), not on the inner degrees: simulated once per key. Simulating
// them per candidate was 90% of the search.
typedef struct pp_memo { int pp, schedule, virt, M, slots; double bubble; } pp_memo;
#define PP_MEMO 4096

typedef struct search {
    const tool_cli *cli;
    const hp_plan_hw *hw;      // the time model, or NULL
    hp_plan_hw topo;           // nodes of --ranks-per-node (default 8) for the byte ranking
    double mem;
    layout *fit;
    int n_fit, cap, n_legal, n_tried;
    layout closest;            // the legal layout with the smallest peak, fitting or not
    char last_err[512];
    pp_memo memo[PP_MEMO];     // open addressing on the key; pp 0 = empty
} search;

static pp_memo *pp_lookup(search *s, const hp_dims *d, int M) {
    const unsigned h = ((unsigned)d->pp * 2654435761u) ^ ((unsigned)d->pp_schedule * 40503u) ^
                       ((unsigned)d->pp_virtual * 977u) ^ ((unsigned)M * 97u);
    for (unsigned i = 0; i < PP_MEMO; i++) {
        pp_memo *e = &s->memo[(h + i) % PP_MEMO];
        if (e->pp == 0) {   // a new key
            hp_pp_layout lay;
            *e = (pp_memo){ .pp = d->pp, .schedule = d->pp_schedule, .virt = d->pp_virtual, .M = M,
                            .slots = hp_plan_pp_slots(d, s->cli->model.n_layers, M, 0), .bubble = -1 };
            if (hp_pp_layout_init(&lay, d, s->cli->model.n_layers) == 0) e->bubble = hp_pp_ideal_bubble(&lay, M);
            return e;
        }
        if (e->pp == d->pp && e->schedule == d->pp_schedule && e->virt == d->pp_virtual && e->M == M) return e;
    }
    return NULL;   // full: the caller simulates
}

// One layout's predictions without AC, per candidate M (index into the divisors), computed
// once and shared by the AC modes.
#define MAX_M 64
typedef struct m_cache {
    signed char state[MAX_M];   // 0 not yet, 1 legal, -1 illegal
    hp_dims d[MAX_M];
    hp_plan_memory mem[MAX_M];
    int slots[MAX_M];           // pp: the slots in flight (hp_plan_pp_slots)
    int have_table;             // table: the parameter-table terms, the same for every M
    hp_plan_memory table;
} m_cache;

// The peak of layout d0 with Ms[k] microbatches under AC mode ac, or -1 when it is not legal
// (-2: out of memory); *d gets the validated dims, *mem the prediction under ac. The smallest
// peak seen is kept for the answer when nothing fits.
static double peak_with(search *s, const hp_dims *d0, const int *Ms, int k, int ac, m_cache *c,
                        hp_dims *d, hp_plan_memory *mem) {
    hp_run_config rc = s->cli->run;
    rc.microbatches = Ms[k];
    rc.ac_every = 0;
    if (c->state[k] == 0) {
        c->d[k] = *d0;
        char err[512];
        if (hp_dims_validate(&c->d[k], &s->cli->model, &rc, err, sizeof err) != 0) {
            snprintf(s->last_err, sizeof s->last_err, "%s", err);
            c->state[k] = -1;
        } else {
            if (!c->have_table && hp_plan_memory_table(&s->cli->model, &c->d[k], 0, &c->table) != 0) return -2;
            c->have_table = 1;
            c->mem[k] = c->table;
            const pp_memo *pm = c->d[k].pp > 1 ? pp_lookup(s, &c->d[k], Ms[k]) : NULL;
            c->slots[k] = pm ? pm->slots : 0;
            const int e = c->slots[k] < 0 ? -1 : hp_plan_memory_run(&s->cli->model, &c->d[k], &rc, 0, c->slots[k], &c->mem[k]);
            c->state[k] = e == 0 ? 1 : -1;   // (a schedule that cannot run M)
        }
    }
    if (c->state[k] < 0) return -1;
    *d = c->d[k];
    *mem = c->mem[k];
    if (ac) {   // the same buffers but the activations
        rc.ac_every = ac;
        hp_plan_activations a;
        if (hp_plan_activations_with_slots(&s->cli->model, d, &rc, 0, 0, c->slots[k], &a) != 0) return -1;   // zbv
        mem->peak += a.total - mem->activations;
        mem->activations = a.total;
        mem->activations_recompute = a.recompute;
    }
    if (s->closest.peak == 0 || mem->peak < s->closest.peak) {
        s->closest.d = *d;
        s->closest.microbatches = Ms[k];
        s->closest.ac_every = ac;
        s->closest.peak = mem->peak;
    }
    return mem->peak;
}

// The ranking without --hw: inter-node bytes first, all wire time (at the topology's rates)
// second, both per unit of useful work. The bubble stretches a pp rank's step by 1 / (1 - b)
// for the same bytes, so the bytes a rank sends per second of compute grow by that factor: an
// 89% bubble counts its bytes 9 times. (With --hw the step-time model counts the bubble in its
// compute time instead.)
static double bytes_cost(double inter_bytes, double comm_s, double bubble) {
    const double busy = bubble > 0 && bubble < 1 ? 1 - bubble : 1;
    return (inter_bytes * 1e6 + comm_s) / busy;
}

// The layout d0 under AC mode ac with the fewest microbatches (gradient accumulation) that
// fits, among the divisors Ms[0..n) of the local batch. Fewer microbatches gather every FSDP
// unit fewer times; more keep fewer activations. M = 1 is tried first (no accumulation
// buffers); for M >= 2 the peak falls as M grows, so a binary search finds the smallest fit.
static int consider_ac(search *s, const hp_dims *d0, const int *Ms, int n, int ac, m_cache *c) {
    s->n_tried++;
    hp_run_config rc = s->cli->run;
    hp_dims d = *d0, dm;
    hp_plan_memory mem, mm;
    int legal = 0, fit_M = 0, lo = 0;
    // the first legal M
    for (; lo < n; lo++) {
        const double pk = peak_with(s, d0, Ms, lo, ac, c, &d, &mem);
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
        while (lo <= hi && (pk = peak_with(s, d0, Ms, lo, ac, c, &dm, &mm)) == -1) lo++;
        if (pk == -2) return -1;
        if (lo <= hi && pk <= s->mem) { fit_M = Ms[lo]; d = dm; mem = mm; }
        lo++;
    }
    const int fit_at_first = fit_M != 0;
    while (legal && !fit_at_first && lo <= hi) {
        const int mid = lo + (hi - lo) / 2;
        int k = mid;
        double pk = -1;
        while (k <= hi && (pk = peak_with(s, d0, Ms, k, ac, c, &dm, &mm)) == -1) k++;
        if (pk == -2) return -1;
        if (k > hi) { hi = mid - 1; continue; }        // nothing legal in [mid, hi]
        if (pk <= s->mem) { fit_M = Ms[k]; d = dm; mem = mm; hi = mid - 1; }   // look lower
        else lo = k + 1;
    }
    rc.microbatches = fit_M;
    rc.ac_every = ac;
    s->n_legal += legal;
    if (!fit_M) return 0;
    hp_plan_time t;
    const pp_memo *pm = d.pp > 1 ? pp_lookup(s, &d, fit_M) : NULL;
    hp_plan_time_predict_with(&s->cli->model, &d, &rc, 0, s->hw ? s->hw : &s->topo, pm ? pm->bubble : -1, &t);
    if (s->n_fit == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        layout *f = realloc(s->fit, (size_t)s->cap * sizeof *f);
        if (!f) return -1;
        s->fit = f;
    }
    layout *l = &s->fit[s->n_fit++];
    l->d = d;
    l->microbatches = fit_M;
    l->ac_every = ac;
    l->order = s->n_fit - 1;
    l->peak = mem.peak;
    l->persistent = mem.persistent;
    l->inter_bytes = t.inter_bytes;
    l->step_s = t.step_serial_s;
    l->mfu = t.mfu_serial;
    l->bubble = t.pp_bubble;
    l->key = s->hw ? t.step_serial_s : bytes_cost(t.inter_bytes, t.comm_s, t.pp_bubble);
    return 0;
}

// Every AC mode of layout d0 (its microbatch candidates: the divisors of the local batch
// unless --microbatches fixed it).
static int consider(search *s, hp_dims d0) {
    static m_cache c;   // (large; one search at a time)
    memset(c.state, 0, sizeof c.state);
    c.have_table = 0;
    const hp_run_config *rc = &s->cli->run;
    const int fixed = rc->microbatches > 1;
    const int local = rc->batch / (d0.dp_replicate * d0.dp_shard);
    int Ms[MAX_M], n = 0;   // the 64 smallest divisors (enough for any batch below 2^40)
    for (int M = fixed ? rc->microbatches : 1; M <= (fixed ? rc->microbatches : local) && n < MAX_M; M++)
        if (fixed || local % M == 0) Ms[n++] = M;
    if (n == 0) Ms[n++] = 1;   // the batch does not split: validation says why
    static const int modes[] = { 0, 2, 1 };   // none, every:2, full
    const int n_modes = s->cli->ac_given ? 1 : 3;
    for (int i = 0; i < n_modes; i++)
        if (consider_ac(s, &d0, Ms, n, s->cli->ac_given ? rc->ac_every : modes[i], &c) != 0) return -1;
    return 0;
}

int tool_plan_search_cmd(const tool_cli *cli) {
    const int W = cli->plan_world ? cli->plan_world : cli->nproc;
    if (W <= 0) {
        fprintf(stderr, "hp: --search needs --world N (the number of ranks to lay out)\n");
        return HP_EXIT_CONFIG;
    }
    // the search chooses every degree; one given by hand would be silently overridden
    const hp_dims def = hp_dims_default(), *u = &cli->dims;
    const struct { const char *flag; int given, dflt; } degree[] = {
        { "--dp-replicate", u->dp_replicate, def.dp_replicate }, { "--dp-shard", u->dp_shard, def.dp_shard },
        { "--ulysses", u->ulysses, def.ulysses },
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
    if (cli->hw) hw.ranks_per_node = tool_plan_ranks_per_node(cli);
    s.hw = cli->hw ? &hw : NULL;
    hp_plan_hw_by_name("h100", &s.topo);
    s.topo.ranks_per_node = tool_plan_ranks_per_node(cli);
    if (cli->mem_per_rank) {
        if (tool_plan_parse_size(cli->mem_per_rank, &s.mem) != 0) {
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
    // pp outermost (each schedule), then tp, cp, ulysses, dp_replicate; dp_shard takes the rest
    for (int P = 1; P <= W && P <= m->n_layers; P++) {
      if (W % P) continue;
      const int Wp = W / P;
      for (int sched = P > 1 ? 0 : cli->dims.pp_schedule; sched < (P > 1 ? HP_PP_SCHEDULES : cli->dims.pp_schedule + 1); sched++)
      for (int T = 1; T <= Wp; T++) {
        if (Wp % T || m->n_heads % T || m->n_kv_heads % T) continue;
        for (int C = 1; C <= Wp / T; C++) {
          if ((Wp / T) % C) continue;
          for (int U = 1; U <= Wp / (T * C); U++) {
            if ((Wp / (T * C)) % U || (m->n_heads / T) % U) continue;
            const int RS = Wp / (T * C * U);
            for (int R = 1; R <= RS; R++) {
                if (RS % R) continue;
                hp_dims d = cli->dims;   // keeps --no-sp, --pp-virtual and the like
                d.pp = P;
                d.pp_schedule = sched;
                d.ulysses = U;
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
    if (cli->run.reshard_after_forward != HP_RESHARD_DEFAULT)
        printf("  FSDP --reshard-after-forward %s%s\n", hp_run_reshard_name(cli->run.reshard_after_forward),
               cli->run.reshard_after_forward == HP_RESHARD_ALWAYS ? ": pp layouts are not legal with it" : "");
    if (s.hw) printf("  ranked by the step-time model on --hw, nodes of %d ranks (a model: see hp plan --memory --hw "
                     "for its assumptions)\n", s.hw->ranks_per_node);
    else printf("  ranked by cost = the wire bytes a rank sends between nodes of %d ranks / (1 - the ideal pp "
                "bubble), then all wire time / (1 - bubble) (no --hw: a byte count, not a time; docs/planner.md)\n",
                s.topo.ranks_per_node);
    if (s.n_fit == 0) {
        const layout *c = &s.closest;
        char ac[32];
        tool_plan_ac_name(ac, sizeof ac, c->ac_every);
        fprintf(stderr, "hp: none of the %d legal layouts of world %d fits %.4g GiB per rank; the smallest peak "
                "is %.1f GiB (pp %d %s dp_replicate %d dp_shard %d ulysses %d cp %d tp %d ep %d etp %d "
                "microbatches %d ac %s)\n", s.n_legal, W, s.mem / GIB, c->peak / GIB, c->d.pp,
                hp_pp_schedule_name(c->d.pp_schedule), c->d.dp_replicate, c->d.dp_shard, c->d.ulysses, c->d.cp,
                c->d.tp, c->d.ep, c->d.etp, c->microbatches, ac);
        free(s.fit);
        return HP_EXIT_FAIL;
    }
    printf("  %3s %4s %-16s %6s %6s %3s %5s %3s %3s %3s %4s %-8s   %9s %9s %14s", "#", "pp", "schedule", "dp_rep",
           "dp_shd", "uly", "cp", "tp", "ep", "etp", "mb", "ac", "peak GiB", "pers GiB", "inter-node GB");
    printf(" %7s", "bubble");
    if (s.hw) printf(" %10s %6s", "step s", "MFU");
    else printf(" %10s", "cost GB");
    printf("\n");
    for (int i = 0; i < s.n_fit && i < TOP; i++) {
        const layout *l = &s.fit[i];
        char ac[32];
        tool_plan_ac_name(ac, sizeof ac, l->ac_every);
        printf("  %3d %4d %-16s %6d %6d %3d %5d %3d %3d %3d %4d %-8s   %9.2f %9.2f %14.3f", i + 1, l->d.pp,
               l->d.pp > 1 ? hp_pp_schedule_name(l->d.pp_schedule) : "-", l->d.dp_replicate, l->d.dp_shard,
               l->d.ulysses, l->d.cp, l->d.tp, l->d.ep, l->d.etp, l->microbatches, ac, l->peak / GIB,
               l->persistent / GIB, l->inter_bytes / 1e9);
        printf(" %6.1f%%", 100 * l->bubble);
        if (s.hw) printf(" %10.4g %5.1f%%", l->step_s, 100 * l->mfu);
        else printf(" %10.3f", l->inter_bytes / 1e9 / (l->bubble > 0 && l->bubble < 1 ? 1 - l->bubble : 1));
        printf("\n");
    }
    free(s.fit);
    return HP_EXIT_OK;
oom:
    free(s.fit);
    fprintf(stderr, "hp: out of memory in --search\n");
    return HP_EXIT_FAIL;
}
