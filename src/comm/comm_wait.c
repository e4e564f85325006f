// comm_wait.c - the watchdog. Every blocking wait of the comm layer is a nonblocking MPI
// operation completed here, polled against a deadline, so a rank that died, hangs or
// skipped a collective ends the job with one line naming it instead of hanging it:
//   hp: watchdog: rank 3 waited 5.0 s in all-gather on group tp (step 2); aborting the job
// The timeout is process-wide (hp_comm_set_timeout, else HP_TIMEOUT, else 600 s).
// The line and the abort after it: comm_abort.c (hp_fail_line_and_abort).
// defines: hp_comm_wait_at, hp_comm_set_timeout, hp_comm_timeout, hp_comm_parse_timeout,
//          hp_comm_set_step, hp_comm_last_step, hp_comm_check_timeout_env,
//          hp_comm_install_world_errhandler, hp_comm_test_at, hp_comm_now,
//          hp_comm_wait_in_progress
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "comm_internal.h"   // defines: struct hp_comm, HP_MPI_CHECK

// The first WAIT_SPIN_S of a wait only yields between polls: most waits end within a few
// microseconds and a sleep would add its own latency to every collective. After that the
// poll sleeps, doubling from WAIT_SLEEP_MIN_NS to WAIT_SLEEP_MAX_NS, so a rank waiting
// for seconds (e.g. for rank 0's reference run under --verify) leaves the core to it.
#define WAIT_SPIN_S         2e-3
#define WAIT_SLEEP_MIN_NS   20000L
#define WAIT_SLEEP_MAX_NS   1000000L
#define WAIT_STAGGER_S      0.25

static double g_timeout = 0.0;   // 0: not decided yet (setter, else HP_TIMEOUT on first use)
static int    g_last_step = 0;

// The wait in progress, for the world error handler below and the SIGTERM note of
// comm_abort.c (the comm layer is used from one thread per rank).
static const char *volatile g_wait_file, *volatile g_wait_op, *volatile g_wait_group;
static volatile int         g_wait_line;
static volatile double      g_wait_t0;        // when the wait in progress began (hp_comm_now)

double hp_comm_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *hp_comm_wait_in_progress(const char **group, double *t0) {
    const char *op = g_wait_op;
    *group = g_wait_group;
    *t0 = g_wait_t0;
    return op;
}

int hp_comm_parse_timeout(const char *text, double *seconds) {
    if (text == NULL || *text == '\0') return -1;
    char *end = NULL;
    errno = 0;
    const double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || !(v > 0.0)) return -1;
    *seconds = v;
    return 0;
}

int hp_comm_set_timeout(double seconds) {
    if (!isfinite(seconds) || !(seconds > 0.0)) return -1;
    g_timeout = seconds;
    return 0;
}

double hp_comm_timeout(void) {
    if (g_timeout > 0.0) return g_timeout;
    double v = HP_COMM_DEFAULT_TIMEOUT;
    // A bad value is refused by hp_comm_init; a wait before that keeps the default.
    if (hp_comm_parse_timeout(getenv("HP_TIMEOUT"), &v) != 0) v = HP_COMM_DEFAULT_TIMEOUT;
    g_timeout = v;
    return v;
}

void hp_comm_check_timeout_env(MPI_Comm world) {
    if (g_timeout > 0.0) return;   // a setter ran: the environment does not apply
    const char *env = getenv("HP_TIMEOUT");
    double v = 0.0;
    if (env == NULL || hp_comm_parse_timeout(env, &v) == 0) return;
    // Every rank sees the same environment: rank 0 says why, all leave with exit 2. The
    // others wait 2 s first, so that even a slow rank 0 prints before any abort.
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    if (rank == 0)
        hp_fail_line_and_abort(2, "hp: HP_TIMEOUT=%s: the watchdog timeout must be a finite "
                               "number of seconds > 0", env);
    struct timespec ts = { 2, 0 };
    nanosleep(&ts, NULL);
    MPI_Abort(world, 2);
    exit(2);   // MPI_Abort does not return
}

