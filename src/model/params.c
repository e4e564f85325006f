// params.c - the parameter table of model.md with each parameter's placement as data.
//
// The parallelize step of TorchTitan is, here, nothing but the placement columns filled in
// below: which dim tp splits (colwise 0, rowwise 1), which dim ep splits (experts 0), which
// dim of the tp/ep-local tensor FSDP chunks, and over which group. Everything a rank needs
// (local shape, its slice of the full tensor, its FSDP shard) is derived from them.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/failpoint.h"
#include "hyperpar/params.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/rng.h"
#include "hyperpar/shapes.h"

// ---------------------------------------------------------------------------------------
// building the table

typedef struct builder {
    hp_param_table *t;
    int cap;
} builder;

static hp_param *add(builder *b, const char *name, int ndim, int64_t s0, int64_t s1, int64_t s2,
                     int unit, hp_stack stack, float std, int tp_dim, int ep_dim) {
    if (b->t->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        hp_param *np = realloc(b->t->p, (size_t)b->cap * sizeof *np);
        if (!np) return NULL;
        b->t->p = np;
    }
    hp_param *p = &b->t->p[b->t->n++];
    memset(p, 0, sizeof *p);
    const size_t len = strlen(name);   // (no snprintf: the planner's search builds many tables)
    memcpy(p->name, name, len < sizeof p->name ? len + 1 : sizeof p->name - 1);
    p->ndim = ndim;
    p->shape[0] = s0; p->shape[1] = s1; p->shape[2] = s2;
    p->unit = unit;
    p->stack = stack;
    p->init_std = std;
    p->tp_dim = tp_dim;
    p->ep_dim = ep_dim;
    p->fsdp_dim = 0;
    return p;
}

// "layers.<l>.<suffix>" into nm[64] without snprintf, whose parsing dominated hp_params_build
// (the planner's search builds tens of thousands of tables). Same text as "layers.%d.%s".
static void layer_name(char nm[64], int l, const char *suffix) {
    char digits[12];
    int n = 0;
    do { digits[n++] = (char)('0' + l % 10); l /= 10; } while (l > 0);
    memcpy(nm, "layers.", 7);
    int o = 7;
    while (n > 0) nm[o++] = digits[--n];
    nm[o++] = '.';
    memcpy(nm + o, suffix, strlen(suffix) + 1);   // suffixes are short literals: always fits
}

