// comm_async.c - nonblocking gradient reductions: a reduce-scatter (optionally followed by an
// all-reduce of its result over a second group: HSDP) or an all-reduce, posted now and
// completed later, so that one FSDP unit's gradient exchange travels while the next unit's
// backward computes, and a rank whose partner is still computing does not wait for it unit
// by unit but once, where the result is needed.
// defines: hp_reduce_scatter_start, hp_reduce_scatter_staging, hp_allreduce_sum_start,
//          hp_comm_progress,
//          hp_comm_async_wait, hp_comm_async_wait_all, hp_comm_async_free,
//          hp_comm_async_slots, hp_comm_async_reserve
//
// The arithmetic is that of the blocking calls: every member's piece of chunk j goes straight
// to member j, which sums the pieces in member order 0..size-1 (the pieces and chunks of
// comm_fixed_order.c, so the wire bytes are the same too). Counted when posted, like the
// blocking calls. In non-deterministic mode a start is the blocking call: MPI's nonblocking
// collectives would have to be posted in one order on every member, which a chained
// all-reduce posted whenever its reduce-scatter ends cannot promise.
//
// Matching: each phase of an operation gets its group's next sequence number when the
// operation is posted (members of a group post the same operations in the same order, so
// they agree on it), and its messages carry tags made from it, never those of the blocking
// exchanges. A chained all-reduce is posted whenever its reduce-scatter ends, at a different
// moment on each member, but its tags are its own, so it cannot meet another operation's
// messages. With at most HP_COMM_ASYNC_MAX operations in flight, 2 x that many tags per
// group never reach an operation still in flight. Within a phase the pieces go in order.
//
// Every blocking wait is the watchdog's (hp_comm_wait); hp_comm_progress only tests. The
// watchdog's poll loop progresses the queue too: a rank blocked in another collective still
// sums and forwards what its partners wait for, so no wait can close a cycle.
//
// Memory (memtrack: the send copies and rows are comm_scratch, the requests, counts, operand
// pointers and slots "other"): the slots are made together - by hp_comm_async_reserve, which
// fsdp.c calls at init for its largest span and which fixes their number
// (hp_comm_async_slots: 4, or 2 when 4 would take more than HP_COMM_ASYNC_BUDGET), or else
// all HP_COMM_ASYNC_MAX with the first operation - and sized together, for the largest of
// each buffer any operation has needed, so what they hold does not depend on which operation
// landed in which slot (hp_comm_async_floats: the planner's term). A growth first completes
// the operations in flight, so no buffer moves under a posted request; without a
// reservation it happens in the first step only, whose operations are the largest there are
// (every step posts the same ones).
#include <string.h>
#include "hyperpar/memtrack.h"
#include "comm_internal.h"   // defines: struct hp_comm, HP_MPI_CHECK, HP_COMM_CHUNK

// Phase tags: TAG_BASE + 2 (seq mod TAG_SEQS), + 1 for the all-gather of the sums.
enum { TAG_BASE = 0x4810, TAG_SEQS = 2 * HP_COMM_ASYNC_MAX };

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

// One phase: a reduce-scatter of n per member (send is (size, n)) or an in-place all-reduce
// of n, over group g, in pieces (hp_comm_chunk(size) elements of every block; size times that
// elements of an all-reduce buffer).
typedef struct phase {
    hp_op_kind    kind;            // HP_OP_REDUCE_SCATTER or HP_OP_ALLREDUCE
    hp_group_kind g;
    int           tag;             // of the scatter; tag + 1: the gather
    size_t        pieces, reduced; // pieces, pieces summed so far
    MPI_Request  *reqs;            // per piece: 4(size-1) (scatter sends/recvs, gather)
    int          *n_scat;          // per piece: scatter requests posted
} phase;

// Elements of each buffer: what one operation needs, or what every slot holds.
typedef struct async_need { size_t send, rows, reqs, cnts, operands; } async_need;

