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
#include "util/file_io.h"
#include "hyperpar/checkpoint.h"
#include "hyperpar/gguf.h"
#include "hyperpar/hf.h"
#include "hyperpar/tokenizer.h"

static const char *const export_usage =
    "usage: hp export D/step-K --out OUT [--format hp|hf|gguf] [--optimizer]\n"
    "                 [--export-dtype float32|bfloat16|float16] [--tokenizer PATH]\n"
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
    "  --tokenizer PATH  the run's tokenizer.model (or its folder; hp tokenize writes one): hf\n"
    "                copies it into the folder with a tokenizer_config.json and names its <s>\n"
    "                </s> in config.json and generation_config.json; gguf writes its pieces,\n"
    "                scores and types and its <s> </s> <unk> (tokenizer.ggml.*), padded with\n"
    "                unused pieces up to the model's vocab_size\n"
    "\n";

// The tokenizer beside an HF folder: out/tokenizer.model (a byte copy) and a
// tokenizer_config.json naming transformers' LlamaTokenizer and the specials (<s> added before
// a text, </s> not), what AutoTokenizer.from_pretrained(out) reads.
static int hf_tokenizer_files(const hp_tokenizer *tk, const char *out, char *err, size_t errlen) {
    unsigned char *bytes = NULL;
    size_t len = 0;
    const char *why = NULL;
    char path[4200];
    if (hp_file_read(hp_tokenizer_file(tk), &bytes, &len, &why) != 0) {
        snprintf(err, errlen, "--tokenizer: %s: %s", hp_tokenizer_file(tk), why);
        return HP_EXIT_FAIL;
    }
    snprintf(path, sizeof path, "%s/tokenizer.model", out);
    FILE *f = fopen(path, "wb");
    int bad = !f || fwrite(bytes, 1, len, f) != len;
    if (f && fclose(f) != 0) bad = 1;
    free(bytes);
    if (!bad) {
        snprintf(path, sizeof path, "%s/tokenizer_config.json", out);
        const int unk = hp_tokenizer_unk(tk), bos = hp_tokenizer_bos(tk), eos = hp_tokenizer_eos(tk);
        f = fopen(path, "w");
        bad = !f;
        if (f) {
            fprintf(f, "{\n  \"tokenizer_class\": \"LlamaTokenizer\",\n  \"model_max_length\": 2048,\n"
                       "  \"add_bos_token\": true,\n  \"add_eos_token\": false,\n  \"legacy\": true,\n");
            fprintf(f, "  \"unk_token\": \"%s\",\n  \"bos_token\": \"%s\",\n  \"eos_token\": \"%s\"\n}\n",
                    unk >= 0 ? hp_tokenizer_piece(tk, unk) : "<unk>", bos >= 0 ? hp_tokenizer_piece(tk, bos) : "<s>",
                    eos >= 0 ? hp_tokenizer_piece(tk, eos) : "</s>");
            if (fclose(f) != 0) bad = 1;
        }
    }
    if (bad) { snprintf(err, errlen, "cannot write %s", path); return HP_EXIT_FAIL; }
    return 0;
}