// Appends the whole model in FSDP-unit order; inside a unit dense parameters come first and
// routed experts last, so each (unit, stack) is one contiguous range of the shard buffer.
static int add_model(builder *b, const hp_model_config *m, const hp_dims *d) {
    const int V = m->vocab_size, D = m->dim, L = m->n_layers, hd = hp_model_head_dim(m);
    const int tp_on = d->tp > 1, sp_on = hp_dims_sp_on(d);
    char nm[64];
    hp_param *p;
#define ADD(...) do { if (!(p = add(b, __VA_ARGS__))) return -1; } while (0)
    ADD("tok_embeddings.weight", 2, V, D, 0, 0, HP_STACK_DENSE, 1.0f, 0, HP_REPLICATE);
    for (int l = 0; l < L; l++) {
        const int u = 1 + l;
        const float std_out = 0.02f / sqrtf(2.0f * (float)(l + 1));
        layer_name(nm, l, "attention_norm.weight");
        ADD(nm, 1, D, 0, 0, u, HP_STACK_DENSE, 0.0f, HP_REPLICATE, HP_REPLICATE);
        p->tp_grad_partial = sp_on;   // SequenceParallel: each tp rank sees its own tokens
        layer_name(nm, l, "attention.wq.weight");
        ADD(nm, 2, (int64_t)m->n_heads * hd, D, 0, u, HP_STACK_DENSE, 0.02f, 0, HP_REPLICATE);
        layer_name(nm, l, "attention.wk.weight");
        ADD(nm, 2, (int64_t)m->n_kv_heads * hd, D, 0, u, HP_STACK_DENSE, 0.02f, 0, HP_REPLICATE);
        layer_name(nm, l, "attention.wv.weight");
        ADD(nm, 2, (int64_t)m->n_kv_heads * hd, D, 0, u, HP_STACK_DENSE, 0.02f, 0, HP_REPLICATE);
        layer_name(nm, l, "attention.wo.weight");
        ADD(nm, 2, D, (int64_t)m->n_heads * hd, 0, u, HP_STACK_DENSE, std_out, 1, HP_REPLICATE);
        layer_name(nm, l, "ffn_norm.weight");
        ADD(nm, 1, D, 0, 0, u, HP_STACK_DENSE, 0.0f, HP_REPLICATE, HP_REPLICATE);
        p->tp_grad_partial = sp_on;
        if (!hp_model_is_moe_layer(m, l)) {
            layer_name(nm, l, "feed_forward.w1.weight");
            ADD(nm, 2, m->ffn_hidden, D, 0, u, HP_STACK_DENSE, 0.02f, 0, HP_REPLICATE);
            layer_name(nm, l, "feed_forward.w2.weight");
            ADD(nm, 2, D, m->ffn_hidden, 0, u, HP_STACK_DENSE, std_out, 1, HP_REPLICATE);
            layer_name(nm, l, "feed_forward.w3.weight");
            ADD(nm, 2, m->ffn_hidden, D, 0, u, HP_STACK_DENSE, std_out, 0, HP_REPLICATE);
            continue;
        }
        const int E = m->num_experts, Fe = m->moe_hidden, Fs = m->moe_hidden * m->n_shared_experts;
        layer_name(nm, l, "moe.router.gate.weight");
        ADD(nm, 2, E, D, 0, u, HP_STACK_DENSE, 0.02f, HP_REPLICATE, HP_REPLICATE);
        // NoParallel gate: replicated compute, but the gradient arriving from the (tp-split)
        // experts is partial over tp: the #4054 lesson.
        p->tp_grad_partial = tp_on && !hp_failpoint(HP_FP_GATE_GRAD_TP);
        if (Fs > 0) {
            layer_name(nm, l, "moe.shared_experts.w1.weight");
            ADD(nm, 2, Fs, D, 0, u, HP_STACK_DENSE, 0.02f, 0, HP_REPLICATE);
            layer_name(nm, l, "moe.shared_experts.w2.weight");
            ADD(nm, 2, D, Fs, 0, u, HP_STACK_DENSE, std_out, 1, HP_REPLICATE);
            layer_name(nm, l, "moe.shared_experts.w3.weight");
            ADD(nm, 2, Fs, D, 0, u, HP_STACK_DENSE, std_out, 0, HP_REPLICATE);
        }
        const int etp_on = hp_dims_expert_tp(d) > 1;
        layer_name(nm, l, "moe.experts.w1");
        ADD(nm, 3, E, Fe, D, u, HP_STACK_EXPERT, 0.02f, etp_on ? 1 : HP_REPLICATE, 0);
        layer_name(nm, l, "moe.experts.w2");
        // (etp_split_dim: the bug splits w2's output dim D, not the hidden dim Fe it contracts)
        const int w2_tp_dim = hp_failpoint(HP_FP_ETP_SPLIT_DIM) ? 1 : 2;
        ADD(nm, 3, E, D, Fe, u, HP_STACK_EXPERT, std_out, etp_on ? w2_tp_dim : HP_REPLICATE, 0);
        layer_name(nm, l, "moe.experts.w3");
        ADD(nm, 3, E, Fe, D, u, HP_STACK_EXPERT, std_out, etp_on ? 1 : HP_REPLICATE, 0);
    }
    ADD("norm.weight", 1, D, 0, 0, L + 1, HP_STACK_DENSE, 0.0f, HP_REPLICATE, HP_REPLICATE);
    p->tp_grad_partial = sp_on;
    ADD("output.weight", 2, V, D, 0, L + 1, HP_STACK_DENSE, 1.0f / sqrtf((float)D), 0,
        HP_REPLICATE);
#undef ADD
    return 0;
}