struct hp_comm_async_op {
    float       *recv;             // the result: reduce-scatter (n), all-reduce in place (n)
    size_t       n;
    int          n_phases, cur;    // 1 or 2 (reduce-scatter, then all-reduce of recv)
    phase        ph[2];
    float       *send;             // reduce-scatter: a copy of the caller's (size, n)
    float       *rows;             // received operands: pieces x size rows of hp_comm_chunk(size)
    const void **operands;         // (size) the rows of one sum
    MPI_Request *reqs;             // every phase's requests, in turn (ph[i].reqs point in)
    int         *n_scat;           // every phase's per-piece counts (ph[i].n_scat point in)
    async_need   cap;              // what the buffers hold (the same in every slot)
};

// ----------------------------------------------------------------------------
// buffers (grown together, kept)

// p grown from `have` to `need` elements of esz bytes (kept when it already fits).
static void *grow(void *p, size_t have, size_t need, size_t esz, hp_mem_category c) {
    if (need <= have) return p;
    void *q = hp_mem_realloc(p, c, need * esz);
    if (q == NULL) HP_COMM_FAIL("hp_comm: out of memory for a %zu-byte gradient exchange", need * esz);
    return q;
}

static size_t pieces_of(hp_op_kind kind, size_t n, int size) {
    const size_t chunk = hp_comm_chunk(size), piece = kind == HP_OP_ALLREDUCE ? (size_t)size * chunk : chunk;
    return (n + piece - 1) / piece;
}

// ----------------------------------------------------------------------------
// posting

static MPI_Comm mc(const hp_comm *comm, const phase *ph) { return comm->group[ph->g]; }

static int post(const hp_comm *comm, const phase *ph, int recv, void *buf, size_t cnt, int peer,
                int tag, MPI_Request *r) {
    if (cnt == 0) return 0;   // both sides know every count and skip the same messages
    if (recv) HP_MPI_CHECK(MPI_Irecv(buf, (int)cnt, MPI_FLOAT, peer, tag, mc(comm, ph), r));
    else      HP_MPI_CHECK(MPI_Isend(buf, (int)cnt, MPI_FLOAT, peer, tag, mc(comm, ph), r));
    return 1;
}


// Element range [off, off+len) of piece p: of every block (reduce-scatter), of the buffer
// (all-reduce); *mine: the part this member reduces, at *mine_off inside the piece.
static void piece_range(const hp_comm_async_op *op, const phase *ph, int size, int me, size_t p,
                        size_t *off, size_t *len, size_t *mine_off, size_t *mine) {
    const size_t chunk = hp_comm_chunk(size), piece = ph->kind == HP_OP_ALLREDUCE ? (size_t)size * chunk : chunk;
    *off = p * piece;
    *len = min_sz(op->n - *off, piece);
    *mine_off = ph->kind == HP_OP_ALLREDUCE ? hp_chunk_off(*len, size, me) : 0;
    *mine = ph->kind == HP_OP_ALLREDUCE ? hp_chunk_len(*len, size, me) : *len;
}

static float *row(hp_comm_async_op *op, int size, size_t p, int r) {
    return op->rows + (p * (size_t)size + (size_t)r) * hp_comm_chunk(size);
}

// Posts every piece's scatter of the current phase.
static void post_phase(hp_comm *comm, hp_comm_async_op *op) {
    phase *ph = &op->ph[op->cur];
    const int size = comm->size[ph->g], me = comm->rank[ph->g];
    for (size_t p = 0; p < ph->pieces; p++) {
        size_t off, len, mine_off, mine;
        piece_range(op, ph, size, me, p, &off, &len, &mine_off, &mine);
        MPI_Request *r = ph->reqs + p * 4 * (size_t)(size - 1);
        int k = 0;
        for (int j = 0; j < size; j++) {
            if (j == me) continue;
            k += post(comm, ph, 1, row(op, size, p, j), mine, j, ph->tag, r + k);
            if (ph->kind == HP_OP_ALLREDUCE)
                k += post(comm, ph, 0, op->recv + off + hp_chunk_off(len, size, j),
                          hp_chunk_len(len, size, j), j, ph->tag, r + k);
            else
                k += post(comm, ph, 0, op->send + (size_t)j * op->n + off, len, j, ph->tag, r + k);
        }
        ph->n_scat[p] = k;
    }
}

