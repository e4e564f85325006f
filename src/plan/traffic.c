// traffic.c - the bytes one training step moves per (group, op) on a rank, from the
// formulas of docs/traffic.md and comm.h's counting rules. The verifier compares them with
// what the collectives counted, so a collective added, dropped or resized shows up.
#include <stdlib.h>
#include <string.h>
#include "hyperpar/cp.h"
#include "hyperpar/params.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/shapes.h"
#include "hyperpar/traffic.h"
#include "hyperpar/traffic_ac.h"
#include "hyperpar/ulysses.h"
#include "precision/float8_linears.h"

#define F4 ((uint64_t)sizeof(float))

// What of the model a rank's pp rank holds: its blocks, MoE blocks, embedding and head, and
// how many stage boundaries it sends across (forward from a stage whose next stage runs
// elsewhere, backward from one whose previous stage does).
typedef struct pp_share { int layers, moe_layers, embed, head, sends_fwd, sends_bwd; } pp_share;

static pp_share share_of(const hp_model_config *m, const hp_dims *d, int rank) {
    pp_share sh = { 0, 0, 0, 0, 0, 0 };
    hp_pp_layout lay;
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    if (hp_pp_layout_init(&lay, d, m->n_layers) != 0) return sh;
    for (int s = 0; s < lay.n_stages; s++) {
        if (lay.stage_rank[s] != co.p) continue;
        sh.layers += lay.stage_layers[s];
        for (int l = lay.stage_first[s]; l < lay.stage_first[s] + lay.stage_layers[s]; l++)
            sh.moe_layers += hp_model_is_moe_layer(m, l);
        sh.embed |= s == 0;
        sh.head |= s == lay.n_stages - 1;
        sh.sends_fwd += s < lay.n_stages - 1 && lay.stage_rank[s + 1] != co.p;
        sh.sends_bwd += s > 0 && lay.stage_rank[s - 1] != co.p;
    }
    return sh;
}