// Fills the derived columns of p for the rank with coordinates co.
static void place(hp_param *p, const hp_model_config *m, const hp_dims *d, const hp_coords *co) {
    // the tp split: dense params over tp; experts over the expert-tp group (= tp ranks)
    const int expert = p->stack == HP_STACK_EXPERT;
    p->tp_size = p->tp_dim == HP_REPLICATE ? 1 : (expert ? hp_dims_expert_tp(d) : d->tp);
    p->tp_rank = p->tp_size > 1 ? co->t : 0;
    p->ep_size = p->ep_dim == HP_REPLICATE ? 1 : d->ep;
    p->ep_rank = p->ep_size > 1 ? co->ep : 0;
    p->full_numel = 1;
    p->local_numel = 1;
    for (int i = 0; i < p->ndim; i++) {
        int64_t n = p->shape[i], start = 0;
        if (i == p->tp_dim) { n /= p->tp_size; start = n * p->tp_rank; }
        if (i == p->ep_dim) { n /= p->ep_size; start = n * p->ep_rank; }
        p->local_shape[i] = n;
        p->local_start[i] = start;
        p->full_numel *= p->shape[i];
        p->local_numel *= n;
    }
    // FSDP: dense params over fsdp (= dp_shard x cp); experts over efsdp when EP is on
    // (their own stack), else over the same fsdp group. Experts are chunked on dim 1 when
    // dim 0 would leave shards empty (efsdp * ep > E), TorchTitan's #1561 rule.
    if (expert && d->ep > 1) {
        p->fsdp_group = HP_G_EFSDP;
        p->fsdp_size = hp_dims_efsdp(d);
        p->fsdp_rank = co->efsdp;
    } else {
        p->fsdp_group = HP_G_FSDP;
        p->fsdp_size = hp_dims_fsdp(d);
        p->fsdp_rank = co->fsdp;
    }
    if (expert) p->fsdp_dim = p->fsdp_size * d->ep > m->num_experts ? 1 : 0;
    const int64_t rows = p->local_shape[p->fsdp_dim];
    p->fsdp_chunk = (rows + p->fsdp_size - 1) / p->fsdp_size;
    int64_t own = rows - (int64_t)p->fsdp_rank * p->fsdp_chunk;
    p->shard_rows = own < 0 ? 0 : (own > p->fsdp_chunk ? p->fsdp_chunk : own);
    p->shard_numel = rows ? p->fsdp_chunk * (p->local_numel / rows) : 0;
}

// unit_in_shards (params.h), in one pass over the table: a unit starts unset (-2), takes the
// shard start of its first parameter and drops to -1 when a parameter is not whole on the
// rank or not at the same distance from its work offset; a unit with no parameter here is -1.
static void find_units_in_shards(hp_param_table *t) {
    int64_t *start = t->unit_in_shards;
    for (int u = 0; u < t->n_units; u++) start[u] = -2;
    for (int i = 0; i < t->n; i++) {
        const hp_param *p = &t->p[i];
        if (!p->on_rank || start[p->unit] == -1) continue;
        const int64_t s = p->shard_offset - p->work_offset;
        const int whole = p->fsdp_size == 1 && p->shard_numel == p->local_numel;
        start[p->unit] = whole && (start[p->unit] == -2 || start[p->unit] == s) ? s : -1;
    }
    for (int u = 0; u < t->n_units; u++)
        if (start[u] == -2) start[u] = -1;
}

// max_unit_work, max_gathered_work and gathered_work from unit_in_shards
static void count_gathered_work(hp_param_table *t) {
    t->max_unit_work = t->max_gathered_work = t->gathered_work = 0;
    for (int u = 0; u < t->n_units; u++) {
        if (t->unit_work_numel[u] > t->max_unit_work) t->max_unit_work = t->unit_work_numel[u];
        if (t->unit_in_shards[u] >= 0) continue;
        if (t->unit_work_numel[u] > t->max_gathered_work) t->max_gathered_work = t->unit_work_numel[u];
        t->gathered_work += t->unit_work_numel[u];
    }
}

