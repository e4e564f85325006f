// trainer.c - one rank's training job: set-up, data of each step (a data source's, or the
// program's own batch: hp_trainer_feed), the step's phases, global grad-norm clipping and the
// optimiser on shards.
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hyperpar/float8.h"
#include "hyperpar/cp.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/kernels.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/optim.h"
#include "optim/optimizer.h"
#include "precision/precision.h"
#include "train/trainer_internal.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

// The step's data buffers and this rank's positions (cp, then ulysses cut).
static int alloc_step_data(hp_trainer *tr) {
    const hp_local_shapes *sh = &tr->sh;
    const size_t reg_step = (size_t)sh->Nreg * (size_t)sh->M;
    int n_moe = 0;
    for (int l = 0; l < tr->m.n_layers; l++) n_moe += hp_model_is_moe_layer(&tr->m, l);
    tr->pos = hp_mem_alloc(HP_MEM_SCRATCH, ((size_t)sh->Sc + 1) * sizeof(int));
    tr->rope = hp_mem_alloc(HP_MEM_SCRATCH, ((size_t)sh->Sc * (size_t)sh->hd + 1) * sizeof(float));
    tr->pos_cp = hp_mem_alloc(HP_MEM_SCRATCH, ((size_t)sh->Sc_cp + 1) * sizeof(int));
    tr->tokens = hp_mem_alloc(HP_MEM_SCRATCH, (reg_step + 1) * sizeof(int));
    tr->labels = hp_mem_alloc(HP_MEM_SCRATCH, (reg_step + 1) * sizeof(int));
    tr->routing_step = hp_mem_alloc(HP_MEM_SCRATCH, ((size_t)n_moe * reg_step * tr->m.top_k + 1) * sizeof(int));
    if (!tr->pos || !tr->rope || !tr->pos_cp || !tr->tokens || !tr->labels || !tr->routing_step)
        return -1;
    hp_cp_positions(tr->pos_cp, tr->rc.seq_len, tr->d.cp, tr->co.c, tr->rc.cp_load_balance);
    hp_seq_positions(tr->pos, tr->rc.seq_len, tr->d.cp, tr->co.c, tr->d.ulysses, tr->co.u,
                     tr->rc.cp_load_balance);
    const hp_model_config *m = &tr->m;
    return hp_rope_table_llama3(tr->rope, tr->pos, m->rope_theta, m->rope_factor, m->rope_low_freq_factor,
                                m->rope_high_freq_factor, m->rope_original_max_positions, sh->Sc, sh->hd);
}

// The styles' states, then the model over the hooks they fill.
static int setup_model(hp_trainer *tr) {
    if (hp_params_build(&tr->pt, &tr->m, &tr->d, tr->rank) != 0) return -1;
    // (bf16 copies, or the fp8 all-gather's: every unit is gathered, none is its shards)
    if (tr->rc.mp_param == HP_DTYPE_BFLOAT16 ||
        (tr->rc.float8_fsdp_all_gather && tr->rc.float8 == HP_FLOAT8_TENSORWISE))
        hp_params_gather_every_unit(&tr->pt);
    if (hp_fsdp_init(&tr->fsdp, &tr->pt, tr->comm, &tr->d, tr->sh.M, &tr->rc) != 0 ||
        hp_tp_init(&tr->tp, tr->comm, &tr->sh, tr->rc.mp_param == HP_DTYPE_BFLOAT16) != 0 || hp_tp_set_async(&tr->tp, tr->rc.async_tp) != 0 ||
        alloc_step_data(tr) != 0)
        return -1;
    hp_attn_style_init(&tr->attn, tr);
    hp_model_hooks hk;
    hp_trainer_hooks(tr, &hk);
    if (hp_trainer_precision(tr, &hk) != 0) return -1;
    // the blocks where a stage's input arrives (the pipeline's stages; block 0 without)
    int *entry = calloc((size_t)tr->m.n_layers + 1, sizeof(int));   // (untracked: freed here)
    hp_pp_layout lay;
    if (!entry || (tr->d.pp > 1 && hp_pp_layout_init(&lay, &tr->d, tr->m.n_layers) != 0)) {
        free(entry);
        hp_precision_free(&hk.prec);
        return -1;
    }
    entry[0] = 1;
    for (int s = 0; tr->d.pp > 1 && s < lay.n_stages; s++) entry[lay.stage_first[s]] = 1;
    const hp_transformer_opts opt = {
        .n_slots = tr->n_slots, .split_backward = tr->split_backward, .ac_every = tr->rc.ac_every,
        .stage_entry = entry,
    };
    const int made = hp_transformer_init(&tr->tf, &tr->m, &tr->sh, &tr->pt, &hk, &opt);
    free(entry);
    if (made != 0) return -1;
    if (hp_trainer_precision_convert(tr) != 0) return -1;
    tr->tf.routing = tr->routing_step;   // the forwards record every microbatch's routing
    tr->tf.pos = tr->pos;
    tr->tf.rope = tr->rope;
    tr->tf.tokens = tr->tokens;
    tr->tf.labels = tr->labels;
    return 0;
}

