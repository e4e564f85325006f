// cmd_export.c - `hp export`: a distributed checkpoint (any layout) consolidated into one
// safetensors file of full tensors under TorchTitan names, which `hp run --load` and any
// safetensors reader load. No MPI.
//
//   hp export ck/step-6 --out model.safetensors              # parameters
//   hp export ck --out model.safetensors --optimizer         # ck's latest, + AdamW moments
//   hp export ck --out model-bf16.safetensors --export-dtype bfloat16   # 2 bytes a parameter
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "hyperpar/checkpoint.h"

static const char *const export_usage =
    "usage: hp export D/step-K --out FILE [--optimizer] [--export-dtype float32|bfloat16]\n"
    "\n"
    "Writes the checkpoint D/step-K (or D's latest) as full tensors, TorchTitan names, to FILE:\n"
    "what `hp run --load FILE` reads. Every file's CRC32 is checked first.\n"
    "  --out FILE    the safetensors file to write (required)\n"
    "  --optimizer   add AdamW's moments: optimizer.state.<name>.exp_avg and .exp_avg_sq (F32)\n"
    "  --export-dtype DTYPE\n"
    "                float32 | bfloat16: the parameters' dtype (TorchTitan's\n"
    "                checkpoint.export_dtype); bfloat16 is the RNE cast of the fp32 master\n"
    "                (default float32)\n"
    "\n";

int tool_cmd_export(int argc, char **argv) {
    const char *out = NULL, *src = NULL, *dtype_arg = NULL;
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
        if (a[0] == '-') { fprintf(stderr, "hp: unknown flag '%s' (see hp export --help)\n", a); return HP_EXIT_CONFIG; }
        if (src) { fprintf(stderr, "hp export: unexpected argument '%s' (one checkpoint)\n", a); return HP_EXIT_CONFIG; }
        src = a;
    }
    if (!src || !out) {
        fprintf(stderr, "hp export: needs a checkpoint and --out FILE (hp export D/step-K --out FILE)\n");
        return HP_EXIT_CONFIG;
    }
    char dir[4096], err[4600];
    hp_mp_dtype dtype = HP_DTYPE_FLOAT32;
    if (dtype_arg && hp_mp_dtype_parse("--export-dtype", dtype_arg, &dtype, err, sizeof err) != 0) {
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    int e = hp_ckpt_resolve(src, dir, sizeof dir, err, sizeof err);
    if (e == 0) e = hp_ckpt_export(dir, out, with_opt, dtype, err, sizeof err);
    if (e != 0) {
        fprintf(stderr, "hp export: %s\n", err);
        return e;
    }
    return HP_EXIT_OK;
}