// GGUF with the tokenizer's vocabulary (or the byte one without it): its pieces, then unused
// pieces "<pad_N>" (type 5) up to the model's vocab_size, which llama.cpp never produces from text.
static int gguf_with_vocab(const char *tmp, const hp_model_config *m, const char *out, hp_gguf_dtype dtype,
                           const hp_tokenizer *tk, char *err, size_t errlen) {
    if (!tk) return hp_gguf_export(tmp, m, out, dtype, NULL, err, errlen);
    const int V = m->vocab_size, n = hp_tokenizer_vocab_size(tk);
    const char **pieces = calloc((size_t)V, sizeof *pieces);
    char **pads = calloc((size_t)V, sizeof *pads);
    float *scores = calloc((size_t)V, sizeof *scores);
    int *types = calloc((size_t)V, sizeof *types);
    int e = pieces && pads && scores && types ? 0 : HP_EXIT_FAIL;
    for (int i = 0; i < V && !e; i++) {
        if (i < n) {
            pieces[i] = hp_tokenizer_piece(tk, i);
            scores[i] = hp_tokenizer_score(tk, i);
            types[i] = hp_tokenizer_piece_type(tk, i);
        } else {
            if (!(pads[i] = malloc(24))) { e = HP_EXIT_FAIL; break; }
            snprintf(pads[i], 24, "<pad_%d>", i);
            pieces[i] = pads[i];
            scores[i] = -1e9f;
            types[i] = 5;
        }
    }
    if (e) snprintf(err, errlen, "out of memory for a vocabulary of %d pieces", V);
    else {
        const hp_gguf_vocab vocab = { V, pieces, scores, types, hp_tokenizer_bos(tk), hp_tokenizer_eos(tk),
                                      hp_tokenizer_unk(tk) };
        e = hp_gguf_export(tmp, m, out, dtype, &vocab, err, errlen);
    }
    for (int i = 0; pads && i < V; i++) free(pads[i]);
    free(pads); free(pieces); free(scores); free(types);
    return e;
}

int tool_cmd_export(int argc, char **argv) {
    const char *out = NULL, *src = NULL, *dtype_arg = NULL, *format = "hp", *tok_path = NULL;
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
        if (!strcmp(a, "--tokenizer")) {
            if (i + 1 >= argc) { fprintf(stderr, "hp: --tokenizer expects a value\n"); return HP_EXIT_CONFIG; }
            tok_path = argv[++i];
            continue;
        }
        if (!strncmp(a, "--tokenizer=", 12)) { tok_path = a + 12; continue; }
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
    if (tok_path && !hf && !gguf) {
        fprintf(stderr, "hp export: --tokenizer is for --format hf or gguf (an hp file holds the model only)\n");
        return HP_EXIT_CONFIG;
    }
    hp_tokenizer *tk = NULL;
    if (tok_path && !(tk = hp_tokenizer_load(tok_path, err, sizeof err))) {
        fprintf(stderr, "hp export: --tokenizer: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    int e = hp_ckpt_resolve(src, dir, sizeof dir, err, sizeof err);
    if (e == 0 && (hf || gguf)) {   // the consolidated model first, then its layout
        hp_model_config m;
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.hp-export-%d.safetensors", out, (int)getpid());
        if ((e = hp_ckpt_model(dir, &m, err, sizeof err)) == 0 && tk && hp_tokenizer_vocab_size(tk) > m.vocab_size) {
            snprintf(err, sizeof err, "--tokenizer: %s has %d pieces, more than the model's vocab_size %d",
                     hp_tokenizer_file(tk), hp_tokenizer_vocab_size(tk), m.vocab_size);
            e = HP_EXIT_CONFIG;
        }
        if (e == 0 && (e = hp_ckpt_export(dir, tmp, 0, HP_DTYPE_FLOAT32, err, sizeof err)) == 0) {
            if (hf) {
                e = hp_hf_export(tmp, &m, out, dtype, 0, tk ? hp_tokenizer_bos(tk) : -1, tk ? hp_tokenizer_eos(tk) : -1,
                                 err, sizeof err);
                if (e == 0 && tk) e = hf_tokenizer_files(tk, out, err, sizeof err);
            } else {
                e = gguf_with_vocab(tmp, &m, out, f16 ? HP_GGUF_F16 : dtype == HP_DTYPE_BFLOAT16 ? HP_GGUF_BF16
                                    : HP_GGUF_F32, tk, err, sizeof err);
            }
        }
        unlink(tmp);
    } else if (e == 0) {
        e = hp_ckpt_export(dir, out, with_opt, dtype, err, sizeof err);
    }
    hp_tokenizer_free(tk);
    if (e != 0) {
        fprintf(stderr, "hp export: %s\n", err);
        return e;
    }
    return HP_EXIT_OK;
}
