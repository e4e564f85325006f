// main.c - `hp`: one binary, one subcommand per job (plan, run, matrix, bench).
// defines: main
//
// Each subcommand gets the whole argv (argv[1] is its name) and parses from argv[2] with
// hp_cli_parse(cli, argc, argv, 2, ...), so hp_launch_self can re-run the same command line.
// MPI is the subcommand's business: plan never initialises it; run/matrix/bench do (or launch).
#include <stdio.h>
#include <string.h>
#include "cli.h"

#define HP_VERSION "0.1"

static void usage(FILE *out) {
    fputs("usage: hp <command> [flags]\n"
          "\n"
          "N-D parallel (DDP, FSDP2, HSDP, TP, SP, CP, EP, ETP) training of Llama-style dense and MoE\n"
          "transformers over MPI, checked against a single-process reference.\n"
          "\n"
          "commands:\n"
          "  plan     validate the degrees and print the mesh, groups and parameter placement (no MPI)\n"
          "  run      train (launches itself under mpirun with --nproc N); --verify compares to the reference\n"
          "  matrix   run the completeness matrix of recipes and write a report\n"
          "  bench    measure step time and bytes moved per recipe\n"
          "\n"
          "  hp <command> --help   flags of one command\n"
          "  hp --version          the version\n",
          out);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return HP_EXIT_CONFIG;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return HP_EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("hp (hyperpar) %s\n", HP_VERSION);
        return HP_EXIT_OK;
    }
    if (!strcmp(cmd, "plan"))   return hp_cmd_plan(argc, argv);
    if (!strcmp(cmd, "run"))    return hp_cmd_run(argc, argv);
    if (!strcmp(cmd, "matrix")) return hp_cmd_matrix(argc, argv);
    if (!strcmp(cmd, "bench"))  return hp_cmd_bench(argc, argv);
    if (!strcmp(cmd, "export")) return hp_cmd_export(argc, argv);   // checkpoint -> one safetensors file
    fprintf(stderr, "hp: unknown command '%s' (commands: plan, run, matrix, bench; see hp --help)\n", cmd);
    return HP_EXIT_CONFIG;
}
