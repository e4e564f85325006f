// launch_banner.c - the launcher's stderr, less what repeats hp's own line or is Open MPI's
// teardown noise.
// defines: tool_launcher_banner_is_exit_code, tool_launcher_stderr_filter
//
// When a rank of a self-launched job exits 1 (a non-finite loss, `--verify` failing), hp has
// already said why in one line; the launcher then adds a framed paragraph that says only that a
// process returned a non-zero exit code:
//   Open MPI: blocks framed by lines of dashes, "Primary job  terminated normally, but 1 process
//             returned a non-zero exit code ..." and "... detected that one or more processes
//             exited with non-zero status ... Exit code: 1";
//   MPICH:    a block framed by lines of '=': "BAD TERMINATION OF ONE OF YOUR APPLICATION
//             PROCESSES ... EXIT CODE: 1 ... CLEANING UP REMAINING PROCESSES".
// Those blocks are dropped. A job that ends on hp's own line (the watchdog's "aborting the
// job", a comm error: every "hp: " line but a note) then gets Open MPI's MPI_ABORT block,
// which says again that a rank aborted: dropped too, and so are the error logs Open MPI's
// runtime prints while it tears the job down ("ORTE_ERROR_LOG: Out of resource in file
// ../orte/util/show_help.c", "Data unpack would read past end of buffer", PMIx errors): they
// are about its own messages lost in the teardown, not about the job. Before the job ends
// they pass, as news (MPICH's "application called MPI_Abort" echo likewise). A transport's
// failed copy from a peer that no longer exists ("Read -1, expected N, errno = 3") follows a
// killed rank, whose end the launcher names: dropped. A killed rank's block ("orterun noticed that process rank 3 with PID 0
// on node vm exited on signal 9") becomes its one line, less "with PID 0": Open MPI 4.1 reports
// no PID there. Everything else goes through whole, and every line outside a framed block at
// once (hp's own lines come through this pipe too).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "launch.h"

#define MAX_BLOCK_LINES 64   // a longer "block" is not a banner: it is passed through

// A frame line: 20 or more of one character ('-' Open MPI, '=' MPICH) and nothing else.
static char frame_char(const char *line) {
    const char c = line[0];
    if (c != '-' && c != '=') return 0;
    size_t n = 0;
    while (line[n] == c) n++;
    while (line[n] == '\n' || line[n] == '\r') n++;
    return n >= 20 && line[n] == '\0' ? c : 0;
}

int tool_launcher_banner_is_exit_code(const char *block) {
    // a signal, an abort or a missing process is news: it stays
    if (strstr(block, "signal") || strstr(block, "SIGNAL") || strstr(block, "MPI_ABORT") ||
        strstr(block, "Abort") || strstr(block, "KILLED"))
        return 0;
    return strstr(block, "terminated normally, but") != NULL ||
           strstr(block, "exited with non-zero status") != NULL ||
           (strstr(block, "BAD TERMINATION") != NULL && strstr(block, "EXIT CODE:") != NULL);
}

// hp's own line that ends the job: "hp: ..." but not "hp: note: ..." (a note says and goes on).
static int is_hp_ending_line(const char *line) {
    return strncmp(line, "hp: ", 4) == 0 && strncmp(line, "hp: note:", 9) != 0;
}

// Once the job is ending: an error log of Open MPI's runtime or its PMIx ("[vm:02919]
// [[26521,0],0] ORTE_ERROR_LOG: Out of resource in file ../../../orte/util/show_help.c at line
// 501"), or MPICH's echo of an abort hp announced ("Abort(1) on node 2 (rank 2 in comm 0):
// application called MPI_Abort(MPI_COMM_WORLD, 1) - process 2").
static int is_teardown_noise(const char *line) {
    return strstr(line, "ORTE_ERROR_LOG") || strstr(line, "PMIX_ERROR") || strstr(line, "PMIX ERROR") ||
           strstr(line, "application called MPI_Abort(");
}

