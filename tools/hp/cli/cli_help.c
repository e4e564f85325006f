// cli_help.c - the help text of the flags every `hp` subcommand shares (cli.h).
// defines: tool_cli_print_common_help
#include <stdio.h>
#include <string.h>
#include "cli.h"

// The --model line, from the library's table of named configs (config.h), so that it cannot
// miss one; wrapped under its own column.
static void print_model_names(FILE *out) {
    int col = fprintf(out, "  --model NAME       ");
    for (int i = 0; hp_model_config_names[i]; i++) {
        const char *name = hp_model_config_names[i], *sep = i ? " | " : "";
        if (i && col + (int)(strlen(sep) + strlen(name)) > 96) {   // wrap: " |" ends the line
            fputs(" |\n", out);
            col = fprintf(out, "%21s", "");
            sep = "";
        }
        col += fprintf(out, "%s%s", sep, name);
    }
    fputs("\n                     (default tiny; the published shapes are for plan: run's memory\n"
          "                     check refuses them)\n", out);
}

void tool_cli_print_common_help(FILE *out) {
    fputs(
        "parallel degrees (world = dp_replicate*dp_shard*ulysses*cp*tp*pp; ep and etp re-use those\n"
        "ranks):\n"
        "  --dp-replicate N   HSDP replication / DDP degree (default 1)\n"
        "  --dp-shard N       FSDP shard degree; -1 = world / (dp_replicate*cp*tp*pp) (default -1)\n"
        "  --ulysses N        Ulysses sequence parallel degree: heads <-> tokens all-to-all\n"
        "                     around attention; between dp_shard and cp in the mesh (default 1)\n"
        "  --cp N             context parallel degree (default 1)\n"
        "  --tp N             tensor parallel degree (default 1)\n"
        "  --pp N             pipeline parallel degree, outermost (default 1)\n"
        "  --pp-schedule S    gpipe | 1f1b | interleaved-1f1b | zbv (default 1f1b)\n"
        "  --pp-microbatches M  microbatches per step under pp (default 1)\n"
        "  --pp-virtual V     stages per pp rank (default 1; 2 for interleaved-1f1b and zbv)\n"
        "  --ep N             expert parallel degree; divides dp_shard*cp*tp (default 1)\n"
        "  --etp N            expert tensor parallel degree: 1 or tp, needs ep > 1 (default 1)\n"
        "  --no-sp / --sp     sequence parallel off / on (default: on iff tp > 1)\n"
        "model and run:\n",
        out);
    print_model_names(out);
    fputs(
        "  --model-config F   the model of a Hugging Face config.json (instead of --model)\n"
        "  --layers N         the model's blocks, deeper or shallower (model.n_layers; default: the\n"
        "                     model's own)\n"
        "  --seq-len N        tokens per sequence (default 32)\n"
        "  --batch N          global batch, in sequences (default 8)\n"
        "  --seed N           seed of init and synthetic data (default 1234)\n"
        "  --steps N          optimiser steps (default 1)\n"
        "  --optimizer NAME   sgd | adamw (default sgd)\n"
        "  --lr X             learning rate (default 0.01)\n"
        "  --max-norm X       clip the global grad norm to X; 0 = off (default 0)\n"
        "  --optimizer.beta1 B, --optimizer.beta2 B, --optimizer.eps E, --optimizer.weight_decay W\n"
        "                     AdamW as torch.optim.AdamW (default 0.9, 0.95, 1e-8, 0.1)\n"
        "  --lr_scheduler.warmup_steps W  --lr_scheduler.decay_ratio R  --lr_scheduler.decay_type T\n"
        "  --lr_scheduler.min_lr_factor M  --lr_scheduler.total_steps N\n"
        "                     TorchTitan's schedule: W linear warmup steps, then stable, then a\n"
        "                     linear | sqrt | cosine decay over round(N*R) steps (R -1: from warmup)\n"
        "                     to lr*M; N = -1: --steps (default 0, 0, linear, 0, -1: a constant lr)\n"
        "  --microbatches M   gradient accumulation: M microbatches per step, grads reduced once\n"
        "                     (M divides batch/(dp_replicate*dp_shard); default 1)\n"
        "  --data FILE        train on FILE: an llm.c shard, a Megatron PREFIX, a glob of shards,\n"
        "                     or a headerless file's bytes (default: synthetic tokens; docs/data.md)\n"
        "  --training.dataset_path FILE  the same, but a headerless file needs a format:\n"
        "  --training.dataset_format F   auto | llmc | megatron | uint16 | uint32 | bytes | auto_bytes\n"
        "                     (auto_bytes: a header's format, else bytes, what --data reads; default auto)\n"
        "  --cp-rotate NAME   allgather | ring (TorchTitan: alltoall; default allgather)\n"
        "  --cp-no-balance    contiguous CP split instead of head-tail chunks\n"
        "  --dispatcher NAME  alltoall | allgather expert dispatch (default alltoall)\n"
        "  --ac MODE          activation checkpointing: none | full | every:N (block l when\n"
        "                     (l+1) % N == 0; docs/planner.md; default none)\n"
        "  --reshard-after-forward POLICY\n"
        "                     FSDP units after their forward: default (pp: kept for the step;\n"
        "                     else [norm, output] kept to its backward, others freed) | always\n"
        "                     (freed, gathered again; pp 1) | never (kept to their backward)\n"
        "  --mixed-precision-param DTYPE\n"
        "                     float32 | bfloat16: FSDP2's policy on every layout (fp32 master and\n"
        "                     optimizer, bf16 all-gather, ops and local grads; default float32)\n"
        "  --mixed-precision-reduce DTYPE\n"
        "                     float32 | bfloat16: the gradient reduction and accumulation\n"
        "                     (bfloat16 needs bfloat16 params; default float32)\n"
        "  --float8 RECIPE    tensorwise | rowwise | rowwise-gw-hp | off: torchao's float8 linears,\n"
        "                     emulated (docs/float8.md; default off)\n"
        "  --float8-filter LIST\n"
        "                     linears whose name contains one of these stay in the param dtype\n"
        "                     (TorchTitan's filter_fqns; output and router.gate always do)\n"
        "  --float8-fsdp-all-gather\n"
        "                     tensorwise: weight shards cast to e4m3 with the fsdp-wide amax,\n"
        "                     1 byte an element all-gathered (torchao's enable_fsdp_float8_all_gather)\n"
        "  --async-tp         overlap each SP all-gather / reduce-scatter with its GEMMs (tp > 1,\n"
        "                     SP on; bitwise the plain path; docs/async_tp.md)\n"
        "launch and output:\n"
        "  --nproc N          ranks to launch (plan: the world; default: the product of degrees)\n"
        "  --rank N           plan: the rank whose local shapes are shown (default 0)\n"
        "  --verify           compare with the single-process reference\n"
        "  --verify-steps N   length of the compared loss trajectory (default: --steps N when\n"
        "                     given on the command line, else 5; the two differing: refused)\n"
        "  --dump DIR         write tensors to DIR\n"
        "  --load FILE        load parameters from a safetensors FILE (checkpoint.initial_load_path)\n"
        "  --json FILE        write the machine-readable result to FILE\n"
        "  --quiet            print less\n"
        "  --list-failpoints  run: list the fault-injection points of HP_FAILPOINT=name[,name]\n"
        "  --timeout S        watchdog: a collective waiting longer than S seconds aborts the job\n"
        "                     (default: environment HP_TIMEOUT, else 600)\n"
        "checkpoints (run; docs/checkpoints.md):\n"
        "  --checkpoint-dir D    save D/step-K every --checkpoint-every steps and after the last\n"
        "                        (checkpoint.enable + checkpoint.folder D)\n"
        "  --checkpoint-every N  steps between saves (default 500; 0: after the last step only)\n"
        "  --checkpoint-keep K   keep the newest K step folders (default 10; 0: all)\n"
        "  --resume D            continue from D's latest checkpoint (or D/step-K), any layout;\n"
        "                        --steps stays the step to train up to\n"
        "metrics and validation (run; docs/metrics.md):\n"
        "  --job.dump_folder D        write D/metrics.jsonl and D/loss.svg (default: none)\n"
        "  --metrics.log_freq N       the step line every N steps, and at steps 1 and last (default 1)\n"
        "  --metrics.peak_tflops X    one rank's peak for mfu; 0 = this machine's fp32 FMA peak, measured\n"
        "                     once and kept in ~/.cache/hyperpar/fma_peak (docs/metrics.md; default 0)\n"
        "  --validation.enable        a validation round every --validation.freq steps and after the last\n"
        "  --validation.dataset_path F  the held-out set (default: the training data)\n"
        "  --validation.dataset_format F  its format, as --training.dataset_format (default \"\": the\n"
        "                     training data's, auto_bytes for auto)\n"
        "  --validation.freq N        steps between rounds (default 10)\n"
        "  --validation.steps N       batches a round, always the first ones; -1 = every full batch (default)\n"
        "job file (docs/job_file.md):\n"
        "  --config FILE      apply a TorchTitan TOML job file first (= --job.config_file FILE);\n"
        "                     the command line overrides it\n"
        "  --section.key V    every job key is a flag too (--training.steps 10, --job.print_config,\n"
        "                     --checkpoint.no_initial_load_model_only); each flag above that sets a\n"
        "                     job key is its alias, and a key given twice is an error\n"
        "  --help-config      every job key: type, hp's default, TorchTitan's, its alias flags\n"
        "  -h, --help         this help\n",
        out);
}
