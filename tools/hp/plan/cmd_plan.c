// cmd_plan.c - `hp plan`: validate a configuration and show its whole layout, without MPI.
// defines: tool_cmd_plan
//
// Prints, in order: what to launch, the degrees and derived sizes, the dense and sparse mesh
// shapes, every rank's coordinates, every group of every kind, and the parameter table of one
// rank (--rank K). A violated rule prints one line and exits 2 before anything else.
// Beyond 64 ranks the rank table and the groups are summarised (by stride) unless --ranks;
// --memory / --json add the prediction of plan_report.c, --search is plan_search.c.
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "hyperpar/ulysses.h"
#include "hyperpar/mesh.h"
#include "hyperpar/params.h"
#include "hyperpar/pipeline.h"
#include "plan_tool.h"

static const char plan_usage[] =
    "usage: hp plan [flags]\n"
    "Validates the parallel degrees against the model and run, then prints the launch line, the\n"
    "derived sizes, the device mesh, every rank's coordinates, every process group and the\n"
    "parameter placement of one rank. Needs no MPI.\n"
    "  e.g. hp plan --tp 2 --cp 2 --dp-shard 2\n"
    "       hp plan --config examples/llama3_small.toml --tp 2   (a job file, docs/job_file.md)\n"
    "       hp plan --model tiny-moe --tp 2 --dp-shard 2 --ep 4 --etp 1 --rank 3\n"
    "       hp plan --model llama3-70b --tp 8 --nproc 1024 --seq-len 8192 --batch 512 --memory --hw h100\n"
    "       hp plan --search --world 16384 --model llama3-70b --mem-per-rank 80GiB --seq-len 4096 --batch 2048\n"
    "plan only:\n"
    "  --memory           per rank: parameters, gradients, optimiser state, FSDP buffers,\n"
    "                     activations, scratch and the peak; bytes per (group, op); FLOPs\n"
    "  --hw NAME          h100 | h200 | mi300x | cpu: add a step-time and MFU model\n"
    "  --json FILE        the --memory report as JSON (implies --memory); '-' = stdout\n"
    "  --ranks            beyond 64 ranks, print every rank and group (default: a summary)\n"
    "  --params all|kinds the parameter table: every parameter, or one row per kind of block\n"
    "                     parameter with its number of layers (default kinds)\n"
    "  --search           every legal layout of --world N that fits --mem-per-rank SIZE\n"
    "                     (e.g. 80GiB, 141GB), ranked, top 10\n"
    "  --world N          the world size to search\n"
    "  --mem-per-rank S   memory per rank, a number with B, KiB, MiB, GiB, TiB, KB, MB, GB, TB\n"
    "  --ranks-per-node N nodes are N consecutive ranks (hosts, or sockets): which groups stay\n"
    "                     inside one, and the rates of --hw and --search (default 8, or --hw's)\n"
    "\n";

// ---------------------------------------------------------------------------------------------
// the launch line: this command's flags minus the plan-only ones

static int needs_quotes(const char *s) {
    if (!*s) return 1;
    for (; *s; s++) {
        char ch = *s;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 strchr("_-./=:,+@%", ch) != NULL;
        if (!ok) return 1;
    }
    return 0;
}