// Phase i of op: kind over g, nothing summed yet, the group's next tag (at posting time).
static void init_phase(hp_comm *comm, hp_comm_async_op *op, int i, hp_op_kind kind,
                       hp_group_kind g) {
    phase *ph = &op->ph[i];
    const int size = comm->size[g];
    ph->kind = kind;
    ph->g = g;
    ph->pieces = pieces_of(kind, op->n, size);
    ph->reduced = 0;
    ph->tag = TAG_BASE + 2 * (int)(comm->async_seq[g]++ % TAG_SEQS);
}

// Requests of a phase: per piece 2(size-1) of the scatter and 2(size-1) of the gather.
static int phase_requests(const hp_comm *comm, const phase *ph) {
    return (int)(ph->pieces * 4 * (size_t)(comm->size[ph->g] - 1));
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

// Adds to w what a phase of kind over a group of size, n per member, needs: per piece
// 4(size-1) requests, one count and size rows (the phases use the rows in turn), size
// operand pointers; a reduce-scatter's send copy is its (size, n) input.
static void phase_need(async_need *w, hp_op_kind kind, int size, size_t n) {
    const size_t pieces = pieces_of(kind, n, size);
    w->reqs += pieces * 4 * (size_t)(size - 1);
    w->cnts += pieces;
    w->rows = max_sz(w->rows, pieces * (size_t)size * hp_comm_chunk(size));
    w->operands = max_sz(w->operands, (size_t)size);
    if (kind == HP_OP_REDUCE_SCATTER) w->send = (size_t)size * n;
}

void hp_comm_async_floats(int rs_size, size_t n, int ar_size, size_t *send, size_t *rows) {
    async_need w = { 0 };
    if (n > 0 && rs_size > 1) phase_need(&w, HP_OP_REDUCE_SCATTER, rs_size, n);
    if (n > 0 && ar_size > 1) phase_need(&w, HP_OP_ALLREDUCE, ar_size, n);
    *send = w.send;
    *rows = w.rows;
}

// The slots in use: hp_comm_async_slots of the reservation, or HP_COMM_ASYNC_MAX.
static int n_slots(const hp_comm *comm) {
    return comm->async_slots > 0 ? comm->async_slots : HP_COMM_ASYNC_MAX;
}

// Every slot grown to hold w (and what it held), after the operations in flight are done:
// their buffers must not move under their posted requests (see the top).
static void reserve(hp_comm *comm, async_need w) {
    const async_need have = comm->async[0]->cap;
    if (w.send <= have.send && w.rows <= have.rows && w.reqs <= have.reqs &&
        w.cnts <= have.cnts && w.operands <= have.operands)
        return;
    hp_comm_async_wait_all(comm);
    w.send = max_sz(w.send, have.send);
    w.rows = max_sz(w.rows, have.rows);
    w.reqs = max_sz(w.reqs, have.reqs);
    w.cnts = max_sz(w.cnts, have.cnts);
    w.operands = max_sz(w.operands, have.operands);
    for (int i = 0; i < n_slots(comm); i++) {
        hp_comm_async_op *op = comm->async[i];
        op->send = grow(op->send, have.send, w.send, sizeof *op->send, HP_MEM_COMM_SCRATCH);
        op->rows = grow(op->rows, have.rows, w.rows, sizeof *op->rows, HP_MEM_COMM_SCRATCH);
        op->reqs = grow(op->reqs, have.reqs, w.reqs, sizeof *op->reqs, HP_MEM_OTHER);
        op->n_scat = grow(op->n_scat, have.cnts, w.cnts, sizeof *op->n_scat, HP_MEM_OTHER);
        op->operands = grow(op->operands, have.operands, w.operands, sizeof *op->operands,
                            HP_MEM_OTHER);
        op->cap = w;
    }
}

// Sizes every slot for op (the slot at the queue's tail, phases set) and hands its phases
// their requests and counts.
static void size_buffers(hp_comm_async_op *op, hp_comm *comm) {
    async_need w = { 0 };
    for (int i = 0; i < op->n_phases; i++)
        phase_need(&w, op->ph[i].kind, comm->size[op->ph[i].g], op->n);
    reserve(comm, w);
    MPI_Request *rq = op->reqs;
    int *cn = op->n_scat;
    for (int i = 0; i < op->n_phases; i++) {
        const int nr = phase_requests(comm, &op->ph[i]);
        op->ph[i].reqs = rq;
        op->ph[i].n_scat = cn;
        for (int k = 0; k < nr; k++) rq[k] = MPI_REQUEST_NULL;
        memset(cn, 0, op->ph[i].pieces * sizeof *cn);
        rq += nr;
        cn += op->ph[i].pieces;
    }
}

// ----------------------------------------------------------------------------
// the queue: slots in posting order, [head, tail) in flight

static hp_comm_async_op *slot(hp_comm *comm, int ticket) {
    return comm->async[ticket % n_slots(comm)];
}

// 1 when every request of op has completed (tests them: finished ones become null).
static int all_done(const hp_comm *comm, hp_comm_async_op *op) {
    for (int i = 0; i < op->n_phases; i++) {
        phase *ph = &op->ph[i];
        if (!hp_comm_test(phase_requests(comm, ph), ph->reqs, hp_op_name(ph->kind),
                          hp_group_name(ph->g)))
            return 0;
    }
    return 1;
}

// Sums piece p of the current phase once its scatter has arrived (block: wait for it under
// the watchdog). Returns 0 when it has not arrived (and block is 0).
static int reduce_piece(hp_comm *comm, hp_comm_async_op *op, int block) {
    phase *ph = &op->ph[op->cur];
    const size_t p = ph->reduced;
    const int size = comm->size[ph->g], me = comm->rank[ph->g];
    const char *what = ph->kind == HP_OP_ALLREDUCE ? "all-reduce" : "reduce-scatter";
    MPI_Request *r = ph->reqs + p * 4 * (size_t)(size - 1);
    if (block) hp_comm_wait(comm, ph->n_scat[p], r, what, hp_group_name(ph->g));
    else if (!hp_comm_test(ph->n_scat[p], r, what, hp_group_name(ph->g))) return 0;
    size_t off, len, mine_off, mine;
    piece_range(op, ph, size, me, p, &off, &len, &mine_off, &mine);
    for (int j = 0; j < size; j++) op->operands[j] = row(op, size, p, j);
    // my own operand: read in place from the copy (reduce-scatter), or copied (all-reduce:
    // the sum overwrites it in place)
    float *out = op->recv + (ph->kind == HP_OP_ALLREDUCE ? off + mine_off : off);
    if (ph->kind == HP_OP_ALLREDUCE)
        memcpy(row(op, size, p, me), out, mine * sizeof(float));
    else
        op->operands[me] = op->send + (size_t)me * op->n + off;
    if (mine > 0) hp_fixed_reduce_rows(out, op->operands, size, mine, HP_RED_F32_SUM);
    if (ph->kind == HP_OP_ALLREDUCE) {   // my reduced chunk to all, theirs in place
        MPI_Request *gr = r + 2 * (size - 1);
        int k = 0;
        for (int j = 0; j < size; j++) {
            if (j == me) continue;
            k += post(comm, ph, 1, op->recv + off + hp_chunk_off(len, size, j),
                      hp_chunk_len(len, size, j), j, ph->tag + 1, gr + k);
            k += post(comm, ph, 0, out, mine, j, ph->tag + 1, gr + k);
        }
    }
    ph->reduced++;
    if (ph->reduced == ph->pieces && op->cur + 1 < op->n_phases) {
        op->cur++;   // HSDP: the all-reduce of the reduced shard over the next group
        post_phase(comm, op);
    }
    return 1;
}

static int reduced(const hp_comm_async_op *op) {
    return op->cur == op->n_phases - 1 && op->ph[op->cur].reduced == op->ph[op->cur].pieces;
}

// Advances in posting order: sums every piece that has arrived, stopping at the first one
// that has not (later operations wait their turn: the order of the gathers is fixed), then
// retires the finished operations at the head.
static void progress(hp_comm *comm) {
    for (int t = comm->async_head; t < comm->async_tail; t++) {
        hp_comm_async_op *op = slot(comm, t);
        while (!reduced(op))
            if (!reduce_piece(comm, op, 0)) goto retire;
    }
retire:
    while (comm->async_head < comm->async_tail &&
           reduced(slot(comm, comm->async_head)) &&
           all_done(comm, slot(comm, comm->async_head)))
        comm->async_head++;
}

void hp_comm_progress(hp_comm *comm) {
    if (comm == NULL || comm->async_busy || comm->async_head == comm->async_tail) return;
    comm->async_busy = 1;   // the watchdog's loop calls in here: never from inside the queue
    progress(comm);
    comm->async_busy = 0;
}

void hp_comm_async_wait(hp_comm *comm, int ticket) {
    const int outer = !comm->async_busy;
    comm->async_busy = 1;
    while (comm->async_head <= ticket && comm->async_head < comm->async_tail) {
        progress(comm);
        if (comm->async_head > ticket || comm->async_head == comm->async_tail) break;
        hp_comm_async_op *op = slot(comm, comm->async_head);
        if (!reduced(op)) {
            reduce_piece(comm, op, 1);
            continue;
        }
        for (int i = 0; i < op->n_phases; i++)   // the head's sends and gathers
            hp_comm_wait(comm, phase_requests(comm, &op->ph[i]), op->ph[i].reqs,
                         hp_op_name(op->ph[i].kind), hp_group_name(op->ph[i].g));
    }
    if (outer) comm->async_busy = 0;
}

void hp_comm_async_wait_all(hp_comm *comm) {
    if (comm != NULL) hp_comm_async_wait(comm, comm->async_tail - 1);
}

// Every slot's struct, at once (with the first operation or the reservation).
static void make_slots(hp_comm *comm) {
    for (int i = 0; i < n_slots(comm); i++)
        if (comm->async[i] == NULL &&
            (comm->async[i] = hp_mem_alloc(HP_MEM_OTHER, sizeof *comm->async[i])) == NULL)
            HP_COMM_FAIL("hp_comm: out of memory for a gradient exchange");
}

// A free slot for a new operation (waiting for the oldest when all are in flight).
static hp_comm_async_op *next_slot(hp_comm *comm) {
    if (comm->async_tail - comm->async_head == n_slots(comm))
        hp_comm_async_wait(comm, comm->async_head);
    make_slots(comm);
    return slot(comm, comm->async_tail);
}

int hp_comm_async_slots(size_t send, size_t rows) {
    const double bytes = (double)HP_COMM_ASYNC_MAX * (double)(send + rows) * sizeof(float);
    return bytes <= (double)HP_COMM_ASYNC_BUDGET ? HP_COMM_ASYNC_MAX : 2;
}

void hp_comm_async_reserve(hp_comm *comm, size_t send, size_t rows) {
    // nothing will be posted (or, not deterministic, the starts are the blocking calls)
    if (comm == NULL || send + rows == 0 || !comm->deterministic) return;
    // the count is fixed by the first reservation or operation (tickets map to slots by it);
    // a later reservation only grows the slots there are
    if (comm->async[0] == NULL) comm->async_slots = hp_comm_async_slots(send, rows);
    make_slots(comm);
    reserve(comm, (async_need){ .send = send, .rows = rows });
}

// Posts op (phases set); send: a reduce-scatter's (size, n) input, copied (the caller may
// reuse it) unless it was staged in op's own copy (hp_reduce_scatter_staging), or NULL.
static int enqueue(hp_comm *comm, hp_comm_async_op *op, const float *send) {
    size_buffers(op, comm);
    if (send && send != op->send)
        memcpy(op->send, send, (size_t)comm->size[op->ph[0].g] * op->n * sizeof *send);
    op->cur = 0;
    post_phase(comm, op);
    const int ticket = comm->async_tail++;
    hp_comm_progress(comm);
    return ticket;
}

void hp_comm_async_free(hp_comm *comm) {
    for (int i = 0; i < HP_COMM_ASYNC_MAX; i++) {
        hp_comm_async_op *op = comm->async[i];
        if (op == NULL) continue;
        hp_mem_free(op->send); hp_mem_free(op->rows); hp_mem_free((void *)op->operands);
        hp_mem_free(op->reqs); hp_mem_free(op->n_scat);
        hp_mem_free(op);
    }
}

// ----------------------------------------------------------------------------
// public

// An in-place all-reduce over g, already counted.
static int allreduce_start(hp_comm *comm, hp_group_kind g, float *buf, size_t n) {
    if (comm->size[g] == 1 || n == 0) return comm->async_tail - 1;
    hp_comm_async_op *op = next_slot(comm);
    op->recv = buf;
    op->n = n;
    op->n_phases = 1;
    init_phase(comm, op, 0, HP_OP_ALLREDUCE, g);
    return enqueue(comm, op, NULL);
}

float *hp_reduce_scatter_staging(hp_comm *comm, hp_group_kind g, size_t n,
                                 hp_group_kind then_allreduce) {
    hp_comm_group_size(comm, g, "hp_reduce_scatter_staging");
    if (!comm->deterministic || comm->size[g] == 1 || n == 0) return NULL;   // no copy made
    hp_comm_async_op *op = next_slot(comm);   // the start's slot: free now, and it stays so
    async_need w = { 0 };
    phase_need(&w, HP_OP_REDUCE_SCATTER, comm->size[g], n);
    if (then_allreduce != HP_G_COUNT && comm->size[then_allreduce] > 1)
        phase_need(&w, HP_OP_ALLREDUCE, comm->size[then_allreduce], n);
    reserve(comm, w);   // (a growth moves the buffers: op->send is read after it)
    return op->send;
}

int hp_reduce_scatter_start(hp_comm *comm, hp_group_kind g, float *recv, const float *send,
                            size_t n, hp_group_kind then_allreduce) {
    const char *who = "hp_reduce_scatter_start";
    const int size = hp_comm_group_size(comm, g, who);
    const int chain = then_allreduce != HP_G_COUNT;
    if (chain) hp_comm_group_size(comm, then_allreduce, who);
    if (!comm->deterministic) {   // the blocking calls (see the top)
        hp_reduce_scatter(comm, g, recv, send, n);
        if (chain) hp_allreduce_sum(comm, then_allreduce, recv, n);
        return comm->async_tail - 1;
    }
    // the counters of the blocking calls (comm_reduce.c), counted now
    hp_comm_count(comm, g, HP_OP_REDUCE_SCATTER, (uint64_t)size * n * sizeof(float), who);
    hp_comm_count_wire(comm, g, HP_OP_REDUCE_SCATTER, (uint64_t)(size - 1) * n * sizeof(float));
    if (chain) {
        hp_comm_count(comm, then_allreduce, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(float), who);
        hp_comm_count_wire(comm, then_allreduce, HP_OP_ALLREDUCE,
                           hp_fixed_allreduce_wire(n, comm->size[then_allreduce],
                                                   comm->rank[then_allreduce], sizeof(float)));
    }
    const int ar = chain && comm->size[then_allreduce] > 1;
    if (n == 0) return comm->async_tail - 1;
    if (size == 1) {   // nothing to scatter: a local copy, then (maybe) the all-reduce
        if (recv != send) memmove(recv, send, n * sizeof *recv);   // (staged in place: done)
        return ar ? allreduce_start(comm, then_allreduce, recv, n)
                  : comm->async_tail - 1;
    }
    (void)hp_comm_int_count(n, who);
    hp_comm_async_op *op = next_slot(comm);
    op->recv = recv;
    op->n = n;
    op->n_phases = ar ? 2 : 1;
    init_phase(comm, op, 0, HP_OP_REDUCE_SCATTER, g);
    if (ar) init_phase(comm, op, 1, HP_OP_ALLREDUCE, then_allreduce);
    return enqueue(comm, op, send);
}

int hp_allreduce_sum_start(hp_comm *comm, hp_group_kind g, float *buf, size_t n) {
    const char *who = "hp_allreduce_sum_start";
    hp_comm_group_size(comm, g, who);
    if (!comm->deterministic) {
        hp_allreduce_sum(comm, g, buf, n);
        return comm->async_tail - 1;
    }
    hp_comm_count(comm, g, HP_OP_ALLREDUCE, (uint64_t)n * sizeof(float), who);
    hp_comm_count_wire(comm, g, HP_OP_ALLREDUCE,
                       hp_fixed_allreduce_wire(n, comm->size[g], comm->rank[g], sizeof(float)));
    return allreduce_start(comm, g, buf, n);
}
