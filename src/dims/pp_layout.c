// pp_layout.c - pipeline stages: their layers, their pp ranks, and each rank's schedule.
// spec: docs/pipeline.md. Pure functions (no MPI): hp plan and the tests call them for
// any degrees, the trainer runs the actions they list.
// defines: hp_pp_schedule_name/parse, hp_pp_virtual, hp_pp_layout_init, hp_pp_layer_stage,
//          hp_pp_unit_stage, hp_pp_schedule_build, hp_pp_ideal_bubble
#include <stdlib.h>
#include <string.h>
#include "hyperpar/pipeline.h"

static const char *const schedule_names[HP_PP_SCHEDULES] = { "gpipe", "1f1b", "interleaved-1f1b", "zbv" };

const char *hp_pp_schedule_name(int schedule) {
    return schedule >= 0 && schedule < HP_PP_SCHEDULES ? schedule_names[schedule] : "?";
}

int hp_pp_schedule_parse(const char *name) {
    for (int i = 0; i < HP_PP_SCHEDULES; i++)
        if (!strcmp(name, schedule_names[i])) return i;
    return -1;
}

int hp_pp_virtual(const hp_dims *d) {
    if (d->pp_virtual > 0) return d->pp_virtual;
    return d->pp_schedule == HP_PP_INTERLEAVED_1F1B || d->pp_schedule == HP_PP_ZBV ? 2 : 1;
}

int hp_pp_layout_init(hp_pp_layout *lay, const hp_dims *d, int n_layers) {
    memset(lay, 0, sizeof *lay);
    lay->P = d->pp > 0 ? d->pp : 1;
    lay->V = d->pp > 1 ? hp_pp_virtual(d) : 1;
    lay->n_stages = lay->P * lay->V;
    lay->L = n_layers;
    lay->schedule = d->pp > 1 ? d->pp_schedule : HP_PP_1F1B;
    if (lay->n_stages > HP_PP_MAX_STAGES || lay->n_stages < 1) return -1;
    const int base = n_layers / lay->n_stages, extra = n_layers % lay->n_stages;
    for (int s = 0, first = 0; s < lay->n_stages; s++) {
        lay->stage_first[s] = first;
        lay->stage_layers[s] = base + (s < extra);
        first += lay->stage_layers[s];
        const int P = lay->P;
        lay->stage_rank[s] = lay->schedule == HP_PP_ZBV ? (s < P ? s : 2 * P - 1 - s) : s % P;
    }
    return 0;
}

int hp_pp_layer_stage(const hp_pp_layout *lay, int layer) {
    for (int s = lay->n_stages - 1; s >= 0; s--)
        if (layer >= lay->stage_first[s]) return s;
    return 0;
}

int hp_pp_unit_stage(const hp_pp_layout *lay, int unit) {
    if (unit <= 0) return 0;
    if (unit > lay->L) return lay->n_stages - 1;
    return hp_pp_layer_stage(lay, unit - 1);
}

// ---------------------------------------------------------------------------------------
// schedules

static int put(hp_pp_action *out, int n, hp_pp_op op, int stage, int mb) {
    out[n].op = (unsigned char)op;
    out[n].stage = (short)stage;
    out[n].mb = mb;
    return n + 1;
}

// The stage of chunk c on pp rank p (loop placement).
static int loop_stage(const hp_pp_layout *lay, int p, int c) { return c * lay->P + p; }

// Megatron's interleaved order: virtual microbatch k of pp rank p is chunk (k/P) mod V
// (reversed for backwards) of microbatch (k/(P*V))*P + k mod P.
static void interleaved_at(const hp_pp_layout *lay, int p, int k, int backward, int *stage, int *mb) {
    const int P = lay->P, V = lay->V;
    int c = (k / P) % V;
    if (backward) c = V - 1 - c;
    *stage = loop_stage(lay, p, c);
    *mb = (k / (P * V)) * P + k % P;
}