hp_trainer *hp_trainer_init(MPI_Comm world, const hp_model_config *m, const hp_dims *d,
                            const hp_run_config *rc, char *err, size_t errlen) {
    hp_mem_reset_peak();   // the high-water marks of hp_trainer_memory_stats start here
    hp_trainer *tr = calloc(1, sizeof *tr);
    if (!tr) { snprintf(err, errlen, "out of memory"); return NULL; }
    tr->m = *m;
    tr->d = *d;
    tr->rc = *rc;
    tr->world = world;
    tr->n_slots = 1;
    MPI_Comm_rank(world, &tr->rank);
    if (hp_failpoint_init(err, errlen) != 0) { free(tr); return NULL; }   // HP_FAILPOINT, once
    tr->data = hp_data_open(rc->data_path, rc->data_format, m->vocab_size, err, errlen);
    if (!tr->data) { free(tr); return NULL; }
    if (hp_data_check_batch(tr->data, rc->seq_len, rc->batch, err, errlen) != 0) {   // Nw < B
        hp_data_close(tr->data);
        free(tr);
        return NULL;
    }
    tr->comm = hp_comm_init(world, d, 1);
    hp_mesh_coords(d, tr->rank, &tr->co);
    hp_local_shapes_init(&tr->sh, m, d, rc, &tr->co);
    if (d->pp > 1 && hp_pp_init(tr, err, errlen) != 0) {
        hp_trainer_free(tr);
        return NULL;
    }
    if (setup_model(tr) != 0) {
        snprintf(err, errlen, "out of memory setting up the model");
        hp_trainer_free(tr);
        return NULL;
    }
    hp_fsdp_init_params(&tr->fsdp, tr->rc.seed);
    return tr;
}

void hp_trainer_free(hp_trainer *tr) {
    if (!tr) return;
    hp_pp_free(tr);
    hp_precision_hooks prec = tr->tf.hk.prec;   // (the model's copy: freed after the model)
    hp_transformer_free(&tr->tf);
    hp_precision_free(&prec);
    hp_tp_free(&tr->tp);
    hp_fsdp_free(&tr->fsdp);
    hp_mem_free(tr->pos); hp_mem_free(tr->rope); hp_mem_free(tr->pos_cp); hp_mem_free(tr->tokens); hp_mem_free(tr->labels);
    hp_mem_free(tr->routing_step);
    free(tr->feed_in); free(tr->feed_tg);
    hp_params_free(&tr->pt);
    if (tr->comm) hp_comm_free(tr->comm);
    if (tr->data) hp_data_close(tr->data);
    free(tr);
}

void hp_trainer_sequence(const hp_trainer *tr, int *ids, int step, int g) {
    hp_data_sequence(tr->data, ids, tr->rc.seed, step, g, tr->rc.batch, tr->rc.seq_len);
}

