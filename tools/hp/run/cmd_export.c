// cmd_export.c - `hp export`: a distributed checkpoint (any layout) consolidated into one
// safetensors file of full tensors under TorchTitan names, which `hp run --load` and any
// safetensors reader load. No MPI.
//
//   hp export ck/step-6 --out model.safetensors              # parameters
//   hp export ck --out model.safetensors --optimizer         # ck's latest, + AdamW moments
//   hp export ck --out model-bf16.safetensors --export-dtype bfloat16   # 2 bytes a parameter
//   hp export ck --format hf --out tiny-hf           # a folder transformers loads
//   hp export ck --format gguf --out tiny.gguf --export-dtype float16   # a file llama.cpp runs
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "hyperpar/checkpoint.h"
#include "hyperpar/gguf.h"
#include "hyperpar/hf.h"

static const char *const export_usage =
    "usage: hp export D/step-K --out OUT [--format hp|hf|gguf] [--optimizer]\n"
    "                 [--export-dtype float32|bfloat16|float16]\n"
    "\n"
    "Writes the checkpoint D/step-K (or D's latest) as full tensors. Every file's CRC32 is\n"
    "checked first.\n"
    "  --out OUT     the file (hp, gguf) or folder (hf) to write (required)\n"
    "  --format F    hp: one safetensors file, TorchTitan names: what `hp run --load FILE`\n"
    "                reads (default); hf: a Hugging Face Llama folder (config.json,\n"
    "                generation_config.json, model.safetensors, sharded past 5 GB; q and k\n"
    "                permuted to HF's rotate-half RoPE) that transformers and `hp run --load\n"
    "                DIR` read; gguf: a GGUF file for llama.cpp (the norms stay F32; a byte\n"
    "                vocabulary for a 256-token model). Dense models only for hf and gguf\n"
    "  --optimizer   (hp) add AdamW's moments: optimizer.state.<name>.exp_avg, .exp_avg_sq\n"
    "  --export-dtype DTYPE\n"
    "                float32 | bfloat16 (| float16 for gguf): the weights' dtype (TorchTitan's\n"
    "                checkpoint.export_dtype); a cast is RNE of the fp32 master (default\n"
    "                float32)\n"
    "\n";

int tool_cmd_export(int argc, char **argv) {
    const char *out = NULL, *src = NULL, *dtype_arg = NULL, *format = "hp";
    int with_opt = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(export_usage, stdout); return HP_EXIT_OK; }
        if (!strcmp(a, "--optimizer")) { with_opt = 1; continue; }
        if (!strcmp(a, "--out")) {
            if (i + 1 >= argc) { fprintf(stderr, "hp: --out expects a value\n"); return HP_EXIT_CONFIG; }
            out = argv[++i];
            continue;
        }
        if (!strncmp(a, "--out=", 6)) { out = a + 6; continue; }
        if (!strcmp(a, "--export-dtype")) {
            if (i + 1 >= argc) { fprintf(stderr, "hp: --export-dtype expects a value\n"); return HP_EXIT_CONFIG; }
            dtype_arg = argv[++i];
            continue;
        }
        if (!strncmp(a, "--export-dtype=", 15)) { dtype_arg = a + 15; continue; }
        if (!strcmp(a, "--format")) {
            if (i + 1 >= argc) { fprintf(stderr, "hp: --format expects a value (hp, hf or gguf)\n"); return HP_EXIT_CONFIG; }
            format = argv[++i];
            continue;
        }
        if (!strncmp(a, "--format=", 9)) { format = a + 9; continue; }
        if (a[0] == '-') { fprintf(stderr, "hp: unknown flag '%s' (see hp export --help)\n", a); return HP_EXIT_CONFIG; }
        if (src) { fprintf(stderr, "hp export: unexpected argument '%s' (one checkpoint)\n", a); return HP_EXIT_CONFIG; }
        src = a;
    }
    if (!src || !out) {
        fprintf(stderr, "hp export: needs a checkpoint and --out FILE (hp export D/step-K --out FILE)\n");
        return HP_EXIT_CONFIG;
    }
    const int hf = !strcmp(format, "hf"), gguf = !strcmp(format, "gguf");
    if (!hf && !gguf && strcmp(format, "hp")) {
        fprintf(stderr, "hp export: --format %s: not hp, hf or gguf\n", format);
        return HP_EXIT_CONFIG;
    }
    if (with_opt && (hf || gguf)) {
        fprintf(stderr, "hp export: --optimizer is for --format hp (a %s export holds the model only)\n", format);
        return HP_EXIT_CONFIG;
    }
    char dir[4096], err[4600];
    hp_mp_dtype dtype = HP_DTYPE_FLOAT32;
    const int f16 = gguf && dtype_arg && !strcmp(dtype_arg, "float16");
    if (dtype_arg && !f16 && hp_mp_dtype_parse("--export-dtype", dtype_arg, &dtype, err, sizeof err) != 0) {
        fprintf(stderr, "hp: %s%s\n", err, gguf ? " (or float16, for gguf)" : "");
        return HP_EXIT_CONFIG;
    }
    int e = hp_ckpt_resolve(src, dir, sizeof dir, err, sizeof err);
    if (e == 0 && (hf || gguf)) {   // the consolidated model first, then its layout
        hp_model_config m;
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.hp-export-%d.safetensors", out, (int)getpid());
        if ((e = hp_ckpt_model(dir, &m, err, sizeof err)) == 0 &&
            (e = hp_ckpt_export(dir, tmp, 0, HP_DTYPE_FLOAT32, err, sizeof err)) == 0)
            e = hf ? hp_hf_export(tmp, &m, out, dtype, 0, -1, -1, err, sizeof err)
                   : hp_gguf_export(tmp, &m, out, f16 ? HP_GGUF_F16 : dtype == HP_DTYPE_BFLOAT16 ? HP_GGUF_BF16
                                    : HP_GGUF_F32, NULL, err, sizeof err);
        unlink(tmp);
    } else if (e == 0) {
        e = hp_ckpt_export(dir, out, with_opt, dtype, err, sizeof err);
    }
    if (e != 0) {
        fprintf(stderr, "hp export: %s\n", err);
        return e;
    }
    return HP_EXIT_OK;
}