// The formulas; returns 1 when the tp all-reduce also carries a routing-dependent part (the
// rowwise float8 amax per row over a routed expert's etp-split hidden, with ep > 1), whose
// bytes per routed entry computed here go to per_entry[l] (NULL: not wanted), not to bytes.
static int predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc, int rank,
                   uint64_t bytes[HP_G_COUNT][HP_OP_COUNT], uint64_t *per_entry) {
    memset(bytes, 0, sizeof(uint64_t) * HP_G_COUNT * HP_OP_COUNT);
    int routed = 0;
    hp_param_table t;
    if (hp_params_build(&t, m, d, rank) != 0) return 0;
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    hp_local_shapes ls;
    hp_local_shapes_init(&ls, m, d, rc, &co);
    const int T = ls.T, C = d->cp, R = d->dp_replicate;
    const int sp = ls.sp, M = ls.M;
    const pp_share sh = share_of(m, d, rank);
    const int L = sh.layers;   // the blocks this rank runs (all of them without pp)
    const int U = d->ulysses;
    // the step's rows (every microbatch): Bl_step sequences of Sc tokens (cp, then ulysses);
    // the attention core sees U*Sc
    const uint64_t Bl = (uint64_t)ls.Bl_step, Sc = (uint64_t)ls.Sc;
    const uint64_t D = (uint64_t)ls.D, Nreg = Bl * Sc, Nres = sp ? Nreg / (uint64_t)T : Nreg;

    // FSDP / HSDP / DDP: per unit and stack, all-gathers as hp_run_unit_keep says (for the
    // forward and again for the backward, or kept between them), one reduce-scatter of the
    // grads, and with dp_replicate > 1 one all-reduce of the shard.
    // Parameters of other pp ranks have no shard here and count nothing.
    for (int i = 0; i < t.n; i++) {
        const hp_param *p = &t.p[i];
        if (!p->on_rank) continue;
        const uint64_t shard = (uint64_t)p->shard_numel * F4;
        // --mixed-precision-reduce bfloat16 reduces 2 bytes an element (precision.md §8)
        const uint64_t reduced = rc->mp_reduce == HP_DTYPE_BFLOAT16 ? shard / 2 : shard;
        const hp_unit_keep keep = hp_run_unit_keep(rc->reshard_after_forward, d->pp,
                                                   p->unit == t.n_units - 1);
        const uint64_t gathers = (uint64_t)hp_run_unit_gathers(keep, M);
        // --float8-fsdp-all-gather: a converted weight travels as 1-byte fp8 codes; at each
        // gather its amax (one value) is MAX-reduced over fsdp, then over tp when tp splits it
        const int fp8 = rc->float8_fsdp_all_gather && p->stack == HP_STACK_DENSE && p->ndim == 2 &&
                        hp_float8_param_converted(rc->float8, rc->float8_filter, p->name, p->shape[0],
                                                  p->shape[1]);
        if (fp8 && p->fsdp_size > 1) bytes[p->fsdp_group][HP_OP_ALLREDUCE] += gathers * F4;
        if (fp8 && p->tp_size > 1) bytes[HP_G_TP][HP_OP_ALLREDUCE] += gathers * F4;
        if (p->fsdp_size > 1) {
            // the bf16 policy gathers 2 bytes an element (precision.md §8), fp8 1
            const uint64_t gathered = fp8 ? shard / 4 : rc->mp_param == HP_DTYPE_BFLOAT16 ? shard / 2 : shard;
            bytes[p->fsdp_group][HP_OP_ALLGATHER] += gathers * gathered;
            bytes[p->fsdp_group][HP_OP_REDUCE_SCATTER] += (uint64_t)p->fsdp_size * reduced;
        }
        if (R > 1) bytes[HP_G_DP_REPLICATE][HP_OP_ALLREDUCE] += reduced;
        if (T > 1 && p->tp_grad_partial)
            bytes[HP_G_TP][HP_OP_ALLREDUCE] += (uint64_t)p->local_numel * F4;
    }

    // tp regions: per block two regions (attention, FFN/MoE), plus the embedding's exit and
    // the head's entry. SP: enter = all-gather fwd + reduce-scatter bwd, exit = reduce-scatter
    // fwd + all-gather bwd. No SP: all-reduce in the exit's forward and the enter's backward.
    if (T > 1) {
        const uint64_t regions = 2 * (uint64_t)L;
        const uint64_t enters = regions + (uint64_t)sh.head, exits = regions + (uint64_t)sh.embed;
        if (sp) {
            // (the all-gathers move bf16 values in 2 bytes under the bf16 policy)
            const uint64_t ag = rc->mp_param == HP_DTYPE_BFLOAT16 ? 2 : F4;
            bytes[HP_G_TP][HP_OP_ALLGATHER] += (enters + exits) * Nres * D * ag;
            bytes[HP_G_TP][HP_OP_REDUCE_SCATTER] += (enters + exits) * (uint64_t)T * Nres * D * F4;
        } else {
            bytes[HP_G_TP][HP_OP_ALLREDUCE] += (enters + exits) * Nreg * D * F4;
        }
        // loss parallel: max, sum of exponentials, target logit (the head's stage)
        if (sh.head) bytes[HP_G_TP][HP_OP_ALLREDUCE] += 3 * Nreg * F4;
    }

    // float8 (precision.md §5.4, §8): each amax over a tp-sharded dim MAX-reduced over tp (a
    // routed expert's over etp = tp), 4 bytes a value, per microbatch; zbv runs each linear's
    // backward twice (its I and its W). An amax per row over a routed expert's split hidden
    // counts its expert's rows: without ep every rank's experts compute all Nreg K entries of
    // the step; with ep the routing decides (per_entry, hp_traffic_predict_ep).
    if (T > 1 && rc->float8) {
        hp_pp_layout lay;
        if (hp_pp_layout_init(&lay, d, m->n_layers) == 0) {
            const uint64_t bwds = d->pp > 1 && d->pp_schedule == HP_PP_ZBV ? 2 : 1;
            for (int s = 0; s < lay.n_stages; s++) {
                if (lay.stage_rank[s] != co.p) continue;
                for (int l = lay.stage_first[s]; l < lay.stage_first[s] + lay.stage_layers[s]; l++) {
                    uint64_t f, b, fe, be;
                    hp_float8_block_amax_reduced(m, &ls, rc->float8, rc->float8_filter,
                                                 rc->float8_fsdp_all_gather, l, &f, &b, &fe, &be);
                    // (a MoE block keeps no dy for a W: its whole backward runs in the I)
                    const uint64_t bw = hp_model_is_moe_layer(m, l) ? 1 : bwds;
                    bytes[HP_G_TP][HP_OP_ALLREDUCE] += (uint64_t)M * (f + bw * b) * F4;
                    const uint64_t per = (fe + bw * be) * F4;
                    if (per && d->ep <= 1) {
                        bytes[HP_G_TP][HP_OP_ALLREDUCE] += Nreg * (uint64_t)m->top_k * per;
                    } else if (per) {
                        routed = 1;
                        if (per_entry) per_entry[l] = per;
                    }
                    // tensorwise SP: the all-gathers whose consumers all convert move 1 byte an
                    // element, each after one amax MAX-reduced over tp per microbatch (the
                    // forward's; zbv's I gathers plain); an AC recompute gathers again with the
                    // forward's amax
                    int gf, gb;
                    hp_float8_block_sp_gathers(m, &ls, rc->float8, rc->float8_filter, l, &gf, &gb);
                    if (bwds == 2) gb = 0;
                    const uint64_t ag = rc->mp_param == HP_DTYPE_BFLOAT16 ? 2 : F4;
                    const uint64_t gathers = (uint64_t)(gf + gb + (hp_run_ac_block(rc, l) ? gf : 0));
                    bytes[HP_G_TP][HP_OP_ALLGATHER] -= gathers * Nres * D * (ag - 1);
                    bytes[HP_G_TP][HP_OP_ALLREDUCE] += (uint64_t)M * (uint64_t)(gf + gb) * F4;
                }
            }
        }
    }

    // Ulysses per layer (ulysses.md): four all-to-alls forward (q, k, v in; the output back)
    // and four backward (dout in; dq, dk, dv back), each sending (U-1)/U of its buffer:
    // q-sized ones Bl*Sc*(H/T)*hd floats, kv-sized ones Bl*Sc*max(Hkv/T, U)*hd (after repetition)
    const uint64_t hd = (uint64_t)ls.hd, kv_t = (uint64_t)ls.Hkvl;
    // Under the bf16 policy each moves 2 bytes an element, except dk and dv when kv heads are
    // repeated (their copies' grads are summed in fp32 after the exchange: 4 bytes).
    if (U > 1) {
        const uint64_t q_n = Bl * Sc * (uint64_t)ls.Hl * hd;
        const uint64_t kv_n = Bl * Sc * (kv_t > (uint64_t)U ? kv_t : (uint64_t)U) * hd;
        const int bf16 = rc->mp_param == HP_DTYPE_BFLOAT16, repeated = kv_t < (uint64_t)U;
        const uint64_t act = bf16 ? 2 : F4, dkv = bf16 && !repeated ? 2 : F4;
        bytes[HP_G_ULYSSES][HP_OP_ALLTOALL] +=
            (uint64_t)L * (4 * q_n * act + 2 * kv_n * act + 2 * kv_n * dkv) / (uint64_t)U * (uint64_t)(U - 1);
    }

    // ring attention per layer: n = Bl*(S/C)*Hkv_core*hd floats of K (and as many of V), with
    // Hkv_core the kv heads the core attends with (Hkv/T, or per ulysses rank after the exchange)
    if (C > 1) {
        const uint64_t kv_core = U > 1 ? (uint64_t)hp_ulysses_kv_heads((int)kv_t, U) : kv_t;
        const uint64_t n = Bl * Sc * (uint64_t)U * kv_core * hd;
        // K/V move 2 bytes an element under the bf16 policy; the dK/dV sums always 4
        const uint64_t kv = rc->mp_param == HP_DTYPE_BFLOAT16 ? 2 : F4;
        if (rc->cp_rotate == HP_ROTATE_ALLGATHER) {
            bytes[HP_G_CP][HP_OP_ALLGATHER] += (uint64_t)L * 2 * (2 * n * kv);
            bytes[HP_G_CP][HP_OP_REDUCE_SCATTER] += (uint64_t)L * (uint64_t)C * 2 * n * F4;
        } else {   // forward: K/V, C-1 hops; backward: K/V and dK/dV C-1 hops, dK/dV once more
            bytes[HP_G_CP][HP_OP_SENDRECV] +=
                (uint64_t)L * ((uint64_t)(C - 1) * 2 * n * kv + (uint64_t)(C - 1) * 2 * n * (kv + F4) +
                               2 * n * F4);
        }
    }

    // scalars: valid-token count over the batch mesh, loss over the loss mesh, grad norm
    if (hp_dims_batch(d) > 1) bytes[HP_G_BATCH][HP_OP_ALLREDUCE] += 8;
    if (hp_dims_loss(d) > 1) bytes[HP_G_LOSS][HP_OP_ALLREDUCE] += 8;
    if (d->world > 1) bytes[HP_G_WORLD][HP_OP_ALLREDUCE] += 8;

    // pipeline: the loss handed from the last stage to all (8 bytes over pp), and per
    // microbatch the residual stream (its rows: Nres / M) forward across each boundary this
    // rank sends over, and its gradient back (pipeline.md: 2*M*(Bl/M)*S_local*D*4 a boundary)
    if (d->pp > 1) {
        bytes[HP_G_PP][HP_OP_ALLREDUCE] += 8;
        // (2 bytes an element under the bf16 policy)
        const uint64_t stream = rc->mp_param == HP_DTYPE_BFLOAT16 ? 2 : F4;
        bytes[HP_G_PP][HP_OP_SENDRECV] += (uint64_t)(sh.sends_fwd + sh.sends_bwd) * Nres * D * stream;
    }

    // expert dispatch (docs/traffic_moe.md): the all-gather path moves fixed sizes; the
    // all-to-all path depends on the routing (hp_traffic_predict_ep fills it in)
    if (m->num_experts > 0 && d->ep > 1) {
        const int n_moe = sh.moe_layers;
        const uint64_t n = Nreg / (uint64_t)ls.token_split, K = (uint64_t)m->top_k;
        const uint64_t n_ep = (uint64_t)d->ep;
        // (the token rows and output grads gathered move 2 bytes an element under bf16)
        const uint64_t row = rc->mp_param == HP_DTYPE_BFLOAT16 ? 2 : F4;
        if (rc->dispatcher == HP_DISPATCH_ALLGATHER) {
            bytes[HP_G_EP][HP_OP_ALLGATHER] += (uint64_t)n_moe * n * (2 * D * row + 2 * K * F4);
            bytes[HP_G_EP][HP_OP_REDUCE_SCATTER] += (uint64_t)n_moe * n_ep * n * (2 * D + K) * F4;
        } else {
            bytes[HP_G_EP][HP_OP_ALLTOALL] = UINT64_MAX;
        }
    }

    // activation checkpointing: the checkpointed blocks' forwards once more (traffic_ac.h;
    // the EP all-to-all's share is hp_traffic_predict_ep's)
    uint64_t ac[HP_G_COUNT][HP_OP_COUNT];
    hp_traffic_ac_predict(m, d, rc, rank, ac);
    for (int g = 0; g < HP_G_COUNT; g++)
        for (int op = 0; op < HP_OP_COUNT; op++)
            if (bytes[g][op] != UINT64_MAX && ac[g][op] != UINT64_MAX) bytes[g][op] += ac[g][op];
    hp_params_free(&t);
    return routed;
}