// The batch of step tr->step: this rank's Bl_step sequences (its batch-mesh shard, all
// microbatches: global sequence co.batch * Bl_step + b), cut to its cp positions; tp ranks
// read the same. fed: the program's batch (hp_trainer_feed kept this rank's sequences),
// else the data source's. N_global counts valid labels of the whole step before the cp cut
// and the microbatch split, summed over the batch mesh only (TorchTitan #2206).
static void load_batch(hp_trainer *tr, int fed) {
    const int S = tr->rc.seq_len;
    int *ids = malloc((size_t)(S + 1) * sizeof(int));
    int64_t n_valid = 0;
    for (int b = 0; b < tr->sh.Bl_step; b++) {
        const int *in = ids, *tg = ids + 1;   // the sequence's S inputs and their S labels
        if (fed) {
            in = tr->feed_in + (size_t)b * S;
            tg = tr->feed_tg + (size_t)b * S;
        } else {
            hp_trainer_sequence(tr, ids, tr->step, tr->co.batch * tr->sh.Bl_step + b);
        }
        for (int j = 0; j < tr->sh.Sc; j++) {
            tr->tokens[b * tr->sh.Sc + j] = in[tr->pos[j]];
            tr->labels[b * tr->sh.Sc + j] = tg[tr->pos[j]];
        }
        for (int i = 0; i < S; i++) n_valid += tg[i] != -100;
    }
    free(ids);
    if (!hp_failpoint(HP_FP_N_GLOBAL_LOCAL))   // the bug: each rank divides by its own count
        hp_allreduce_sum_i64(tr->comm, HP_G_BATCH, &n_valid, 1);
    tr->n_valid_global = n_valid > 0 ? n_valid : 1;
    tr->tf.n_valid_global = tr->n_valid_global;
}

// The step's loss from this rank's CE sum (summed over the microbatches in ascending order):
// divided once by N_global, summed over the loss mesh (every tp rank holds the same share);
// under pp only the last stage has it, and a sum over the pp group (the others add exact
// zeros) hands it to every stage unchanged.
static double reduce_loss(hp_trainer *tr, double ce_sum) {
    double loss = ce_sum / (double)tr->n_valid_global;
    hp_allreduce_sum_f64(tr->comm, HP_G_LOSS, &loss, 1);
    if (tr->pp) hp_allreduce_sum_f64(tr->comm, HP_G_PP, &loss, 1);
    return loss;
}

// Each phase of a step (this, clip, optimizer step) adds its own traffic to step_bytes, so
// that a caller running the phases itself (hp run --dump: gathers between them) measures the
// step's bytes and not its own.
double hp_trainer_forward_backward(hp_trainer *tr) {
    tr->step++;
    hp_comm_set_step(tr->comm, tr->step);   // named by the watchdog if a wait times out
    memset(tr->step_bytes, 0, sizeof tr->step_bytes);   // the step's first phase
    hp_trainer_count_bytes(tr, -1);
    load_batch(tr, tr->feed_pending);
    tr->feed_pending = 0;
    // microbatches in ascending order: the CE sums add up in that order and are divided once
    // by N_global (the loss of pipeline.md); grads accumulate inside the backward
    double ce_sum = 0.0;
    if (tr->pp) {
        ce_sum = hp_pp_run_step(tr);   // non-zero on the last stage only
    } else {
        for (tr->tf.mb = 0; tr->tf.mb < tr->sh.M; tr->tf.mb++) {
            hp_transformer_forward(&tr->tf);
            ce_sum += tr->tf.ce_sum_local;
            hp_transformer_backward(&tr->tf);
        }
        hp_fsdp_release_all(&tr->fsdp);   // the step's end: the gradient exchanges complete
        tr->tf.mb = 0;
    }
    const double loss = reduce_loss(tr, ce_sum);
    hp_trainer_count_bytes(tr, +1);
    tr->async_tp_ops = hp_tp_take_async_ops(&tr->tp);
    return loss;
}

long hp_trainer_async_tp_ops(const hp_trainer *tr) { return tr->async_tp_ops; }

double hp_trainer_eval_loss(hp_trainer *tr, int step) {
    const int saved = tr->step;
    tr->step = step;
    load_batch(tr, 0);   // the data source's batch of `step` (a fed batch stays pending)
    tr->tf.routing = NULL;   // the last step's routing stays what the verifier gathers
    double ce_sum = 0.0;
    if (tr->pp) {
        ce_sum = hp_pp_run_forward(tr);
    } else {
        for (tr->tf.mb = 0; tr->tf.mb < tr->sh.M; tr->tf.mb++) {
            hp_transformer_forward(&tr->tf);
            ce_sum += tr->tf.ce_sum_local;
        }
        tr->tf.mb = 0;
    }
    tr->tf.routing = tr->routing_step;
    tr->step = saved;
    return reduce_loss(tr, ce_sum);
}

