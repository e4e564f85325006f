// main.c - `hp`: one binary, one subcommand per job (plan, run, matrix, bench).
// defines: main
//
// Each subcommand gets the whole argv (argv[1] is its name) and parses from argv[2] with
// tool_cli_parse(cli, argc, argv, 2, ...), so tool_launch_self can re-run the same command line.
// MPI is the subcommand's business: plan never initialises it; run/matrix/bench do (or launch).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "hyperpar/blas.h"
#include "hyperpar/cpu.h"
#include "kernels/gemm.h"
#include "run/gemm_choice.h"

static void usage(FILE *out) {
    fputs("usage: hp <command> [flags]\n"
          "\n"
          "N-D parallel (DDP, FSDP2, HSDP, TP, SP, CP ring, Ulysses, EP, ETP, PP, gradient accumulation)\n"
          "training of Llama-style dense and MoE transformers over MPI, checked against a single-process\n"
          "reference; distributed checkpoints that reshard; a planner for real models.\n"
          "\n"
          "commands:\n"
          "  plan     validate the degrees and print the mesh, groups, placement, pipeline schedule;\n"
          "           --memory / --json / --search: memory, traffic and layouts for real models (no MPI)\n"
          "  run      train (launches itself under mpiexec with --nproc N); --verify compares to the\n"
          "           reference; --checkpoint-dir / --resume save and resume under any layout\n"
          "  export   a checkpoint's full model: hp's file, a Hugging Face folder (--format hf), GGUF\n"
          "  import   a llama.cpp GGUF (F32..Q4_1, K-quants) as a Hugging Face folder hp and transformers load\n"
          "  matrix   run the completeness matrix (recipes, negative cases, faults) and write a report\n"
          "  bench    measure step time, the BLAS core and the FMA peak, bytes moved per recipe\n"
          "  compare  two dumps of step 1 (hp run --dump, PyTorch, ...) under the verifier's rules\n"
          "  eval     a model's loss, perplexity and bits per byte on a dataset, under any layout\n"
          "  generate the model writes from a prompt (a KV cache; greedy, temperature, top-k, top-p),\n"
          "           on one process or under --tp / --pp\n"
          "  tokenize train a SentencePiece tokenizer on your text and write it as llm.c token shards\n"
          "\n"
          "  hp <command> --help   flags of one command\n"
          "  hp --version          the version, and the BLAS, core and threads a process gets here\n",
          out);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return HP_EXIT_CONFIG;
    }
    char cpu_err[160];   // a bad cap is refused before any command does work
    if (hp_cpu_isa_check(cpu_err, sizeof cpu_err)) {
        fprintf(stderr, "hp: %s\n", cpu_err);
        return HP_EXIT_CONFIG;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return HP_EXIT_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        // the kernels a run would get: scripts ask this instead of assuming the CPU
        tool_reexec(argv);
        hp_blas_info b;
        hp_blas_info_get(&b);
        char line[256];
        printf("hp (hyperpar) %s\n", HP_VERSION);
        const char *cap = hp_cpu_isa_cap_name();   // what hp's kernels may use here
        if (cap) printf("cpu: %s (capped: HP_CPU_ISA=%s)\n", hp_cpu_isa_name(hp_cpu_isa_widest()), cap);
        else printf("cpu: %s\n", hp_cpu_isa_name(hp_cpu_isa_widest()));
        printf("blas: %s\n", hp_blas_info_line(line, sizeof line));
        printf("blas core: %s\n", b.core);   // for scripts: the kernels a process gets here
        printf("blas best core for this cpu: %s\n", *b.cpu_best ? b.cpu_best : "none");
        // both GEMM backends (--gemm), and which one a run takes without the flag
        const char *env = getenv("HP_GEMM");
        if (env && *env) {
            printf("gemm default: %s (HP_GEMM)\n", env);
        } else {   // a rule of the step's size and precision (hp_gemm_default_backend)
            char fp32[200], bf16[200];
            hp_gemm_default_backend(0, HP_GEMM_DEFAULT_MIN_STEP_FLOP, fp32, sizeof fp32);
            hp_gemm_default_backend(1, HP_GEMM_DEFAULT_MIN_STEP_FLOP, bf16, sizeof bf16);
            printf("gemm default: openblas for a step below %.0f GFLOP; above, fp32 %s; bf16 %s\n",
                   HP_GEMM_DEFAULT_MIN_STEP_FLOP * 1e-9, fp32, bf16);
        }
        for (int k = 0; k < 2; k++) {
            hp_gemm_set_backend(k ? HP_GEMM_ONEDNN : HP_GEMM_OPENBLAS);
            printf("%s\n", hp_gemm_info_line(line, sizeof line));
        }
        // for scripts and tests: which products oneDNN has here (they skip what it lacks)
        printf("gemm onednn bf16 matmul: %s\n", hp_gemm_backend_supports(HP_GEMM_ONEDNN, 1)
                   ? "yes" : "no (oneDNN has it from avx512_core on)");
        return HP_EXIT_OK;
    }
    if (!strcmp(cmd, "plan"))   return tool_cmd_plan(argc, argv);
    if (!strcmp(cmd, "run"))    return tool_cmd_run(argc, argv);
    if (!strcmp(cmd, "eval"))   return tool_cmd_eval(argc, argv);     // a model's loss on a dataset
    if (!strcmp(cmd, "generate")) return tool_cmd_generate(argc, argv); // a model writes (cmd_generate.c)
    if (!strcmp(cmd, "matrix")) return tool_cmd_matrix(argc, argv);
    if (!strcmp(cmd, "bench"))  return tool_cmd_bench(argc, argv);
    if (!strcmp(cmd, "export")) return tool_cmd_export(argc, argv);   // checkpoint -> one safetensors file
    if (!strcmp(cmd, "compare")) return tool_cmd_compare(argc, argv); // two dumps of step 1 (docs/dump.md)
    if (!strcmp(cmd, "tokenize")) return tool_cmd_tokenize(argc, argv); // text -> tokenizer + shards
    if (!strcmp(cmd, "import")) return tool_cmd_import(argc, argv);   // GGUF -> HF folder (cmd_import.c)
    fprintf(stderr, "hp: unknown command '%s' (commands: plan, run, eval, generate, export, import, tokenize, matrix, bench, compare; see hp --help)\n", cmd);
    return HP_EXIT_CONFIG;
}