// Open MPI's shared-memory transport reading from (or writing to) a peer that no longer exists
// ("[vm:27303] Read -1, expected 32896, errno = 3": ESRCH, the killed rank's memory is gone).
// A consequence of a dead rank, which the launcher's signal line names; another errno (1,
// EPERM: a container that forbids cross-process reads) is a real fault and passes.
static int is_dead_peer_copy(const char *line) {
    const char *p = strstr(line, "] Read -1, expected ");
    if (!p) p = strstr(line, "] Write -1, expected ");
    if (!p) return 0;
    const char *e = strstr(p, ", errno = 3");
    return e && (e[11] == '\n' || e[11] == '\r' || e[11] == '\0');
}

// Open MPI's block for a rank that a signal ended ("... noticed that process rank 3 with PID 0
// on node vm exited on signal 9 (Killed).").
static int is_signal_block(const char *block) {
    return strstr(block, "noticed that process rank") && strstr(block, "signal");
}

// One line of a killed rank's block, as out gets it: without "with PID 0 " (Open MPI 4.1 sends
// no PID with the report; a real PID is kept).
static void put_without_pid0(const char *line, FILE *out) {
    const char *p = strstr(line, " with PID 0 ");
    if (!p) { fputs(line, out); return; }
    fwrite(line, 1, (size_t)(p - line), out);
    fputs(p + strlen(" with PID 0"), out);
}

// The content of a framed block, its frames and blank lines left out.
static void put_block_lines(char *block, FILE *out) {
    for (char *save = NULL, *l = strtok_r(block, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (frame_char(l) || l[strspn(l, " \t\r")] == '\0') continue;
        put_without_pid0(l, out);
        fputc('\n', out);
    }
}

// A whole framed block: dropped, put as it came, or as its lines. Returns 1 when the block says
// the job is ending (an abort or a signal).
static int put_block(char *block, int ending, FILE *out) {
    if (tool_launcher_banner_is_exit_code(block)) return 0;
    if (strstr(block, "MPI_ABORT was invoked")) {
        if (!ending) fputs(block, out);   // no line of hp's came first: it is news
        return 1;
    }
    if (is_signal_block(block)) {
        put_block_lines(block, out);
        return 1;
    }
    fputs(block, out);
    return 0;
}

void tool_launcher_stderr_filter(FILE *in, FILE *out) {
    char line[4096];
    char *block = NULL;        // the framed block being read, or NULL outside one
    size_t len = 0, cap = 0;
    int lines = 0;
    char frame = 0;
    int ending = 0;            // hp's own line, an abort or a signal has said the job ends
    for (;;) {
        const int got = fgets(line, sizeof line, in) != NULL;
        if (block && (!got || lines >= MAX_BLOCK_LINES)) {   // not a banner after all: as read
            fputs(block, out);
            free(block);
            block = NULL;
        }
        if (!got) break;
        if (!block) {
            frame = frame_char(line);
            if (!frame) {
                if (ending && (is_teardown_noise(line) || line[strspn(line, " \t\r\n")] == '\0'))
                    continue;   // the teardown's noise and blank lines
                if (is_dead_peer_copy(line)) continue;
                if (is_hp_ending_line(line)) ending = 1;
                fputs(line, out);
                fflush(out);
                continue;
            }
            len = 0; lines = 0; cap = 1024;
            block = malloc(cap);
            if (!block) { fputs(line, out); continue; }
            block[0] = '\0';
        }
        const size_t n = strlen(line);
        if (len + n + 1 > cap) {
            char *grown = realloc(block, cap = 2 * (len + n + 1));
            if (!grown) { fputs(block, out); fputs(line, out); free(block); block = NULL; continue; }
            block = grown;
        }
        memcpy(block + len, line, n + 1);
        len += n;
        lines++;
        if (lines > 1 && frame_char(line) == frame) {   // the closing frame: the block is whole
            if (put_block(block, ending, out)) ending = 1;
            fflush(out);
            free(block);
            block = NULL;
        }
    }
    fflush(out);
}
