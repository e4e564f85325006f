// test_watchdog.c - the comm layer's watchdog: a rank that never joins a collective must
// end the whole job, non-zero, soon after the deadline, with one line naming the rank,
// the op, the group and the step.
//   test_watchdog --api                     -> timeout setter/parser rules (no MPI job needed)
//   HP_TIMEOUT=2 mpirun -np 4 test_watchdog OP
//       OP = all-gather | all-reduce | reduce-scatter | all-to-all | send-recv | broadcast |
//            barrier. World rank 3 skips OP (it sleeps 60 s instead), the others wait in it;
//       the job must abort with
//       "hp: watchdog: rank R waited 2.0 s in OP on group G (step 7); aborting the job".
//   HP_TIMEOUT=abc mpirun -np 2 test_watchdog barrier -> exit 2, one line naming HP_TIMEOUT
//   WATCHDOG_READY_DIR=D: each rank creates D/ready.RANK once past its healthy round (so that
//       tests/run_abort_grace.sh knows when every rank is in OP before it freezes the launcher)
//   test_watchdog --launch N OP   the same job, started on N ranks by hp's own launcher
//       (tools/hp/launch/launch.c, as `hp run` starts its ranks): its stderr passes hp's filter, so
//       the job must end with hp's lines only (tests/run_watchdog.sh, WATCHDOG_HP_LINES_ONLY)
// The mesh is dp_shard 2 x tp 2 (world 4): all-gather and send-recv on tp, the all-reduce
// on dp_shard, reduce-scatter on fsdp, all-to-all on ep, broadcast and barrier on world.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hyperpar/comm.h"
#include "launch/launch.h"   // tool_launch_self, tool_launch_under_mpi (tools/hp/launch/launch.c)

static int api_checks(void) {
    int fail = 0;
#define EXPECT(cond) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); fail++; } } while (0)
    double v = -1.0;
    EXPECT(hp_comm_parse_timeout("2", &v) == 0 && v == 2.0);
    EXPECT(hp_comm_parse_timeout("0.25", &v) == 0 && v == 0.25);
    EXPECT(hp_comm_parse_timeout("1e3", &v) == 0 && v == 1000.0);
    const char *bad[] = { "", "0", "-1", "abc", "2s", "inf", "nan", "1e999", " ", NULL };
    for (int i = 0; bad[i]; i++) {
        v = 42.0;
        if (hp_comm_parse_timeout(bad[i], &v) != -1 || v != 42.0) {
            fprintf(stderr, "FAIL: hp_comm_parse_timeout(\"%s\") accepted (%g)\n", bad[i], v);
            fail++;
        }
    }
    EXPECT(hp_comm_parse_timeout(NULL, &v) == -1);
    // Without a setter: HP_TIMEOUT (the CTest sets 7.5), else the default.
    const char *env = getenv("HP_TIMEOUT");
    double want = HP_COMM_DEFAULT_TIMEOUT;
    if (env) hp_comm_parse_timeout(env, &want);
    EXPECT(hp_comm_timeout() == want);
    EXPECT(hp_comm_set_timeout(3.5) == 0 && hp_comm_timeout() == 3.5);
    EXPECT(hp_comm_set_timeout(0.0) == -1 && hp_comm_timeout() == 3.5);
    EXPECT(hp_comm_set_timeout(-2.0) == -1 && hp_comm_timeout() == 3.5);
    EXPECT(hp_comm_set_timeout(INFINITY) == -1 && hp_comm_timeout() == 3.5);
    EXPECT(hp_comm_set_timeout(NAN) == -1 && hp_comm_timeout() == 3.5);
#undef EXPECT
    printf("test_watchdog --api: %s\n", fail ? "FAIL" : "ok");
    return fail ? 1 : 0;
}

// Runs op on every rank but world rank 3, which sleeps instead: the others' waits time out.
static void run_op(hp_comm *comm, const char *op, int wrank) {
    float a[64] = { 0 }, b[256] = { 0 };
    int ia[16] = { 0 }, ib[16] = { 0 };
    if (wrank == 3) {
        struct timespec ts = { 60, 0 };
        nanosleep(&ts, NULL);   // the job is killed long before this ends
        return;
    }
    if (!strcmp(op, "all-gather"))          hp_allgather(comm, HP_G_TP, b, a, 64);
    else if (!strcmp(op, "all-reduce"))     hp_allreduce_sum(comm, HP_G_DP_SHARD, a, 64);
    else if (!strcmp(op, "reduce-scatter")) hp_reduce_scatter(comm, HP_G_FSDP, a, b, 64);
    else if (!strcmp(op, "all-to-all"))     hp_alltoall_int(comm, HP_G_EP, ib, ia, 4);
    else if (!strcmp(op, "send-recv")) {
        const int other = 1 - hp_comm_rank(comm, HP_G_TP);
        hp_sendrecv(comm, HP_G_TP, b, other, a, other, 64);
    }
    else if (!strcmp(op, "broadcast"))      hp_broadcast(comm, HP_G_WORLD, a, 64, 3);
    else if (!strcmp(op, "barrier"))        hp_barrier(comm, HP_G_WORLD);
    else { fprintf(stderr, "test_watchdog: unknown op %s\n", op); MPI_Abort(MPI_COMM_WORLD, 2); }
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--api")) return api_checks();
    const int launch = argc == 4 && !strcmp(argv[1], "--launch");
    if (argc != 2 && !launch) { fprintf(stderr, "usage: test_watchdog --api | OP | --launch N OP\n"); return 2; }
    if (launch && !tool_launch_under_mpi()) return tool_launch_self(atoi(argv[2]), argc, argv);
    const char *op = argv[argc - 1];
    MPI_Init(&argc, &argv);
    int wrank = 0, world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world != 4 && strcmp(op, "barrier") != 0) {
        if (wrank == 0) fprintf(stderr, "test_watchdog: needs 4 ranks, got %d\n", world);
        MPI_Finalize();
        return 2;
    }
    hp_dims d = hp_dims_default();
    d.world = world;
    d.dp_shard = world >= 4 ? 2 : world;
    d.tp = world >= 4 ? world / 2 : 1;
    d.ep = world >= 4 ? 2 : 1;
    char err[256];
    if (hp_dims_validate(&d, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "test_watchdog: %s\n", err);
        MPI_Finalize();
        return 2;
    }
    hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &d, 1);
    // A healthy round first: the watchdog must not fire on waits that end.
    float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    hp_allreduce_sum(comm, HP_G_WORLD, x, 8);
    if (x[0] != (float)world) { fprintf(stderr, "test_watchdog: all-reduce gave %g\n", x[0]); return 1; }
    hp_comm_set_step(comm, 7);
    const char *ready = getenv("WATCHDOG_READY_DIR");
    if (ready && *ready) {
        char path[4096];
        snprintf(path, sizeof path, "%s/ready.%d", ready, wrank);
        FILE *f = fopen(path, "w");
        if (f) fclose(f);
    }
    run_op(comm, op, wrank);
    // Members of groups the skipping rank is not in get here: they stay alive (Open MPI
    // 4.1's mpirun can hang when some ranks finalize while another aborts) until the
    // job is killed. Reaching the end means nobody noticed: the exit-code check fails on 0.
    struct timespec ts = { 30, 0 };
    nanosleep(&ts, NULL);
    hp_comm_free(comm);
    MPI_Finalize();
    return 0;
}
