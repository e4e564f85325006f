// cmd_compare.c - `hp compare A B [--fp32 F] [--bitwise]`: two dumps of step 1 (hp run --dump, or another
// framework's, e.g. examples/torch/torch_dump.py) under the verifier's rules. No MPI.
// Exit 0 pass, 1 a miss (the table names it), 2 when A and B cannot be compared (one line).
// defines: tool_cmd_compare
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "hyperpar/dump.h"

static const char *const compare_usage =
    "usage: hp compare A B [--fp32 F] [--bitwise] [--quiet]\n"
    "\n"
    "A and B are dump folders of step 1 (hp run --dump DIR, or any framework that writes the same\n"
    "files: docs/dump.md). They must hold the same tensor names and shapes, the same batch and\n"
    "bit-identical initial models (else exit 2); then B's loss, global gradient norm and every\n"
    "gradient are compared with A's as hp run --verify does (fp32: 1e-5 relative), and the table\n"
    "prints one row per tensor, then whether B is A byte for byte. Exit 0 when all pass, 1 on a\n"
    "miss.\n"
    "  --fp32 F    bfloat16 dumps: F is an fp32 dump of the same model and batch; each check is\n"
    "              then ||B - A|| / ||A - F|| <= the verifier's closeness bound (precision.md 4.2)\n"
    "  --bitwise   B must be A byte for byte (the loss and every gradient): the first differing\n"
    "              element is named, with both values in hex, and fails\n"
    "  --quiet     the verdict line only\n"
    "\n";

int tool_cmd_compare(int argc, char **argv) {
    const char *dirs[2] = { NULL, NULL }, *fp32 = NULL;
    int n_dirs = 0, quiet = 0, bitwise = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(compare_usage, stdout); return HP_EXIT_OK; }
        if (!strcmp(a, "--quiet")) { quiet = 1; continue; }
        if (!strcmp(a, "--bitwise")) { bitwise = 1; continue; }
        if (!strcmp(a, "--fp32")) {
            if (i + 1 >= argc) { fprintf(stderr, "hp: --fp32 expects a value\n"); return HP_EXIT_CONFIG; }
            fp32 = argv[++i];
            continue;
        }
        if (!strncmp(a, "--fp32=", 7)) { fp32 = a + 7; continue; }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "hp: unknown flag '%s' (see hp compare --help)\n", a);
            return HP_EXIT_CONFIG;
        }
        if (n_dirs == 2) {
            fprintf(stderr, "hp compare: unexpected argument '%s' (two dump folders)\n", a);
            return HP_EXIT_CONFIG;
        }
        dirs[n_dirs++] = a;
    }
    if (n_dirs != 2) {
        fprintf(stderr, "hp compare: needs two dump folders, got %d (hp compare A B; see hp compare --help)\n", n_dirs);
        return HP_EXIT_CONFIG;
    }
    hp_dump_comparison c;
    char err[1024];
    const int rc = hp_dump_compare_bitwise(dirs[0], dirs[1], fp32, bitwise, &c, err, sizeof err);
    if (rc) {
        fprintf(stderr, "hp compare: %s\n", err);
        return rc;
    }
    if (quiet) printf("compare: %s%s%s\n", c.pass ? "PASS" : "FAIL", c.failure ? ": " : "", c.failure ? c.failure : "");
    else hp_dump_comparison_print(stdout, &c);
    const int pass = c.pass;
    hp_dump_comparison_free(&c);
    return pass ? HP_EXIT_OK : HP_EXIT_FAIL;
}