static void print_args(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        // only run's flags: plan's own (--memory, --rank ...), its --json output and --nproc
        // (given by the line itself) are dropped with their values
        int takes_value = 0;
        const int run_flag = tool_cli_run_flag(a, &takes_value);
        const int plan_own = !strcmp(a, "--nproc") || !strncmp(a, "--nproc=", 8) ||
                             !strcmp(a, "--json") || !strncmp(a, "--json=", 7);
        if (run_flag == 0 || plan_own) { i += takes_value; continue; }
        if (needs_quotes(a)) {
            putchar(' '); putchar('\'');
            for (; *a; a++) { if (*a == '\'') fputs("'\\''", stdout); else putchar(*a); }
            putchar('\'');
        } else {
            printf(" %s", a);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// groups: one line per kind, groups in order of their smallest rank, wrapped at ~100 columns;
// a huge world lists the first MAX_GROUPS groups of each kind (the rest follow the pattern).

#define MAX_GROUPS 64
#define MAX_RANK_ROWS 256

static void print_groups(const hp_dims *d, int all) {
    const int W = d->world;
    int *members = malloc((size_t)W * sizeof *members);
    char *seen = malloc((size_t)W);
    if (!members || !seen) { free(members); free(seen); fprintf(stderr, "hp: out of memory\n"); return; }
    printf("groups (members in local-index order)\n");
    for (int g = 0; g < HP_G_COUNT; g++) {
        int size = hp_mesh_group_size(d, (hp_group_kind)g);
        char head[64];
        snprintf(head, sizeof head, "  %-13s %3d x %-3d%s", hp_group_name((hp_group_kind)g),
                 W / size, size, size == 1 ? " (size 1)" : "         ");
        fputs(head, stdout);
        int col = (int)strlen(head);
        memset(seen, 0, (size_t)W);
        int shown = 0;
        for (int rank = 0; rank < W; rank++) {
            if (seen[rank]) continue;
            if (shown++ == MAX_GROUPS && !all) {
                printf(" ... (%d groups in all)", W / size);
                break;
            }
            int n = hp_mesh_group(d, (hp_group_kind)g, rank, members, NULL);
            char buf[32];
            int len = 0;
            for (int i = 0; i < n; i++) seen[members[i]] = 1;
            // width of "{a,b,...}"
            for (int i = 0; i < n; i++) len += snprintf(buf, sizeof buf, "%d", members[i]) + 1;
            len += 1;
            if (col + 1 + len > 100 && col > (int)strlen(head)) {
                printf("\n%*s", (int)strlen(head), "");
                col = (int)strlen(head);
            }
            putchar(' ');
            putchar('{');
            for (int i = 0; i < n; i++) printf(i ? ",%d" : "%d", members[i]);
            putchar('}');
            col += 1 + len;
        }
        putchar('\n');
    }
    free(members);
    free(seen);
}

static const char *yes(int b) { return b ? "yes" : "no"; }

int tool_cmd_plan(int argc, char **argv) {
    tool_cli cli;
    int rc = tool_cli_parse(&cli, argc, argv, 2, NULL, plan_usage);
    if (rc < 0) return HP_EXIT_OK;   // --help
    if (rc) return rc;
    if (cli.n_rest > 0) {
        fprintf(stderr, "hp: plan takes no positional arguments, got '%s' (see hp plan --help)\n", cli.rest[0]);
        return HP_EXIT_CONFIG;
    }
    if (cli.plan_search) return tool_plan_search_cmd(&cli);
    if ((rc = tool_plan_check_flags(&cli)) != 0) return rc;

    hp_dims d = cli.dims;
    d.world = cli.nproc;
    char err[512];
    if (hp_dims_validate(&d, &cli.model, &cli.run, err, sizeof err) != 0) {
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    if (cli.run.ac_every > 0 && d.pp > 1 && d.pp_schedule == HP_PP_ZBV) {
        fprintf(stderr, "hp: --ac is not defined for --pp-schedule zbv: its W half would need the "
                "recomputed activations after the I half (docs/planner.md)\n");
        return HP_EXIT_CONFIG;
    }
    if (cli.rank < 0 || cli.rank >= d.world) {
        fprintf(stderr, "hp: --rank (%d) must be in [0, %d) (the world size)\n", cli.rank, d.world);
        return HP_EXIT_CONFIG;
    }
    hp_job_print_notes(&cli, stderr);   // a job file's TorchTitan-only keys at their defaults ...
    const int W = d.world, R = d.dp_replicate, S = d.dp_shard, C = d.cp, T = d.tp;
    const hp_model_config *m = &cli.model;
    const hp_run_config *run = &cli.run;

    char ac[32];
    tool_plan_ac_name(ac, sizeof ac, run->ac_every);
    printf("hp plan: model %s (%s), world %d, seq_len %d, global batch %d, activation checkpointing %s\n",
           m->name, m->num_experts ? "MoE" : "dense", W, run->seq_len, run->batch, ac);
    printf("\nlaunch\n  hp run --nproc %d", W);
    print_args(argc, argv);
    printf("\n  mpirun -np %d hp run", W);
    print_args(argc, argv);
    printf("\n");

    printf("\ndegrees\n");
    if (d.ulysses > 1) printf("  ulysses %d (mesh axis between dp_shard and cp)\n", d.ulysses);
    printf("  dp_replicate %d   dp_shard %d   cp %d   tp %d   pp %d   ep %d   etp %d   sp %s\n",
           R, S, C, T, d.pp, d.ep, d.etp, d.sp ? "on" : "off");
    printf("derived\n");
    printf("  %-46s %d\n", "fsdp   = dp_shard*ulysses*cp", hp_dims_fsdp(&d));
    printf("  %-46s %d\n", "efsdp  = dp_shard*ulysses*cp*tp/(ep*etp)", hp_dims_efsdp(&d));
    printf("  %-46s %d   (%d sequences per data shard)\n", "batch  = dp_replicate*dp_shard",
           hp_dims_batch(&d), run->batch / hp_dims_batch(&d));
    printf("  %-46s %d\n", "loss   = dp_replicate*dp_shard*ulysses*cp", hp_dims_loss(&d));
    if (d.ulysses > 1) {
        const int kv_t = m->n_kv_heads / d.tp, U = d.ulysses;
        printf("  %-46s %d of %d (tp-local), %d tokens each around it\n",
               "ulysses: query heads per rank in attention", m->n_heads / (d.tp * U),
               m->n_heads / d.tp, run->seq_len / C);
        printf("  %-46s %d per tp rank; kv replication factor %d -> %d per ulysses rank\n",
               "ulysses: kv heads", kv_t, hp_ulysses_kv_repeat(kv_t, U), hp_ulysses_kv_heads(kv_t, U));
    }
    printf("  %-46s %d   (%d tokens per cp rank)\n", "seq_len divisor = tp*(2*cp when cp > 1)",
           hp_dims_seq_len_divisor(&d), run->seq_len / C);
    printf("  %-46s %d\n", "expert tp (ways each expert's hidden splits)", hp_dims_expert_tp(&d));
    printf("  %-46s %d\n", "token split (tp slices in expert dispatch)", hp_dims_token_split(&d));
    if (m->num_experts)
        printf("  %-46s %d\n", "experts per ep rank = num_experts/ep", m->num_experts / d.ep);
    printf("  enabled: dp %s  dp_replicate %s  dp_shard %s  fsdp %s  cp %s  tp %s  sp %s  pp %s  ep %s  etp %s\n",
           yes(hp_dims_dp_enabled(&d)), yes(R > 1), yes(S > 1), yes(hp_dims_fsdp_enabled(&d)),
           yes(C > 1), yes(T > 1), yes(d.sp), yes(d.pp > 1), yes(d.ep > 1), yes(d.etp > 1));

    printf("\nmesh (row-major, last axis innermost)\n");
    printf("  dense   [pp, dp_replicate, dp_shard, ulysses, cp, tp] = [%d, %d, %d, %d, %d, %d]\n",
           d.pp, R, S, d.ulysses, C, T);
    printf("  sparse  [pp, dp_replicate, efsdp, ep, etp]   = [%d, %d, %d, %d, %d]\n", d.pp, R,
           hp_dims_efsdp(&d), d.ep, d.etp);
    tool_plan_print_pipeline(stdout, &d, m->n_layers, hp_run_microbatches(&cli.run));

    const int full = W <= TOOL_PLAN_SUMMARY_WORLD || cli.plan_ranks;
    printf("\nranks\n  %4s  %3s %3s %3s %3s %3s %3s   %5s %5s %5s   %5s %3s %3s\n",
           "rank", "p", "r", "s", "u", "c", "t", "fsdp", "batch", "loss", "efsdp", "ep", "etp");
    for (int rank = 0; rank < W && (cli.plan_ranks || rank < (full ? MAX_RANK_ROWS : 8)); rank++) {
        hp_coords co;
        hp_mesh_coords(&d, rank, &co);
        printf("  %4d  %3d %3d %3d %3d %3d %3d   %5d %5d %5d   %5d %3d %3d\n", rank, co.p, co.r, co.s,
               co.u, co.c, co.t, co.fsdp, co.batch, co.loss, co.efsdp, co.ep, co.etp);
    }
    if (!cli.plan_ranks && W > (full ? MAX_RANK_ROWS : 8))
        printf("  ... (%d ranks in all; --ranks prints every one, --rank K one rank's shapes)\n", W);
    printf("\n");
    if (full) print_groups(&d, cli.plan_ranks);
    else tool_plan_print_group_strides(stdout, &d, tool_plan_ranks_per_node(&cli));
    if (cli.ranks_per_node) tool_plan_print_node_groups(stdout, &d, cli.ranks_per_node);

    printf("\n");
    hp_param_table t;
    if (hp_params_build(&t, m, &d, cli.rank) != 0) {
        fprintf(stderr, "hp: cannot build the parameter table of rank %d (out of memory)\n", cli.rank);
        return HP_EXIT_FAIL;
    }
    hp_params_print(stdout, &t, &d, cli.rank, cli.plan_params_all);
    hp_params_free(&t);
    if (cli.plan_memory || cli.json_out) return tool_plan_memory_cmd(&cli, &d);
    return HP_EXIT_OK;
}