int hp_params_build(hp_param_table *t, const hp_model_config *m, const hp_dims *d, int rank) {
    memset(t, 0, sizeof *t);
    builder b = { t, 0 };
    if (add_model(&b, m, d) != 0) { hp_params_free(t); return -1; }
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    t->n_units = m->n_layers + 2;
    t->unit_work_numel = calloc((size_t)t->n_units, sizeof(int64_t));
    t->unit_shard_start = calloc((size_t)t->n_units + 1, sizeof(int64_t));
    t->unit_in_shards = calloc((size_t)t->n_units, sizeof(int64_t));
    if (!t->unit_work_numel || !t->unit_shard_start || !t->unit_in_shards) { hp_params_free(t); return -1; }
    // pipeline: a parameter lives only on the pp rank of its stage (pipeline.md)
    hp_pp_layout lay;
    if (hp_pp_layout_init(&lay, d, m->n_layers) != 0) { hp_params_free(t); return -1; }
    int64_t shard = 0, full = 0;
    for (int i = 0; i < t->n; i++) {
        hp_param *p = &t->p[i];
        place(p, m, d, &co);
        p->pp_stage = hp_pp_unit_stage(&lay, p->unit);
        p->on_rank = lay.stage_rank[p->pp_stage] == co.p;
        if (!p->on_rank) p->shard_rows = p->shard_numel = 0;
        p->work_offset = t->unit_work_numel[p->unit];
        if (p->on_rank) t->unit_work_numel[p->unit] += p->local_numel;
        p->shard_offset = shard;
        shard += p->shard_numel;
        p->full_offset = full;
        full += p->full_numel;
        t->unit_shard_start[p->unit + 1] = shard;
    }
    for (int u = 1; u <= t->n_units; u++)   // units are contiguous and in order
        if (t->unit_shard_start[u] < t->unit_shard_start[u - 1])
            t->unit_shard_start[u] = t->unit_shard_start[u - 1];
    t->shard_numel = shard;
    t->full_numel = full;
    find_units_in_shards(t);
    count_gathered_work(t);
    return 0;
}

void hp_params_gather_every_unit(hp_param_table *t) {
    for (int u = 0; u < t->n_units; u++) t->unit_in_shards[u] = -1;
    count_gathered_work(t);
}

void hp_params_free(hp_param_table *t) {
    free(t->p);
    free(t->unit_work_numel);
    free(t->unit_shard_start);
    free(t->unit_in_shards);
    memset(t, 0, sizeof *t);
}

int hp_params_find(const hp_param_table *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->p[i].name, name) == 0) return i;
    return -1;
}

// ---------------------------------------------------------------------------------------
// index arithmetic shared by init, FSDP gather/scatter, the verifier and checkpoints

int64_t hp_param_global_index(const hp_param *p, int64_t li) {
    int64_t idx[3] = { 0, 0, 0 };
    for (int i = p->ndim - 1; i >= 0; i--) {
        idx[i] = li % p->local_shape[i];
        li /= p->local_shape[i];
    }
    int64_t g = 0;
    for (int i = 0; i < p->ndim; i++) g = g * p->shape[i] + idx[i] + p->local_start[i];
    return g;
}

int64_t hp_param_shard_to_local(const hp_param *p, int64_t k) {
    const int fd = p->fsdp_dim;
    const int64_t rows = p->local_shape[fd];
    int64_t inner = 1;
    for (int i = fd + 1; i < p->ndim; i++) inner *= p->local_shape[i];
    const int64_t i_in = k % inner;
    const int64_t j = (k / inner) % p->fsdp_chunk;
    const int64_t outer = k / (inner * p->fsdp_chunk);
    if (j >= p->shard_rows) return -1;
    const int64_t row = (int64_t)p->fsdp_rank * p->fsdp_chunk + j;
    return (outer * rows + row) * inner + i_in;
}

// ---------------------------------------------------------------------------------------
// printing (hp plan)