// ZB-V: a greedy list schedule over the V placement with unit-time F, I and W. Each slot,
// every rank takes its most urgent ready action: an I (it unblocks the previous stage), else
// an F while fewer than 2P microbatch-stages wait for their I, else the oldest W. I and W of a
// stage run in ascending microbatch order. The order each rank took is its schedule.
static int zbv_build(const hp_pp_layout *lay, int M, int want, hp_pp_action *out) {
    const int P = lay->P, S = lay->n_stages;
    const size_t cells = (size_t)S * M;
    int *fdone = calloc(cells, sizeof(int)), *idone = calloc(cells, sizeof(int));
    int *wdone = calloc(cells, sizeof(int));
    // per stage and op (0 F, 1 I, 2 W) the lowest microbatch not taken yet: each op of a stage
    // is taken in ascending microbatch order, so it is the only candidate (a scan from 0 would
    // make a schedule cost cells^2); per rank the microbatch-stages waiting for their I
    int *next = calloc(3 * (size_t)S, sizeof(int)), *waiting = calloc((size_t)P, sizeof(int));
    int n_out = 0, total = 0, t = 0;
    if (!fdone || !idone || !wdone || !next || !waiting) { n_out = -1; goto done; }
    // done[] holds the slot + 1 in which the action finished (0: not yet)
    while (total < 3 * (int)cells && t < 100 * (int)cells + 100) {
        t++;
        for (int p = 0; p < P; p++) {
            int best_op = -1, best_s = -1, best_j = -1, best_k = -1;
            for (int pass = 0; pass < 3 && best_op < 0; pass++) {
                const int op = pass == 0 ? HP_PP_I : pass == 1 ? HP_PP_F : HP_PP_W;
                const int k = op == HP_PP_F ? 0 : op == HP_PP_I ? 1 : 2;
                if (op == HP_PP_F && waiting[p] >= 2 * P) continue;
                for (int s = S - 1; s >= 0 && best_op < 0; s--) {
                    if (lay->stage_rank[s] != p) continue;
                    const int j = next[3 * s + k];
                    if (j >= M) continue;
                    const size_t c = (size_t)s * M + j;
                    int ready;
                    if (op == HP_PP_F) {
                        ready = s == 0 || (fdone[c - M] && fdone[c - M] < t);
                    } else if (op == HP_PP_I) {
                        ready = fdone[c] && fdone[c] < t &&
                                (s == S - 1 || (idone[c + M] && idone[c + M] < t)) &&
                                (j == 0 || idone[c - 1]);
                    } else {
                        ready = idone[c] && idone[c] < t && (j == 0 || wdone[c - 1]);
                    }
                    if (ready) { best_op = op; best_s = s; best_j = j; best_k = k; }
                }
            }
            if (best_op < 0) continue;
            const size_t c = (size_t)best_s * M + best_j;
            next[3 * best_s + best_k]++;
            if (best_op == HP_PP_F) { fdone[c] = t; waiting[p]++; }
            else if (best_op == HP_PP_I) { idone[c] = t; waiting[p]--; }
            else wdone[c] = t;
            total++;
            if (p == want) n_out = put(out, n_out, (hp_pp_op)best_op, best_s, best_j);
        }
    }
    if (total < 3 * (int)cells) n_out = -1;
done:
    free(fdone); free(idone); free(wdone); free(next); free(waiting);
    return n_out;
}

