// comm_abort.c - the end of a job: one line, then MPI_Abort, and the job ends even where the
// abort cannot reach a host (a cut link: docs/multi_host.md "When a host or a link fails").
//   - hp_fail_line_and_abort: the line in one write(2), a moment for the launcher to forward
//     it, MPI_Abort. The rank exits on its own HP_ABORT_GRACE_S after the line (a thread), and
//     a watcher process ends the launcher daemon that started it (mpirun, orted, Hydra's proxy)
//     if that still runs a second later: behind a cut link mpirun waits for the lost daemon,
//     and the daemon for mpirun, until the kernel gives their TCP connection up (15 min).
//   - rank 0 under an outside launcher: a SIGTERM (mpirun ends the ranks when it loses a host's
//     daemon, before any watchdog fires) first prints where the rank was:
//       hp: rank 0 got SIGTERM from the launcher after waiting 1.0 s in all-gather on group fsdp (step 123)
// defines: hp_fail_line_and_abort, hp_comm_install_term_note
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "comm_internal.h"   // defines: hp_comm_now, hp_comm_wait_in_progress

// What a line printed just before an abort gets for the launcher to forward it (MPICH's
// Hydra drops what it has not forwarded when one rank aborts).
#define ABORT_LINE_PAUSE_NS 200000000L

// Set once this rank has printed its line and is taking the job down: the SIGTERM its
// launcher then sends is expected, and says nothing more.
static volatile sig_atomic_t g_aborting = 0;
static volatile sig_atomic_t g_abort_code = 1, g_abort_rank = -1;
static char  g_launcher_name[32];   // the launcher daemon a watcher ends, if any (grace line)
static pid_t g_launcher_pid = 0;