// MPICH raises the error of a failed request (e.g. a truncated receive) on
// MPI_COMM_WORLD's handler rather than on the request's communicator. This handler keeps
// that fatal, but reports it like every other comm error: the caller's line, the op and
// the group of the wait in progress, printed and flushed before the job is taken down.
static void world_error(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(*code, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", *code);
    if (g_wait_op != NULL)
        hp_comm_fail(g_wait_file, g_wait_line, "MPI error in %s on group %s: %s", g_wait_op,
                     g_wait_group, msg);
    hp_comm_fail(__FILE__, __LINE__, "MPI error on MPI_COMM_WORLD: %s", msg);
}

void hp_comm_install_world_errhandler(void) {
    static int installed = 0;
    if (installed) return;
    installed = 1;
    // Only in place of the default: a handler the program chose stays.
    MPI_Errhandler current;
    HP_MPI_CHECK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &current));
    const int is_default = current == MPI_ERRORS_ARE_FATAL;
    if (current != MPI_ERRORS_ARE_FATAL) MPI_Errhandler_free(&current);
    if (!is_default) return;
    MPI_Errhandler eh;
    HP_MPI_CHECK(MPI_Comm_create_errhandler(world_error, &eh));
    HP_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    MPI_Errhandler_free(&eh);   // MPI_COMM_WORLD keeps its own reference
}

void hp_comm_set_step(hp_comm *comm, int step) {
    if (comm != NULL) comm->step = step;
    g_last_step = step;
}

int hp_comm_last_step(void) { return g_last_step; }

_Noreturn static void watchdog_fire(const hp_comm *comm, double waited, const char *op,
                                    const char *group) {
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);   // the world rank, whatever the communicator
    hp_fail_line_and_abort(1, "hp: watchdog: rank %d waited %.1f s in %s on group %s (step %d); "
                           "aborting the job", rank, waited, op, group,
                           comm != NULL ? comm->step : g_last_step);
}

// Tests the requests one by one (finished ones become MPI_REQUEST_NULL); 1 when all are
// done. One MPI_Test per request rather than MPI_Testall: MPICH reports a failed request
// of MPI_Testall on MPI_COMM_WORLD's error handler (fatal, with no location), MPI_Test on
// the request's own communicator, which returns the code so it is reported here with the
// caller's line, the op and the group.
static int test_all(const char *file, int line, int n, MPI_Request *reqs, const char *op,
                    const char *group) {
    int all = 1;
    for (int i = 0; i < n; i++) {
        if (reqs[i] == MPI_REQUEST_NULL) continue;
        int done = 0;
        MPI_Status st;
        const int rc = MPI_Test(&reqs[i], &done, &st);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", rc);
            hp_comm_fail(file, line, "MPI error in %s on group %s: %s", op, group, msg);
        }
        all &= done;
    }
    return all;
}

int hp_comm_test_at(const char *file, int line, int n, MPI_Request *reqs, const char *op,
                    const char *group) {
    return n <= 0 || test_all(file, line, n, reqs, op, group);
}

void hp_comm_wait_at(const char *file, int line, const hp_comm *comm, int n,
                     MPI_Request *reqs, const char *op, const char *group) {
    if (n <= 0) return;
    const double t0 = hp_comm_now();
    g_wait_t0 = t0;
    g_wait_file = file; g_wait_line = line; g_wait_group = group; g_wait_op = op;
    if (test_all(file, line, n, reqs, op, group)) { g_wait_op = NULL; return; }
    // Ranks waiting on the same dead peer would all fire at once; a deadline staggered by
    // world rank lets the first abort take the job down before the others print too.
    int wrank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    const double timeout = hp_comm_timeout() + WAIT_STAGGER_S * (double)(wrank % 8);
    long pause_ns = WAIT_SLEEP_MIN_NS;
    for (;;) {
        const double waited = hp_comm_now() - t0;
        if (waited > timeout) watchdog_fire(comm, waited, op, group);
        if (waited < WAIT_SPIN_S) {
            sched_yield();
        } else {
            struct timespec ts = { 0, pause_ns };
            nanosleep(&ts, NULL);
            if (pause_ns < WAIT_SLEEP_MAX_NS) pause_ns *= 2;
            if (pause_ns > WAIT_SLEEP_MAX_NS) pause_ns = WAIT_SLEEP_MAX_NS;
        }
        if (test_all(file, line, n, reqs, op, group)) { g_wait_op = NULL; return; }
        // the nonblocking reductions in flight go on meanwhile (comm_async.c): a partner
        // may be waiting for this rank's share of one while this rank waits here
        hp_comm_progress((hp_comm *)comm);
    }
}