void hp_traffic_predict(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                        int rank, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT]) {
    if (predict(m, d, rc, rank, bytes, NULL)) bytes[HP_G_TP][HP_OP_ALLREDUCE] = UINT64_MAX;
}

int hp_traffic_tp_routed(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc, int rank,
                         uint64_t *fixed, uint64_t *per_entry) {
    uint64_t bytes[HP_G_COUNT][HP_OP_COUNT];
    for (int l = 0; l < m->n_layers; l++) per_entry[l] = 0;
    if (!predict(m, d, rc, rank, bytes, per_entry)) return 0;
    *fixed = bytes[HP_G_TP][HP_OP_ALLREDUCE];
    return 1;
}

// The global tokens (index g*S + s into the routing) that `rank` routes, in its row order:
// its batch shard's sequences, cut to its cp positions, then in each microbatch its tp slice
// under token split.
static int routed_tokens(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                         int rank, int *tok) {
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    hp_local_shapes ls;
    hp_local_shapes_init(&ls, m, d, rc, &co);
    const int S = rc->seq_len, Sc = ls.Sc, Bl_step = ls.Bl_step;
    const int M = ls.M, mb_rows = ls.Nreg;
    int *pos = malloc((size_t)Sc * sizeof(int));
    if (!pos) return 0;
    hp_seq_positions(pos, S, d->cp, co.c, d->ulysses, co.u, rc->cp_load_balance);
    const int n = mb_rows / ls.token_split, r0 = ls.token_rank * n;
    int k = 0;
    for (int mb = 0; mb < M; mb++)
        for (int i = 0; i < n; i++) {
            const int row = mb * mb_rows + r0 + i, b = row / Sc, j = row % Sc;
            tok[k++] = (co.batch * Bl_step + b) * S + pos[j];
        }
    free(pos);
    return k;
}