// A rank writes with write(2) only, from here and from signal handlers.
static void write_all(const char *buf, size_t len) {
    for (size_t off = 0; off < len;) {
        const ssize_t w = write(STDERR_FILENO, buf + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
}

// Appends to a line with async-signal-safe code only (the SIGTERM note): a string, a whole
// number, a number of seconds with one decimal.
typedef struct { char buf[384]; size_t len; } note_line;
static void note_str(note_line *l, const char *s) {
    while (s && *s && l->len + 1 < sizeof l->buf) l->buf[l->len++] = *s++;
}
static void note_int(note_line *l, long v) {
    char d[24];
    int n = 0;
    unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
    do { d[n++] = (char)('0' + u % 10); u /= 10; } while (u && n < (int)sizeof d);
    if (v < 0) note_str(l, "-");
    while (n > 0 && l->len + 1 < sizeof l->buf) l->buf[l->len++] = d[--n];
}
static void note_tenths(note_line *l, double s) {
    const long t = s > 0 && s < 1e12 ? (long)(s * 10.0 + 0.5) : 0;
    note_int(l, t / 10);
    note_str(l, ".");
    note_int(l, t % 10);
}

// The grace: HP_ABORT_GRACE_S after its line, a rank that is still alive (MPI_Abort waiting on
// a host it cannot reach) says so and exits with its code.
static void *abort_grace(void *arg) {
    (void)arg;
    struct timespec ts = { HP_ABORT_GRACE_S, 0 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    note_line l = { .len = 0 };
    note_str(&l, "hp: rank ");
    note_int(&l, g_abort_rank);
    note_str(&l, ": the job did not end ");
    note_int(&l, HP_ABORT_GRACE_S);
    note_str(&l, " s after the abort; exiting with code ");
    note_int(&l, g_abort_code);
    note_str(&l, " (the launcher may have lost a host)");
    if (g_launcher_pid > 0) {
        note_str(&l, "; its launcher ");
        note_str(&l, g_launcher_name);
        note_str(&l, " (pid ");
        note_int(&l, (long)g_launcher_pid);
        note_str(&l, ") is ended in 1 s if it still runs");
    }
    note_str(&l, "\n");
    write_all(l.buf, l.len);
    _exit(g_abort_code);
}

// /proc/PID/stat's start time (field 22, clock ticks since boot), 0 when unreadable or the
// process has ended (a zombie): with the pid it names one process, never a later one that got
// the same pid.
static unsigned long long proc_start_time(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');   // the name may hold spaces and parentheses
    if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X') return 0;   // (a zombie has ended)
    int field = 2;
    for (p++; *p && field < 22; p++)
        if (*p == ' ') field++;
    return field == 22 ? strtoull(p, NULL, 10) : 0;
}

// 1 when pid is a daemon of an MPI launcher that started this rank: Open MPI's mpirun /
// orterun / orted (4.x), prterun / prted (5.x), MPICH's mpiexec(.hydra) / hydra_pmi_proxy.
// Not srun's slurmstepd: Slurm ends the steps of a lost node itself.
static int is_mpi_launcher(pid_t pid, char name[32]) {
    char path[64];
    name[0] = '\0';
    snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    const ssize_t n = read(fd, name, 31);
    close(fd);
    if (n <= 0) return 0;
    name[n] = '\0';
    name[strcspn(name, "\n")] = '\0';
    static const char *const exact[] = { "orted", "prted", "prterun", "hydra_pmi_proxy", NULL };
    for (int i = 0; exact[i]; i++)
        if (!strcmp(name, exact[i])) return 1;
    return !strncmp(name, "mpirun", 6) || !strncmp(name, "mpiexec", 7) || !strncmp(name, "orterun", 7);
}

static int still_runs(pid_t pid, unsigned long long start) {
    return kill(pid, 0) == 0 && proc_start_time(pid) == start;
}

static void sleep_s(double s) {
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

// The launcher's leftovers: mpirun waits for every daemon to report its ranks gone, and an
// orted for mpirun's word, both over TCP; behind a cut link neither comes until the kernel
// gives the connection up (net.ipv4.tcp_retries2: about 15 min by default). A process forked
// here, out of the launcher's process group, watches the daemon that started this rank: once
// it is gone the watcher ends; if it still runs 1 s after the grace it gets SIGKILL (its
// ranks are gone by then; Open MPI 4.1's mpirun, sent SIGTERM while a daemon is unreachable,
// finalizes PMIx and crashes in PMIx_Finalize). It touches no MPI state and holds no
// descriptor of the job (a peer or a test harness waiting for the rank's sockets and pipes to
// close is not held up).
static void start_launcher_watch(void) {
    const pid_t launcher = getppid();
    char name[32];
    if (launcher <= 1 || !is_mpi_launcher(launcher, name)) return;
    const unsigned long long start = proc_start_time(launcher);
    if (start == 0) return;
    const pid_t pid = fork();
    if (pid < 0) return;   // no watcher
    if (pid > 0) {         // the rank: its grace line names what the watcher ends
        memcpy(g_launcher_name, name, sizeof g_launcher_name);
        g_launcher_pid = launcher;
        return;
    }
    setsid();
    // every descriptor: a socket of the rank's kept open here would hide its end from peers
    long max_fd = sysconf(_SC_OPEN_MAX);
    if (max_fd < 1024 || max_fd > (1L << 20)) max_fd = max_fd < 1024 ? 1024 : (1L << 20);
    for (long fd = 0; fd < max_fd; fd++) close((int)fd);
    const int null = open("/dev/null", O_RDWR);
    if (null == 0) { dup2(0, 1); dup2(0, 2); }
    const double until = hp_comm_now() + HP_ABORT_GRACE_S + 1.0;
    while (hp_comm_now() < until) {
        if (!still_runs(launcher, start)) _exit(0);
        sleep_s(0.1);
    }
    if (still_runs(launcher, start)) kill(launcher, SIGKILL);
    _exit(0);
}

_Noreturn void hp_fail_line_and_abort(int code, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    size_t len = strcspn(line, "\n");   // one line
    line[len++] = '\n';
    g_aborting = 1;
    fflush(stdout);
    fflush(stderr);
    // one write: the line reaches the launcher's pipe whole, never split by another rank's
    write_all(line, len);
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized) exit(code);
    // the job ends even where the abort cannot reach: this rank after the grace, the launcher
    // daemon that started it a second later (armed once: an error raised inside MPI_Abort
    // comes back here)
    static int armed = 0;
    if (!armed) {
        armed = 1;
        g_abort_code = code;
        int rank = -1;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        g_abort_rank = rank;
        start_launcher_watch();
        pthread_t grace;
        if (pthread_create(&grace, NULL, abort_grace, NULL) == 0) pthread_detach(grace);
    }
    struct timespec pause = { 0, ABORT_LINE_PAUSE_NS };
    nanosleep(&pause, NULL);
    MPI_Abort(MPI_COMM_WORLD, code);
    abort();   // MPI_Abort does not return
}

// Rank 0's SIGTERM under an outside launcher: mpirun ends the ranks (SIGTERM, then SIGKILL)
// when it loses a host's daemon, before any watchdog fires; the launcher's banner names the
// host, this line the rank, the op, the group and the step the job was in:
//   hp: rank 0 got SIGTERM from the launcher after waiting 1.0 s in all-gather on group fsdp (step 123)
// Then the signal takes its default course (the exit status stays "killed by SIGTERM").
static void term_note(int sig) {
    if (!g_aborting) {
        note_line l = { .len = 0 };
        note_str(&l, "hp: rank 0 got SIGTERM from the launcher ");
        const char *group = NULL;
        double t0 = 0.0;
        const char *op = hp_comm_wait_in_progress(&group, &t0);
        if (op != NULL) {
            note_str(&l, "after waiting ");
            note_tenths(&l, hp_comm_now() - t0);
            note_str(&l, " s in ");
            note_str(&l, op);
            note_str(&l, " on group ");
            note_str(&l, group);
            note_str(&l, " (step ");
        } else {
            note_str(&l, "outside any collective (step ");
        }
        note_int(&l, hp_comm_last_step());
        note_str(&l, ")\n");
        write_all(l.buf, l.len);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void hp_comm_install_term_note(int world_rank) {
    static int installed = 0;
    if (installed || world_rank != 0) return;
    installed = 1;
    // hp's own launcher names what ended a self-launched job; a handler the program set stays
    const char *own = getenv("HP_LAUNCHED");
    if (own != NULL && *own) return;
    struct sigaction old;
    if (sigaction(SIGTERM, NULL, &old) != 0 || old.sa_handler != SIG_DFL) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = term_note;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

