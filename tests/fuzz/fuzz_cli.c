// fuzz_cli.c - hp's flag parser (tools/hp/cli/cli.c) on any command line: the input split at NUL
// bytes is argv[1..] after "hp", so "run\0--tp\0002\0--verify" is `hp run --tp 2 --verify`.
// The first word picks the subcommand's extra flags, as its cmd_*.c passes them.
// Invariants (abort when broken): a parse returns 0, -1 (help) or HP_EXIT_CONFIG; after a
// successful one, rest[] holds at most its 16 entries, each an argument of the command line or
// an extra flag kept as "--flag=value"; the path flags point at arguments of the command line.
// (tool_cli_parse prints its one line to stderr; `make fuzz` runs with -close_fd_mask=3.)
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "fuzz_target.h"

#define MAX_ARGS 256

// cmd_bench.c's extras (tool_cmd_bench takes --memory / --recipes out before parsing)
static const char *const bench_extra[] = { "--threads", "--warmup", "--shards", "--memory-out", NULL };

// 1 if p points into (or at the end of) one of the arguments; compared as addresses, since the
// arguments are different objects
static int is_arg(char *const *argv, int argc, const char *p) {
    const uintptr_t q = (uintptr_t)p;
    for (int i = 0; i < argc; i++)
        if (q >= (uintptr_t)argv[i] && q <= (uintptr_t)argv[i] + strlen(argv[i])) return 1;
    return 0;
}

static int is_kept_extra(const char *s, const char *const *extra) {
    for (int k = 0; extra && extra[k]; k++) {
        size_t n = strlen(extra[k]);
        if (!strncmp(s, extra[k], n) && s[n] == '=') return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "hp";
    for (size_t at = 0; at < size && argc < MAX_ARGS; at += strlen(buf + at) + 1) argv[argc++] = buf + at;
    argv[argc] = NULL;

    // --model-config FILE (and a job file: --config) reads FILE while parsing: a fuzzer must not read /dev/zero or a FIFO
    // of this machine, and the reader has its own target (fuzz_hf_config.c)
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], "--", 2) && strstr(argv[i], "config") && !strstr(argv[i], "print")) {
            free(buf);   // --model-config, --model.hf_config, --config, --job.config_file: files
            return 0;
        }
    const char *const *extra = NULL;
    if (argc > 1 && !strcmp(argv[1], "bench")) {
        extra = bench_extra;
        int k = 2;   // tool_cmd_bench's own pre-pass
        for (int i = 2; i < argc; i++)
            if (strcmp(argv[i], "--memory") && strcmp(argv[i], "--recipes")) argv[k++] = argv[i];
        argc = k;
        argv[argc] = NULL;
    }
    tool_cli cli;
    const int rc = tool_cli_parse(&cli, argc, argv, 2, extra, "usage: hp fuzz\n");
    if (rc != 0 && rc != -1 && rc != HP_EXIT_CONFIG) abort();
    if (rc == 0) {
        if (cli.n_rest < 0 || cli.n_rest > (int)(sizeof cli.rest / sizeof cli.rest[0])) abort();
        for (int i = 0; i < cli.n_rest; i++)
            if (!cli.rest[i] || (!is_arg(argv, argc, cli.rest[i]) && !is_kept_extra(cli.rest[i], extra))) abort();
        const char *paths[] = { cli.dump_dir, cli.load_file, cli.json_out, cli.run.data_path };
        for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
            if (paths[i] && !is_arg(argv, argc, paths[i])) abort();
#ifdef HP_FUZZ_HAVE_CLI_CHECK
        hp_cli_check(&cli);   // the range checks after a successful parse (tools/hp/cli/cli.c)
#endif
    }
    hp_job_release();   // the kept "--flag=value" strings: one command line's worth at a time
    free(buf);
    return 0;
}