// All-to-all bytes of the expert dispatch on `rank`, from the routing of the step: per MoE
// layer (n_ep-1)*El*4 for the counts exchange plus 2*(S*e+R*4)*D, where S counts the entries
// this rank sends to another ep member's experts, R those the others send to its experts and
// e is 4, or 2 under bf16 (the rows out and their grads; the outputs back stay 4); a
// checkpointed layer (hp_run_ac_block) adds its forward half, (n_ep-1)*El*4 + (S*e+R*4)*D.
// The tp all-reduce, where it depends on the routing (hp_traffic_tp_routed): its fixed part
// plus per layer the entries this rank's experts compute (its own and R) times per_entry[l].
// The routing is the gathered one (hp_trainer_gather_routing), independent of the counters.
void hp_traffic_predict_ep(const hp_model_config *m, const hp_dims *d, const hp_run_config *rc,
                           int rank, const int *routing, uint64_t bytes[HP_G_COUNT][HP_OP_COUNT]) {
    if (m->num_experts == 0 || d->ep <= 1) return;
    const int a2a = rc->dispatcher == HP_DISPATCH_ALLTOALL;
    uint64_t *per_entry = calloc((size_t)m->n_layers, sizeof *per_entry), tp_fixed = 0;
    if (!per_entry) return;
    const int tp_routed = hp_traffic_tp_routed(m, d, rc, rank, &tp_fixed, per_entry);
    if (!a2a && !tp_routed) { free(per_entry); return; }
    const int n_ep = d->ep, El = m->num_experts / n_ep, K = m->top_k;
    const size_t tokens = (size_t)rc->batch * rc->seq_len;
    int *members = malloc((size_t)d->world * sizeof(int));
    int *tok = malloc(tokens * sizeof(int));
    if (!members || !tok) { free(members); free(tok); free(per_entry); return; }
    int me = 0;
    hp_mesh_group(d, HP_G_EP, rank, members, &me);
    hp_pp_layout lay;
    hp_coords co;
    hp_mesh_coords(d, rank, &co);
    hp_pp_layout_init(&lay, d, m->n_layers);
    uint64_t total = 0, tp = tp_fixed;
    for (int l = 0, li = 0; l < m->n_layers; l++) {
        if (!hp_model_is_moe_layer(m, l)) continue;
        const int *lr = routing + (size_t)li++ * tokens * K;
        if (lay.stage_rank[hp_pp_layer_stage(&lay, l)] != co.p) continue;   // another pp rank's
        uint64_t sent = 0, received = 0, kept = 0;
        for (int j = 0; j < n_ep; j++) {
            const int n = routed_tokens(m, d, rc, members[j], tok);
            for (int i = 0; i < n; i++)
                for (int k = 0; k < K; k++) {
                    const int owner = lr[(size_t)tok[i] * K + k] / El;
                    if (j == me && owner != me) sent++;
                    if (j != me && owner == me) received++;
                    if (j == me && owner == me) kept++;
                }
        }
        tp += (received + kept) * per_entry[l];
        // one counts exchange per microbatch; the rows add up over the step. A checkpointed
        // layer repeats its forward half (counts, dispatch, combine) in its recompute, with
        // the same routing.
        // Under bf16 the rows sent to the experts (and their grads) move 2 bytes an element,
        // the experts' outputs and input grads coming back 4.
        const uint64_t counts = (uint64_t)hp_run_microbatches(rc) * (uint64_t)(n_ep - 1) * El * 4;
        const uint64_t out_e = rc->mp_param == HP_DTYPE_BFLOAT16 ? 2 : F4;
        const uint64_t fwd_half = counts + (sent * out_e + received * F4) * (uint64_t)m->dim;
        total += counts + 2 * (sent * out_e + received * F4) * (uint64_t)m->dim +
                 (hp_run_ac_block(rc, l) ? fwd_half : 0);
    }
    if (a2a) bytes[HP_G_EP][HP_OP_ALLTOALL] = total;
    if (tp_routed) bytes[HP_G_TP][HP_OP_ALLREDUCE] = tp;
    free(members);
    free(tok);
    free(per_entry);
}