int hp_pp_schedule_build(const hp_pp_layout *lay, int M, int p, hp_pp_action *out) {
    const int P = lay->P, V = lay->V;
    int n = 0;
    if (M < 1 || p < 0 || p >= P) return -1;
    switch (lay->schedule) {
    case HP_PP_GPIPE:
        for (int j = 0; j < M; j++) n = put(out, n, HP_PP_F, p, j);
        for (int j = 0; j < M; j++) n = put(out, n, HP_PP_B, p, j);
        return n;
    case HP_PP_1F1B: {
        const int warm = P - 1 - p < M ? P - 1 - p : M;
        for (int j = 0; j < warm; j++) n = put(out, n, HP_PP_F, p, j);
        for (int i = 0; i < M - warm; i++) {
            n = put(out, n, HP_PP_F, p, warm + i);
            n = put(out, n, HP_PP_B, p, i);
        }
        for (int j = M - warm; j < M; j++) n = put(out, n, HP_PP_B, p, j);
        return n;
    }
    case HP_PP_INTERLEAVED_1F1B: {
        if (M % P != 0 || V < 2) return -1;
        const int total = M * V;
        int warm = (P - p - 1) * 2 + (V - 1) * P;
        if (warm > total) warm = total;
        int s, j;
        for (int k = 0; k < warm; k++) {
            interleaved_at(lay, p, k, 0, &s, &j);
            n = put(out, n, HP_PP_F, s, j);
        }
        for (int i = 0; i < total - warm; i++) {
            interleaved_at(lay, p, warm + i, 0, &s, &j);
            n = put(out, n, HP_PP_F, s, j);
            interleaved_at(lay, p, i, 1, &s, &j);
            n = put(out, n, HP_PP_B, s, j);
        }
        for (int k = total - warm; k < total; k++) {
            interleaved_at(lay, p, k, 1, &s, &j);
            n = put(out, n, HP_PP_B, s, j);
        }
        return n;
    }
    case HP_PP_ZBV:
        if (V != 2 || M < P) return -1;
        return zbv_build(lay, M, p, out);
    }
    return -1;
}

// ---------------------------------------------------------------------------------------
// the ideal bubble: run every rank's list against the dependencies with nominal durations

double hp_pp_ideal_bubble(const hp_pp_layout *lay, int M) {
    const int P = lay->P, S = lay->n_stages;
    const size_t cells = (size_t)S * M;
    const int cap = 3 * lay->V * M + 4;
    hp_pp_action *acts = malloc((size_t)P * cap * sizeof *acts);
    int *n_act = calloc((size_t)P, sizeof(int)), *next = calloc((size_t)P, sizeof(int));
    double *free_at = calloc((size_t)P, sizeof(double)), *busy = calloc((size_t)P, sizeof(double));
    double *f_end = malloc(cells * sizeof(double)), *i_end = malloc(cells * sizeof(double));
    double result = -1;
    if (!acts || !n_act || !next || !free_at || !busy || !f_end || !i_end) goto done;
    for (size_t c = 0; c < cells; c++) f_end[c] = i_end[c] = -1;
    for (int p = 0; p < P; p++)
        if ((n_act[p] = hp_pp_schedule_build(lay, M, p, acts + (size_t)p * cap)) < 0) goto done;
    for (int progress = 1; progress;) {
        progress = 0;
        for (int p = 0; p < P; p++) {
            while (next[p] < n_act[p]) {
                const hp_pp_action *a = &acts[(size_t)p * cap + next[p]];
                const size_t c = (size_t)a->stage * M + a->mb;
                double dep = 0, dur = 1;
                if (a->op == HP_PP_F) {
                    if (a->stage > 0) { if (f_end[c - M] < 0) break; dep = f_end[c - M]; }
                } else if (a->op == HP_PP_W) {
                    if (i_end[c] < 0) break;
                    dep = i_end[c];
                } else {   // B or I: after its forward and the next stage's input gradient
                    if (f_end[c] < 0) break;
                    dep = f_end[c];
                    if (a->stage < S - 1) {
                        if (i_end[c + M] < 0) break;
                        if (i_end[c + M] > dep) dep = i_end[c + M];
                    }
                    dur = a->op == HP_PP_B ? 2 : 1;
                }
                const double start = dep > free_at[p] ? dep : free_at[p];
                free_at[p] = start + dur;
                busy[p] += dur;
                if (a->op == HP_PP_F) f_end[c] = free_at[p];
                else if (a->op != HP_PP_W) i_end[c] = free_at[p];
                next[p]++;
                progress = 1;
            }
        }
    }
    double makespan = 0, idle = 0;
    for (int p = 0; p < P; p++) {
        if (next[p] < n_act[p]) goto done;   // a rank waits forever: the lists deadlock
        if (free_at[p] > makespan) makespan = free_at[p];
    }
    for (int p = 0; p < P; p++) idle += makespan - busy[p];
    result = makespan > 0 ? idle / (makespan * P) : 0;
done:
    free(acts); free(n_act); free(next); free(free_at); free(busy); free(f_end); free(i_end);
    return result;
}