static void shape_str(char *buf, size_t n, int ndim, const int64_t *s) {
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

static void placement_str(char *buf, size_t n, const hp_param *p) {
    char tp[24] = "R", ep[24] = "R";
    if (p->tp_dim != HP_REPLICATE) snprintf(tp, sizeof tp, "S(%d)", p->tp_dim);
    if (p->ep_dim != HP_REPLICATE) snprintf(ep, sizeof ep, "S(%d)", p->ep_dim);
    snprintf(buf, n, "tp:%s%s ep:%s %s:S(%d)", tp, p->tp_grad_partial ? "+partial-grad" : "", ep,
             hp_group_name((hp_group_kind)p->fsdp_group), p->fsdp_dim);
}

// One row's text: full shape, placement, local shape, fsdp shard shape (rows owned).
typedef struct { char fs[48], pl[64], ls[48], ss[64]; } param_row;

static void param_row_of(param_row *r, const hp_param *p) {
    shape_str(r->fs, sizeof r->fs, p->ndim, p->shape);
    shape_str(r->ls, sizeof r->ls, p->ndim, p->local_shape);
    placement_str(r->pl, sizeof r->pl, p);
    int64_t sh[3];
    memcpy(sh, p->local_shape, sizeof sh);
    sh[p->fsdp_dim] = p->fsdp_chunk;
    char s[48];
    shape_str(s, sizeof s, p->ndim, sh);
    snprintf(r->ss, sizeof r->ss, "%s (%lld)", s, (long long)p->shard_rows);
}

// "layers.17.attention.wq.weight" -> kind "layers.*.attention.wq.weight", layer 17; a name
// outside the blocks is its own kind (layer -1).
static int param_kind(char *kind, size_t n, const char *name) {
    int layer = -1, used = 0;
    if (sscanf(name, "layers.%d.%n", &layer, &used) == 1 && used > 0) {
        snprintf(kind, n, "layers.*.%s", name + used);
        return layer;
    }
    snprintf(kind, n, "%s", name);
    return -1;
}

void hp_params_print(FILE *out, const hp_param_table *t, const hp_dims *d, int rank, int each_layer) {
    (void)d;
    fprintf(out, "parameters on rank %d (S(d) = sharded on dim d, R = replicated%s):\n", rank,
            each_layer ? "" : "; the blocks' parameters one row per kind, --params all lists each");
    fprintf(out, "  %-42s %-16s %-40s %-16s %s\n", "name", "full shape", "placement",
            "local shape", "fsdp shard (rows owned)");
    // summary: a kind's row stands for every layer whose row reads the same; a layer whose shapes
    // differ (another kind of block) gets a row of its own
    char *done = calloc((size_t)t->n, 1);
    for (int i = 0; i < t->n; i++) {
        if (done && done[i]) continue;
        param_row r;
        param_row_of(&r, &t->p[i]);
        char kind[96], name[112];
        const int layer = param_kind(kind, sizeof kind, t->p[i].name);
        int count = 1, last = layer, contiguous = 1;
        for (int j = i + 1; !each_layer && done && layer >= 0 && j < t->n; j++) {
            char kj[96];
            param_row rj;
            const int lj = param_kind(kj, sizeof kj, t->p[j].name);
            if (done[j] || lj < 0 || strcmp(kj, kind)) continue;
            param_row_of(&rj, &t->p[j]);
            if (strcmp(rj.fs, r.fs) || strcmp(rj.pl, r.pl) || strcmp(rj.ls, r.ls) || strcmp(rj.ss, r.ss))
                continue;
            done[j] = 1;
            contiguous &= lj == last + 1;
            last = lj;
            count++;
        }
        if (count > 1)
            snprintf(name, sizeof name, "%s x%d", kind, count);
        else
            snprintf(name, sizeof name, "%s", t->p[i].name);
        fprintf(out, "  %-42s %-16s %-40s %-16s %s", name, r.fs, r.pl, r.ls, r.ss);
        if (count > 1) fprintf(out, "  layers %d..%d%s", layer, last, contiguous ? "" : " (some)");
        fputc('\n', out);
    }
    free(done);
    fprintf(out, "  full model %lld floats; this rank's shard buffer %lld floats (padding "
                 "included); largest unit unsharded %lld floats\n",
            (long long)t->full_numel, (long long)t->shard_numel, (long long)t->max_unit_work);
}

float hp_param_init_value(const hp_param *p, uint64_t seed, uint64_t stream, int64_t gi) {
    if (p->init_std == 0.0f) return 1.0f;
    return p->init_std * hp_rng_normal(seed, stream, (uint64_t)gi);
}

void hp_params_init_full(const hp_param_table *t, uint64_t seed, float *full) {
    for (int i = 0; i < t->n; i++) {
        const hp_param *p = &t->p[i];
        const uint64_t stream = hp_name_id(p->name);
        for (int64_t gi = 0; gi < p->full_numel; gi++)
            full[p->full_offset + gi] = hp_param_init_value(p, seed, stream, gi);
    }
}