// Each gradient element is counted once: by replica 0 over dp_replicate, and by tp rank 0
// for parameters replicated over tp (norms, router gate). Shards are disjoint otherwise.
double hp_trainer_clip(hp_trainer *tr) {
    hp_trainer_count_bytes(tr, -1);
    double sq = 0.0;
    for (int i = 0; i < tr->pt.n; i++) {
        const hp_param *p = &tr->pt.p[i];
        const int owner = tr->co.r == 0 &&
                          (p->tp_size > 1 || p->stack == HP_STACK_EXPERT || tr->co.t == 0 ||
                           hp_failpoint(HP_FP_GRAD_NORM_DOUBLE_COUNT));
        if (!owner) continue;
        const float *g = tr->fsdp.g_shard + p->shard_offset;
        for (int64_t k = 0; k < p->shard_numel; k++) sq += (double)g[k] * (double)g[k];
    }
    hp_allreduce_sum_f64(tr->comm, HP_G_WORLD, &sq, 1);
    hp_trainer_count_bytes(tr, +1);
    const double norm = sqrt(sq);
    if (tr->rc.max_norm > 0.0f) {
        const double coef = (double)tr->rc.max_norm / (norm + 1e-6);
        if (coef < 1.0)
            for (int64_t k = 0; k < tr->pt.shard_numel; k++) tr->fsdp.g_shard[k] *= (float)coef;
    }
    return norm;
}

void hp_trainer_optimizer_step(hp_trainer *tr) {
    hp_trainer_count_bytes(tr, -1);   // (no collective today; counted should one come)
    const size_t n = (size_t)tr->pt.shard_numel;
    // (the bug of bf16_master_update: rank 1 applies the update to its bf16 copy only, so its
    //  fp32 master shard does not move)
    float *kept = NULL;
    if (tr->rank == 1 && hp_failpoint(HP_FP_BF16_MASTER_UPDATE) && (kept = malloc(n * sizeof(float) + 1)))
        memcpy(kept, tr->fsdp.p_shard, n * sizeof(float));
    hp_optimizer_update(&tr->rc, tr->fsdp.p_shard, tr->fsdp.g_shard, tr->fsdp.m_shard, tr->fsdp.v_shard, n,
                        tr->step);
    if (kept) memcpy(tr->fsdp.p_shard, kept, n * sizeof(float));
    free(kept);
    hp_trainer_count_bytes(tr, +1);
}

int hp_trainer_step(hp_trainer *tr, hp_step_stats *st) {
    hp_barrier(tr->comm, HP_G_WORLD);
    const double t0 = now_ms();
    st->loss = hp_trainer_forward_backward(tr);
    st->grad_norm = hp_trainer_clip(tr);
    st->step = tr->step;
    st->lr = (double)hp_lr_at(&tr->rc, tr->step);   // what hp_optimizer_update applies
    if (!hp_step_finite(st->loss, st->grad_norm)) {
        st->ms = now_ms() - t0;
        st->tokens_per_s = 0.0;
        return HP_EXIT_FAIL;
    }
    hp_trainer_optimizer_step(tr);   // the phases count the step's traffic themselves
    hp_barrier(tr->comm, HP_G_WORLD);
    st->ms = now_ms() - t0;
    st->tokens_per_s = (double)tr->rc.batch * tr->rc.seq_len / (st->ms * 1e-3);
    return 0;
}

// ---- the program's own batch (hp_trainer_feed) -------------------------------------------

// FNV-1a over the batch's ids: the ranks compare it to find a program whose ranks built
// different batches (each would train on its own shard of another batch).
static uint64_t fnv1a(uint64_t h, const int32_t *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const uint32_t v = (uint32_t)x[i];
        for (int k = 0; k < 4; k++) h = (h ^ ((v >> (8 * k)) & 0xffu)) * 0x100000001b3ull;
    }
    return h;
}

