// pipeline_run.c - one training step under pipeline parallel: this pp rank runs its actions
// of the schedule (pipeline.h) in order, exchanging the residual stream forward and its
// gradient back with the neighbouring stages' ranks (same inner coordinates, group HP_G_PP).
// spec: docs/pipeline.md.
// defines: hp_pp_init, hp_pp_free, hp_pp_run_step, hp_pp_run_forward, hp_pp_boundary_bytes
//
// Each microbatch takes an activation slot on this rank at its first forward and gives it
// back after its last backward here, so the slots in use are the schedule's microbatches in
// flight (M under gpipe, up to P-p under 1f1b). Sends are nonblocking and complete before
// their buffer is written again or at the end of the step; receives wait under the watchdog.
// Gradients accumulate per unit in ascending microbatch order whatever the schedule, and are
// reduced after the unit's last backward (fsdp.c), which makes schedules bit-identical.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hyperpar/bf16.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/memtrack.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/structure.h"
#include "train/trainer_internal.h"

struct hp_pp_state {
    hp_pp_layout lay;
    int p;                  // this rank's pp coordinate
    int n_act;
    hp_pp_action *act;      // this pp rank's actions of one step
    int *slot_of;           // [M] the slot microbatch j uses here
    int *local_index;       // [n_stages] v: the stage's index among this rank's stages
    float **dh_buf;         // [V * n_slots] the gradient a stage hands back (send / local)
    // the bf16 policy: the stream and its gradient (bf16 values) travel in 2 bytes. Under bf16
    // storage (stored_streams) the stream goes from and into the model's own 2-byte copies
    // (hp_transformer_stream_stored); else the stream a stage hands on is packed into its own
    // buffer here, the model keeping the fp32 one (float8 runs)
    int wire_bf16, stored_streams;
    hp_bf16 **fwd_wire;     // [V * n_slots] under wire_bf16 without stored_streams, else NULL
    size_t boundary_bytes;  // what dh_buf and fwd_wire hold (activation memory: the planner's boundary)
    MPI_Request *fwd_req, *bwd_req;   // [V * n_slots] the pending sends from those buffers
    double busy_ms, step_ms;          // the last step: compute time, and wall time
    float *timeline;                  // [n_act][5] the last step: op, stage, mb, start, end (ms)
    // the structure check of the stage exchange (below): its own communicator, and the copies
    // in flight this step
    MPI_Comm check_comm;
    int n_check, cap_check;
    float **check_buf;
    MPI_Request *check_req;
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

// Tags: one per (direction, receiving stage, microbatch), so no two messages of a step match.
static int tag_fwd(const hp_pp_layout *lay, int to_stage, int mb, int M) {
    (void)lay;
    return 1 + 2 * (to_stage * M + mb);
}
static int tag_bwd(const hp_pp_layout *lay, int to_stage, int mb, int M) {
    (void)lay;
    return 2 + 2 * (to_stage * M + mb);
}

// The structure check of the stage exchange (structure.h, HP_CHECK_EXCHANGE), in the verifier's
// run only: next to each send, the sender sends a copy of what the schedule says it hands on
// (its last block's output stream forward, its input gradient back) over a communicator of its
// own (raw MPI, not counted, same tag); the receiver compares it with what arrived, bit for bit.
// It catches an exchange of the wrong buffer, which the loss sees only weakly in bf16.
static void check_begin(hp_trainer *tr) {
    hp_pp_state *st = tr->pp;
    if (!hp_structure_enabled() || st->check_comm != MPI_COMM_NULL) return;
    // collective over the pp group, whose ranks all start this step with the checks on
    MPI_Comm_dup(hp_comm_mpi(tr->comm, HP_G_PP), &st->check_comm);
}

static void check_send(hp_pp_state *st, const float *want, size_t n, int peer, int tag) {
    if (!hp_structure_enabled()) return;
    if (st->n_check == st->cap_check) {
        const int cap = st->cap_check ? 2 * st->cap_check : 16;
        float **b = realloc(st->check_buf, (size_t)cap * sizeof *b);
        MPI_Request *r = b ? realloc(st->check_req, (size_t)cap * sizeof *r) : NULL;
        if (b) st->check_buf = b;
        if (!r) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
        st->check_req = r;
        st->cap_check = cap;
    }
    float *copy = malloc((n ? n : 1) * sizeof(float));
    if (!copy) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
    memcpy(copy, want, n * sizeof(float));
    st->check_buf[st->n_check] = copy;
    MPI_Isend(copy, (int)n, MPI_FLOAT, peer, tag, st->check_comm, &st->check_req[st->n_check++]);
}

static void check_recv(hp_pp_state *st, const float *got, size_t n, int peer, int tag, const char *what,
                       int stage, int mb) {
    if (!hp_structure_enabled()) return;
    float *want = malloc((n ? n : 1) * sizeof(float));
    if (!want) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
    // sent right after the exchange's own message, which has arrived: no wait on the schedule
    MPI_Recv(want, (int)n, MPI_FLOAT, peer, tag, st->check_comm, MPI_STATUS_IGNORE);
    size_t i = 0;
    while (i < n && !memcmp(&got[i], &want[i], sizeof(float))) i++;
    if (i < n)
        hp_structure_fail(HP_CHECK_EXCHANGE, "stage %d, microbatch %d: the %s received, element %zu, is %.9g; "
                          "the sending stage's is %.9g", stage, mb, what, i, (double)got[i], (double)want[i]);
    else
        hp_structure_pass(HP_CHECK_EXCHANGE);
    free(want);
}

static void check_end(hp_pp_state *st) {
    if (!st->n_check) return;
    MPI_Waitall(st->n_check, st->check_req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < st->n_check; i++) free(st->check_buf[i]);
    st->n_check = 0;
}

// The stage-gradient buffers, one per (stage of this rank, slot), and under bf16 the packed
// streams sent forward.
static int alloc_buffers(hp_trainer *tr) {
    hp_pp_state *st = tr->pp;
    const size_t n = (size_t)tr->sh.Nres * tr->sh.D, bufs = (size_t)st->lay.V * tr->n_slots;
    for (size_t i = 0; i < bufs; i++) {
        if (!st->dh_buf[i]) {
            st->dh_buf[i] = hp_mem_alloc(HP_MEM_ACTIVATIONS, (n ? n : 1) * sizeof(float));
            if (!st->dh_buf[i]) return -1;
            st->boundary_bytes += (n ? n : 1) * sizeof(float);
        }
        if (st->fwd_wire && !st->fwd_wire[i]) {
            st->fwd_wire[i] = hp_mem_alloc(HP_MEM_ACTIVATIONS, (n ? n : 1) * sizeof(hp_bf16));
            if (!st->fwd_wire[i]) return -1;
            st->boundary_bytes += (n ? n : 1) * sizeof(hp_bf16);
        }
    }
    return 0;
}

// Receives n stream (or gradient) elements from src into buf, in 2 bytes under bf16 (widened
// in place), and waits for them.
static void recv_stream(hp_trainer *tr, float *buf, size_t n, int src, int tag, const char *what) {
    MPI_Request req;
    if (tr->pp->wire_bf16) hp_p2p_irecv_bf16(tr->comm, HP_G_PP, (hp_bf16 *)(void *)buf, n, src, tag, &req);
    else hp_p2p_irecv(tr->comm, HP_G_PP, buf, n, src, tag, &req);
    hp_p2p_wait(tr->comm, HP_G_PP, 1, &req, what);
    if (tr->pp->wire_bf16) hp_bf16_widen_in_place(buf, n);
}

// Receives microbatch mb's input of stage s, which starts at block l0, from src: into the
// model's 2-byte copy under bf16 storage (the stage unpacks it), else into its floats. check:
// the stage exchange's structure check (in floats: a 2-byte copy is widened into scratch for
// it, so that the stage's own unpack stays the only one it reads).
static void recv_stage_input(hp_trainer *tr, int s, int mb, int l0, size_t n, int src, int tag, int check) {
    const char *what = "pipeline recv (activation)";
    hp_bf16 *in16 = hp_transformer_stream_stored(&tr->tf, l0);
    if (!in16) {
        float *in = hp_transformer_stream(&tr->tf, l0);
        recv_stream(tr, in, n, src, tag, what);
        if (check) check_recv(tr->pp, in, n, src, tag, "activation", s, mb);
        return;
    }
    MPI_Request req;
    hp_p2p_irecv_bf16(tr->comm, HP_G_PP, in16, n, src, tag, &req);
    hp_p2p_wait(tr->comm, HP_G_PP, 1, &req, what);
    if (!check || !hp_structure_enabled()) return;
    float *got = malloc((n ? n : 1) * sizeof(float));
    if (!got) hp_fail_line_and_abort(1, "hp: out of memory (structure check)");
    hp_bf16_unpack(got, in16, n);
    check_recv(tr->pp, got, n, src, tag, "activation", s, mb);
    free(got);
}

// Sends the stream entering block l forward from buffer b's slot: under bf16 storage the model's
// 2-byte copy as it is, else the model's floats, or under bf16 their packed copy.
static void send_stream(hp_trainer *tr, int l, size_t n, int dst, int tag, size_t b) {
    hp_pp_state *st = tr->pp;
    const float *stream = hp_transformer_stream(&tr->tf, l);
    if (!st->wire_bf16) { hp_p2p_isend(tr->comm, HP_G_PP, stream, n, dst, tag, &st->fwd_req[b]); return; }
    hp_structure_check_bf16_wire(stream, n, "pipeline activation");
    const hp_bf16 *out16 = hp_transformer_stream_stored(&tr->tf, l);
    if (!out16) {
        hp_bf16_pack(st->fwd_wire[b], stream, n);
        out16 = st->fwd_wire[b];
    }
    hp_p2p_isend_bf16(tr->comm, HP_G_PP, out16, n, dst, tag, &st->fwd_req[b]);
}

// Sends buffer b's gradient (dh_buf[b], not read on this rank again) back, packed in place
// under bf16.
static void send_grad(hp_trainer *tr, size_t n, int dst, int tag, size_t b) {
    hp_pp_state *st = tr->pp;
    if (!st->wire_bf16) { hp_p2p_isend(tr->comm, HP_G_PP, st->dh_buf[b], n, dst, tag, &st->bwd_req[b]); return; }
    hp_structure_check_bf16_wire(st->dh_buf[b], n, "pipeline gradient");
    hp_bf16_narrow_in_place(st->dh_buf[b], n);
    hp_p2p_isend_bf16(tr->comm, HP_G_PP, (const hp_bf16 *)(void *)st->dh_buf[b], n, dst, tag, &st->bwd_req[b]);
}

int hp_pp_init(hp_trainer *tr, char *err, size_t errlen) {
    hp_pp_state *st = hp_mem_alloc(HP_MEM_OTHER, sizeof *st);
    if (!st) { snprintf(err, errlen, "out of memory (pipeline)"); return -1; }
    tr->pp = st;
    if (hp_pp_layout_init(&st->lay, &tr->d, tr->m.n_layers) != 0) {
        snprintf(err, errlen, "pipeline: cannot lay out %d stages", tr->d.pp * hp_pp_virtual(&tr->d));
        return -1;
    }
    const hp_pp_layout *lay = &st->lay;
    const int M = tr->sh.M;
    st->p = tr->co.p;
    st->check_comm = MPI_COMM_NULL;
    st->act = hp_mem_alloc(HP_MEM_OTHER, (size_t)(3 * lay->V * M + 4) * sizeof *st->act);
    st->slot_of = hp_mem_alloc(HP_MEM_OTHER, (size_t)M * sizeof(int));
    st->local_index = hp_mem_alloc(HP_MEM_OTHER, (size_t)lay->n_stages * sizeof(int));
    if (!st->act || !st->slot_of || !st->local_index) {
        snprintf(err, errlen, "out of memory (pipeline)");
        return -1;
    }
    st->n_act = hp_pp_schedule_build(lay, M, st->p, st->act);
    st->timeline = hp_mem_alloc(HP_MEM_OTHER, (size_t)(3 * lay->V * M + 4) * 5 * sizeof(float));
    if (!st->timeline) { snprintf(err, errlen, "out of memory (pipeline)"); return -1; }
    tr->split_backward = hp_pp_splits_backward(&tr->d);
    if (st->n_act < 0) {
        snprintf(err, errlen, "pipeline: schedule %s cannot run %d microbatches on pp %d",
                 hp_pp_schedule_name(lay->schedule), M, lay->P);
        return -1;
    }
    for (int s = 0, v = 0; s < lay->n_stages; s++)
        if (lay->stage_rank[s] == st->p) st->local_index[s] = v++;
    // slots: a microbatch holds one from its first action here to its last
    int *last = malloc((size_t)M * sizeof(int)), *busy = calloc((size_t)M + 1, sizeof(int));
    if (!last || !busy) { free(last); free(busy); snprintf(err, errlen, "out of memory"); return -1; }
    for (int j = 0; j < M; j++) { last[j] = -1; st->slot_of[j] = -1; }
    for (int a = 0; a < st->n_act; a++) last[st->act[a].mb] = a;
    int n_slots = 0;
    for (int a = 0; a < st->n_act; a++) {
        const int j = st->act[a].mb;
        if (st->slot_of[j] < 0) {
            int s = 0;
            while (busy[s]) s++;
            busy[s] = 1;
            st->slot_of[j] = s;
            if (s + 1 > n_slots) n_slots = s + 1;
        }
        if (last[j] == a) busy[st->slot_of[j]] = 0;
    }
    free(last);
    free(busy);
    tr->n_slots = n_slots > 0 ? n_slots : 1;
    const size_t bufs = (size_t)lay->V * tr->n_slots;
    st->dh_buf = hp_mem_alloc(HP_MEM_OTHER, bufs * sizeof(float *));
    st->wire_bf16 = tr->rc.mp_param == HP_DTYPE_BFLOAT16;
    st->stored_streams = hp_run_bf16_stored(&tr->rc);
    if (st->wire_bf16 && !st->stored_streams && !(st->fwd_wire = hp_mem_alloc(HP_MEM_OTHER, bufs * sizeof(hp_bf16 *)))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    st->fwd_req = hp_mem_alloc(HP_MEM_OTHER, bufs * sizeof(MPI_Request));
    st->bwd_req = hp_mem_alloc(HP_MEM_OTHER, bufs * sizeof(MPI_Request));
    if (!st->dh_buf || !st->fwd_req || !st->bwd_req) { snprintf(err, errlen, "out of memory"); return -1; }
    for (size_t i = 0; i < bufs; i++) st->fwd_req[i] = st->bwd_req[i] = MPI_REQUEST_NULL;
    // sized now, so that the activation bytes are known before the first step
    if (alloc_buffers(tr) != 0) { snprintf(err, errlen, "out of memory (pipeline buffers)"); return -1; }
    return 0;
}

size_t hp_pp_boundary_bytes(const hp_trainer *tr) { return tr->pp ? tr->pp->boundary_bytes : 0; }

void hp_pp_free(hp_trainer *tr) {
    hp_pp_state *st = tr->pp;
    if (!st) return;
    for (size_t i = 0; i < (size_t)st->lay.V * tr->n_slots; i++) {
        if (st->dh_buf) hp_mem_free(st->dh_buf[i]);
        if (st->fwd_wire) hp_mem_free(st->fwd_wire[i]);
    }
    hp_mem_free(st->dh_buf); hp_mem_free(st->fwd_wire); hp_mem_free(st->fwd_req); hp_mem_free(st->bwd_req);
    hp_mem_free(st->act); hp_mem_free(st->slot_of); hp_mem_free(st->local_index); hp_mem_free(st->timeline);
    if (st->check_comm != MPI_COMM_NULL) MPI_Comm_free(&st->check_comm);
    free(st->check_buf); free(st->check_req);
    hp_mem_free(st);
    tr->pp = NULL;
}

double hp_pp_run_step(hp_trainer *tr) {
    hp_pp_state *st = tr->pp;
    const hp_pp_layout *lay = &st->lay;
    const int M = tr->sh.M, last_stage = lay->n_stages - 1, D = tr->sh.D;
    const size_t n = (size_t)tr->sh.Nres * D;
    double ce_sum = 0.0;
    const double t0 = now_ms();
    st->busy_ms = 0.0;
    check_begin(tr);
    for (int a = 0; a < st->n_act; a++) {
        const hp_pp_action *x = &st->act[a];
        const int s = x->stage, j = x->mb, v = st->local_index[s];
        const int l0 = lay->stage_first[s], l1 = l0 + lay->stage_layers[s];
        const int first = s == 0, last = s == last_stage;
        tr->tf.mb = j;
        tr->tf.slot = st->slot_of[j];
        const size_t b = (size_t)v * tr->n_slots + tr->tf.slot;
        float *tl = st->timeline + (size_t)a * 5;   // what the report's timeline draws
        tl[0] = (float)x->op; tl[1] = (float)s; tl[2] = (float)j;
        if (x->op == HP_PP_F) {
            if (!first && lay->stage_rank[s - 1] != st->p) {
                recv_stage_input(tr, s, j, l0, n, lay->stage_rank[s - 1], tag_fwd(lay, s, j, M), 1);
            }
            // the stream this stage writes may still be on its way from the slot's last use
            hp_p2p_wait(tr->comm, HP_G_PP, 1, &st->fwd_req[b], "pipeline send (activation)");
            const double c0 = now_ms();
            tl[3] = (float)(c0 - t0);   // the compute starts (a wait before it is idle)
            hp_transformer_forward_layers(&tr->tf, l0, l1, first, last);
            st->busy_ms += now_ms() - c0;
            if (last) ce_sum += tr->tf.ce_sum_local;   // ascending microbatch order
            // (pp_stage_exchange: the bug sends the stream entering the stage's last block;
            //  pp_send_dropped: the last microbatch is never sent and the next stage waits)
            const int l_sent = hp_failpoint(HP_FP_PP_STAGE_EXCHANGE) ? l1 - 1 : l1;
            const int dropped = hp_failpoint(HP_FP_PP_SEND_DROPPED) && j == M - 1;
            if (!last && lay->stage_rank[s + 1] != st->p && !dropped) {
                send_stream(tr, l_sent, n, lay->stage_rank[s + 1],
                            tag_fwd(lay, s + 1, j, M), b);
                check_send(st, hp_transformer_stream(&tr->tf, l1), n, lay->stage_rank[s + 1], tag_fwd(lay, s + 1, j, M));
            }
        } else if (x->op == HP_PP_W) {
            const double c0 = now_ms();
            tl[3] = (float)(c0 - t0);   // the compute starts (a wait before it is idle)
            hp_transformer_weight_grads_layers(&tr->tf, l0, l1, first, last);
            st->busy_ms += now_ms() - c0;
        } else {   // B, or zbv's I: the input grads now, the linears' weight grads in its W
            tr->tf.input_only = x->op == HP_PP_I;
            if (!last) {
                if (lay->stage_rank[s + 1] != st->p) {
                    recv_stream(tr, tr->tf.res_b, n, lay->stage_rank[s + 1], tag_bwd(lay, s, j, M),
                                "pipeline recv (gradient)");
                    check_recv(st, tr->tf.res_b, n, lay->stage_rank[s + 1], tag_bwd(lay, s, j, M), "gradient", s, j);
                } else {
                    const size_t bn = (size_t)st->local_index[s + 1] * tr->n_slots + tr->tf.slot;
                    memcpy(tr->tf.res_b, st->dh_buf[bn], n * sizeof(float));
                }
            }
            const double c0 = now_ms();
            tl[3] = (float)(c0 - t0);   // the compute starts (a wait before it is idle)
            hp_transformer_backward_layers(&tr->tf, l0, l1, first, last);
            st->busy_ms += now_ms() - c0;
            tr->tf.input_only = 0;
            if (!first) {
                hp_p2p_wait(tr->comm, HP_G_PP, 1, &st->bwd_req[b], "pipeline send (gradient)");
                memcpy(st->dh_buf[b], tr->tf.res_b, n * sizeof(float));
                if (lay->stage_rank[s - 1] != st->p) {
                    send_grad(tr, n, lay->stage_rank[s - 1], tag_bwd(lay, s - 1, j, M), b);
                    check_send(st, tr->tf.res_b, n, lay->stage_rank[s - 1], tag_bwd(lay, s - 1, j, M));
                }
            }
        }
        tl[4] = (float)(now_ms() - t0);
    }
    const size_t bufs = (size_t)lay->V * tr->n_slots;
    hp_p2p_wait(tr->comm, HP_G_PP, (int)bufs, st->fwd_req, "pipeline send (activation)");
    hp_p2p_wait(tr->comm, HP_G_PP, (int)bufs, st->bwd_req, "pipeline send (gradient)");
    check_end(st);
    hp_fsdp_release_all(&tr->fsdp);
    tr->tf.mb = 0;
    tr->tf.slot = 0;
    st->step_ms = now_ms() - t0;
    return ce_sum;
}

// Forward only (evaluation): microbatch by microbatch, this rank's stages in model order,
// which every rank's order agrees with; slot 0 throughout. Returns this rank's CE sum.
double hp_pp_run_forward(hp_trainer *tr) {
    hp_pp_state *st = tr->pp;
    const hp_pp_layout *lay = &st->lay;
    const int M = tr->sh.M, last_stage = lay->n_stages - 1;
    const size_t n = (size_t)tr->sh.Nres * tr->sh.D;
    double ce_sum = 0.0;
    tr->tf.slot = 0;
    for (int j = 0; j < M; j++) {
        tr->tf.mb = j;
        for (int s = 0; s < lay->n_stages; s++) {
            if (lay->stage_rank[s] != st->p) continue;
            const int l0 = lay->stage_first[s], l1 = l0 + lay->stage_layers[s];
            const size_t b = (size_t)st->local_index[s] * tr->n_slots;
            if (s > 0 && lay->stage_rank[s - 1] != st->p)
                recv_stage_input(tr, s, j, l0, n, lay->stage_rank[s - 1], tag_fwd(lay, s, j, M), 0);
            hp_p2p_wait(tr->comm, HP_G_PP, 1, &st->fwd_req[b], "pipeline send (activation)");
            hp_transformer_forward_layers(&tr->tf, l0, l1, s == 0, s == last_stage);
            if (s == last_stage) ce_sum += tr->tf.ce_sum_local;
            if (s < last_stage && lay->stage_rank[s + 1] != st->p)
                send_stream(tr, l1, n, lay->stage_rank[s + 1],
                            tag_fwd(lay, s + 1, j, M), b);
        }
    }
    hp_p2p_wait(tr->comm, HP_G_PP, (int)((size_t)lay->V * tr->n_slots), st->fwd_req,
                "pipeline send (activation)");
    hp_fsdp_release_all(&tr->fsdp);
    tr->tf.mb = 0;
    return ce_sum;
}

int hp_pp_timeline(const hp_trainer *tr, float *out, int cap) {
    const hp_pp_state *st = tr->pp;
    if (!st) return 0;
    const int n = st->n_act < cap ? st->n_act : cap;
    memcpy(out, st->timeline, (size_t)n * 5 * sizeof(float));
    return n;
}

double hp_pp_idle_fraction(const hp_trainer *tr) {
    const hp_pp_state *st = tr->pp;
    if (!st || st->step_ms <= 0) return 0.0;
    const double idle = 1.0 - st->busy_ms / st->step_ms;
    return idle < 0 ? 0 : idle;
}
