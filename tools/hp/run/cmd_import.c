// cmd_import.c - `hp import`: a llama-architecture GGUF (llama.cpp's file, any of the types
// hp_gguf_dequantize reads) as a Hugging Face Llama folder, which `hp run --load DIR`,
// `hp eval --load DIR`, `hp generate --load DIR` and transformers read. No MPI.
//
//   hp import SmolLM2-135M-Instruct.Q4_1.gguf --out smol          # float32 weights
//   hp import model.gguf --out model-hf --dtype bf16
//
// HP_GGUF_IMPORT_BUG=q4_1_no_min|qk_order injects a wrong import (Q4_1 without its min; q and k
// read as if in HF's order), for the outside check to prove it catches one.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "hyperpar/gguf.h"

static const char *const import_usage =
    "usage: hp import FILE.gguf --out DIR [--dtype f32|bf16]\n"
    "\n"
    "Writes the llama-architecture GGUF FILE as a Hugging Face Llama folder: config.json from\n"
    "the llama.* keys, generation_config.json, model.safetensors (q and k permuted to HF's\n"
    "rotate-half order). Every tensor is dequantised to float32 first: F32, F16, BF16, Q4_0,\n"
    "Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K (another type is refused by name). Without\n"
    "output.weight (tied embeddings) lm_head is a copy of the embedding: hp has no tying.\n"
    "The tokenizer is not converted.\n"
    "  --out DIR     the folder to write (required; made if missing)\n"
    "  --dtype D     f32 | bf16: the folder's weights (bf16: RNE of the dequantised float32;\n"
    "                default f32)\n"
    "\n";

int tool_cmd_import(int argc, char **argv) {
    const char *src = NULL, *out = NULL, *dtype_arg = "f32";
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(import_usage, stdout); return HP_EXIT_OK; }
        const int out_flag = !strcmp(a, "--out"), dtype_flag = !strcmp(a, "--dtype");
        if (out_flag || dtype_flag) {
            if (i + 1 >= argc) { fprintf(stderr, "hp: %s expects a value\n", a); return HP_EXIT_CONFIG; }
            if (out_flag) out = argv[++i]; else dtype_arg = argv[++i];
            continue;
        }
        if (!strncmp(a, "--out=", 6)) { out = a + 6; continue; }
        if (!strncmp(a, "--dtype=", 8)) { dtype_arg = a + 8; continue; }
        if (a[0] == '-') { fprintf(stderr, "hp: unknown flag '%s' (see hp import --help)\n", a); return HP_EXIT_CONFIG; }
        if (src) { fprintf(stderr, "hp import: unexpected argument '%s' (one GGUF file)\n", a); return HP_EXIT_CONFIG; }
        src = a;
    }
    if (!src || !out) {
        fprintf(stderr, "hp import: needs a GGUF file and --out DIR (hp import FILE.gguf --out DIR)\n");
        return HP_EXIT_CONFIG;
    }
    hp_mp_dtype dtype;
    if (!strcmp(dtype_arg, "f32") || !strcmp(dtype_arg, "float32")) dtype = HP_DTYPE_FLOAT32;
    else if (!strcmp(dtype_arg, "bf16") || !strcmp(dtype_arg, "bfloat16")) dtype = HP_DTYPE_BFLOAT16;
    else { fprintf(stderr, "hp import: --dtype %s: not f32 or bf16\n", dtype_arg); return HP_EXIT_CONFIG; }
    int flags = 0;
    const char *bug = getenv("HP_GGUF_IMPORT_BUG");
    if (bug && *bug) {
        if (!strcmp(bug, "q4_1_no_min")) flags = HP_GGUF_BUG_Q4_1_NO_MIN;
        else if (!strcmp(bug, "qk_order")) flags = HP_GGUF_BUG_QK_ORDER;
        else { fprintf(stderr, "hp import: HP_GGUF_IMPORT_BUG=%s: not q4_1_no_min or qk_order\n", bug); return HP_EXIT_CONFIG; }
        fprintf(stderr, "hp import: injecting the bug %s (HP_GGUF_IMPORT_BUG)\n", bug);
    }
    char err[1024], note[1024];
    const int rc = hp_gguf_import(src, out, dtype, flags, note, sizeof note, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "hp import: %s\n", err);
        return rc;
    }
    if (note[0]) printf("hp import: note: %s\n", note);
    printf("hp import: %s -> %s (config.json, generation_config.json, model.safetensors, %s)\n", src, out,
           dtype == HP_DTYPE_BFLOAT16 ? "bf16" : "f32");
    return HP_EXIT_OK;
}