// The rules of an hp_batch (train.h), checked on this rank's copy of the whole global batch;
// 0, or -1 with one line in msg. *hash: of the batch's form and ids.
static int check_batch(const hp_trainer *tr, const hp_batch *bt, uint64_t *hash, char *msg, size_t len) {
    const int B = tr->rc.batch, S = tr->rc.seq_len, V = tr->m.vocab_size;
    *hash = 0;
    if (!bt || !bt->tokens) {
        snprintf(msg, len, "hp_trainer_feed: no batch (tokens NULL)");
        return -1;
    }
    if (bt->n_seqs != B || bt->seq_len != S) {
        snprintf(msg, len, "hp_trainer_feed: a batch of %d x %d, the trainer's is %d sequences (run.batch) x %d "
                 "positions (run.seq_len): every rank passes the whole global batch", bt->n_seqs, bt->seq_len, B, S);
        return -1;
    }
    const int w = bt->labels ? S : S + 1;   // ids per row of tokens
    for (int g = 0; g < B; g++)
        for (int i = 0; i < w; i++) {
            const int32_t id = bt->tokens[(size_t)g * w + i];
            if (id < 0 || id >= V) {
                snprintf(msg, len, "hp_trainer_feed: token id %ld at sequence %d, position %d is outside the "
                         "vocabulary [0, %d)", (long)id, g, i, V);
                return -1;
            }
        }
    for (int g = 0; bt->labels && g < B; g++)
        for (int i = 0; i < S; i++) {
            const int32_t id = bt->labels[(size_t)g * S + i];
            if (id != -100 && (id < 0 || id >= V)) {
                snprintf(msg, len, "hp_trainer_feed: label %ld at sequence %d, position %d is neither an id in "
                         "[0, %d) nor -100 (ignored)", (long)id, g, i, V);
                return -1;
            }
        }
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)(bt->labels != NULL);
    h = fnv1a(h, bt->tokens, (size_t)B * w);
    if (bt->labels) h = fnv1a(h, bt->labels, (size_t)B * S);
    *hash = h;
    return 0;
}

int hp_trainer_feed(hp_trainer *tr, const hp_batch *bt, char *err, size_t errlen) {
    char msg[512] = "";
    uint64_t h = 0;
    int bad = check_batch(tr, bt, &h, msg, sizeof msg) != 0;
    const int S = tr->rc.seq_len, n = tr->sh.Bl_step;
    if (!bad && (!tr->feed_in || !tr->feed_tg)) {   // the first feed: this rank's shard's buffers
        free(tr->feed_in); free(tr->feed_tg);
        tr->feed_in = malloc(((size_t)n * S + 1) * sizeof(int));
        tr->feed_tg = malloc(((size_t)n * S + 1) * sizeof(int));
        if (!tr->feed_in || !tr->feed_tg) {
            snprintf(msg, sizeof msg, "hp_trainer_feed: out of memory for the batch's shard");
            bad = 1;
        }
    }
    // every rank decides alike: any rank refused, or the ranks' batches differ (max != min)
    unsigned long long v[3] = { (unsigned long long)bad, h, ~h };
    hp_mpi_allreduce(tr->world, v, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, "feed-agree");
    if (v[0]) {   // the lowest refusing rank's line, on every rank
        int who = bad ? tr->rank : INT_MAX;
        hp_mpi_allreduce(tr->world, &who, 1, MPI_INT, MPI_MIN, "feed-agree");
        hp_mpi_broadcast(tr->world, msg, (int)sizeof msg, MPI_CHAR, who, "feed-agree");
        msg[sizeof msg - 1] = '\0';
    } else if (v[1] != h || v[2] != ~h) {
        snprintf(msg, sizeof msg, "hp_trainer_feed: the ranks passed different batches (every rank passes the "
                 "same global batch; each takes its own shard of it)");
    } else {
        // this rank's sequences (global g = co.batch * Bl_step + b), as load_batch takes them
        // from a data source
        const int w = bt->labels ? S : S + 1;
        for (int b = 0; b < n; b++) {
            const int g = tr->co.batch * n + b;
            const int32_t *row = bt->tokens + (size_t)g * w;
            const int32_t *lab = bt->labels ? bt->labels + (size_t)g * S : row + 1;
            for (int i = 0; i < S; i++) {
                tr->feed_in[(size_t)b * S + i] = row[i];
                tr->feed_tg[(size_t)b * S + i] = lab[i];
            }
        }
        tr->feed_pending = 1;
        return 0;
    }
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return HP_EXIT_CONFIG;
}

int hp_trainer_step_batch(hp_trainer *tr, const hp_batch *batch, hp_step_stats *st, char *err, size_t errlen) {
    const int rc = hp_trainer_feed(tr, batch, err, errlen);
    return rc != 0 ? rc : hp_trainer_step(tr, st);
}

