// launch_banner.c - the launcher's stderr, less its banner for a rank's ordinary non-zero exit.
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
// Those blocks are dropped, and nothing else: a block naming a signal (a killed rank), an
// MPI_Abort (the watchdog) or anything we do not recognise goes through whole, and so does every
// line outside a framed block, at once (hp's own lines come through this pipe too).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

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

void tool_launcher_stderr_filter(FILE *in, FILE *out) {
    char line[4096];
    char *block = NULL;        // the framed block being read, or NULL outside one
    size_t len = 0, cap = 0;
    int lines = 0;
    char frame = 0;
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
            if (!frame) { fputs(line, out); fflush(out); continue; }
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
            if (!tool_launcher_banner_is_exit_code(block)) fputs(block, out);
            fflush(out);
            free(block);
            block = NULL;
        }
    }
    fflush(out);
}