const hp_param_table *hp_trainer_params(const hp_trainer *tr) { return &tr->pt; }
double hp_trainer_pp_idle(const hp_trainer *tr) { return tr->pp ? hp_pp_idle_fraction(tr) : 0.0; }
int hp_trainer_pp_slots(const hp_trainer *tr) { return tr->n_slots; }
// the model's slots and recompute set, and the pipeline's stage-gradient buffers (as planned)
size_t hp_trainer_activation_bytes(const hp_trainer *tr) {
    return tr->tf.activation_bytes + hp_pp_boundary_bytes(tr);
}
int hp_trainer_pp_timeline(const hp_trainer *tr, float *out, int cap) {
    return tr->pp ? hp_pp_timeline(tr, out, cap) : 0;
}
hp_comm *hp_trainer_comm(hp_trainer *tr) { return tr->comm; }

void hp_trainer_set_params(hp_trainer *tr, const float *full) { hp_fsdp_set_params(&tr->fsdp, full); }
double hp_trainer_gather_params(hp_trainer *tr, float *full) {
    return hp_fsdp_gather_full(&tr->fsdp, tr->world, &tr->m, tr->fsdp.p_shard, full);
}
double hp_trainer_gather_grads(hp_trainer *tr, float *full) {
    return hp_fsdp_gather_full(&tr->fsdp, tr->world, &tr->m, tr->fsdp.g_shard, full);
}
int hp_trainer_rank(const hp_trainer *tr) { return tr->rank; }

void hp_trainer_memory(const hp_trainer *tr, size_t *persistent, size_t *working) {
    *persistent = (size_t)tr->pt.shard_numel * 4 * sizeof(float);   // params, grads, m, v
    *working = ((size_t)tr->pt.max_gathered_work + 1) * 2 * sizeof(float);   // fsdp.c's work_p, work_g
}

// Routing of every token of the global batch, for the verifier's route-flip report.
// 1 when block l runs on pp rank p.
static int layer_on(const hp_trainer *tr, int l, int p) {
    hp_pp_layout lay;
    hp_pp_layout_init(&lay, &tr->d, tr->m.n_layers);
    return lay.stage_rank[hp_pp_layer_stage(&lay, l)] == p;
}

int hp_trainer_gather_routing(hp_trainer *tr, int *routing) {
    const hp_model_config *m = &tr->m;
    int n_moe = 0;
    for (int l = 0; l < m->n_layers; l++) n_moe += hp_model_is_moe_layer(m, l);
    if (n_moe == 0) return 0;
    // the step's routing (every microbatch), rows in the rank's step order (Bl_step, Sc)
    const int K = m->top_k, S = tr->rc.seq_len, rows = tr->sh.Nreg * tr->sh.M, per = rows * K * n_moe;
    const int *mine = tr->routing_step;
    int world_size;
    MPI_Comm_size(tr->world, &world_size);
    int *all = tr->rank == 0 ? malloc((size_t)per * world_size * sizeof(int)) : NULL;
    hp_gather_to_root_int(tr->comm, all, mine, (size_t)per);
    if (tr->rank == 0) {
        int *pos = malloc((size_t)tr->sh.Sc * sizeof(int));
        for (int r = 0; r < world_size; r++) {
            hp_coords co;
            hp_mesh_coords(&tr->d, r, &co);
            hp_seq_positions(pos, S, tr->d.cp, co.c, tr->d.ulysses, co.u, tr->rc.cp_load_balance);
            const int *src = all + (size_t)r * per;
            // under pp only the ranks holding a layer routed its tokens
            for (int l = 0, li = -1; l < m->n_layers; l++) {
                if (!hp_model_is_moe_layer(m, l)) continue;
                li++;
                if (tr->d.pp > 1 && !layer_on(tr, l, co.p)) continue;
                for (int b = 0; b < tr->sh.Bl_step; b++)
                    for (int j = 0; j < tr->sh.Sc; j++) {
                        const int g = co.batch * tr->sh.Bl_step + b;
                        memcpy(routing + (((size_t)li * tr->rc.batch + g) * S + pos[j]) * K,
                               src + ((size_t)li * rows + (size_t)b * tr->sh.Sc + j) * K,
                               (size_t)K * sizeof(int));
                    }
            }
        }
        free(pos);
    }
    free(all);
    return n_moe;
}
