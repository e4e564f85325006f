// cmd_generate.c - `hp generate`: a trained model writes. The model comes from a checkpoint
// (--checkpoint D[/step-K], any layout; its model is the checkpoint's), an hp file or a Hugging
// Face folder (--load; a folder's config.json gives the model); the prompt from --prompt TEXT
// (through the tokenizer, or as bytes for a 256-token model) or --prompt-ids; the layout from
// --tp and --pp. Text is printed as it is made, the speed at the end (generate.h).
//
//   hp generate --checkpoint out/checkpoint --tokenizer data/perl --prompt "The " --max-new-tokens 64
//   hp generate --load tiny-hf --prompt-ids 1,5,9 --temperature 0.8 --top-k 40 --seed 3 --tp 2
// prints the text, then "generate: 4 prompt tokens in 0.002 s (2000 tok/s) | 64 new tokens in ..."
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "gemm_choice.h"
#include "job/job_table.h"
#include "launch/launch.h"
#include "run_checkpoint.h"
#include "hyperpar/checkpoint.h"
#include "hyperpar/comm.h"
#include "hyperpar/generate.h"
#include "hyperpar/tokenizer.h"

static const char *const generate_usage =
    "usage: hp generate (--checkpoint D[/step-K] | --load FILE|DIR) (--prompt TEXT | --prompt-ids 1,2,3)\n"
    "                   [--tokenizer PATH] [--max-new-tokens N] [--temperature T] [--top-k K]\n"
    "                   [--top-p P] [--seed S] [--tp N] [--pp N] [--json F]\n"
    "\n"
    "The model writes: the prompt in one forward, then one token a step from a KV cache, the\n"
    "text printed as it is made and the speed at the end (stderr).\n"
    "  --checkpoint D   a checkpoint (any layout; the model is the checkpoint's)\n"
    "  --load FILE|DIR  hp's safetensors file, or a Hugging Face folder (its config.json gives\n"
    "                   the model unless --model or --model-config does)\n"
    "  --prompt TEXT    encoded by the tokenizer (--tokenizer or model.hf_assets_path; <s> first\n"
    "                   when it has one), or taken as bytes by a 256-token model\n"
    "  --prompt-ids L   the prompt as token ids, each below the vocab size\n"
    "  --max-new-tokens N  at most N new tokens (default 32); stops early at the tokenizer's </s>\n"
    "  --temperature T  0 = greedy (default); else logits / T, then --top-k K (0 = off) and\n"
    "                   --top-p P (1 = off), then a draw keyed by --seed (a seed repeats the text\n"
    "                   on every layout)\n"
    "  --tp N, --pp N   run on N ranks of tensor (pipeline) parallelism, as training places the\n"
    "                   weights; greedy ids are the one process's\n"
    "  --json F         write {\"prompt_ids\": [...], \"ids\": [...], \"text\": \"...\"}\n"
    "\n";

// What one generation needs, made the same on every rank from the same command line.
typedef struct gen_job {
    hp_tokenizer *tk;     // NULL: none
    int *prompt;          // the prompt's ids
    int n_prompt;
    int eos;              // -1: none
} gen_job;

// --checkpoint D -> --load D (the loader takes a checkpoint folder too); NULL when out of memory.
static char **checkpoint_as_load(int argc, char **argv) {
    char **a = calloc((size_t)argc + 1, sizeof *a);
    if (!a) return NULL;
    for (int i = 0; i < argc; i++) a[i] = !strcmp(argv[i], "--checkpoint") ? "--load" : argv[i];
    return a;
}

static int given(const tool_cli *cli, hp_job_flag_id id) {
    const int row = hp_job_flag_key_row(id);
    return row >= 0 && cli->key_cmdline[row];
}

// The model of --load when no flag names one: a checkpoint's own, or an HF folder's config.json.
static int model_from_source(tool_cli *cli, char *err, size_t n) {
    if (given(cli, F_MODEL) || given(cli, F_MODEL_CONFIG)) return 0;
    struct stat sb;
    if (stat(cli->load_file, &sb) != 0 || !S_ISDIR(sb.st_mode)) return 0;
    char cfg[4200], dir[4096];
    snprintf(cfg, sizeof cfg, "%s/config.json", cli->load_file);
    if (stat(cfg, &sb) == 0) return hp_model_config_from_hf_file(cfg, &cli->model, err, n) ? HP_EXIT_CONFIG : 0;
    int e = hp_ckpt_resolve(cli->load_file, dir, sizeof dir, err, n);
    return e ? e : hp_ckpt_model(dir, &cli->model, err, n);
}

// "1,2,3" -> ids, each in [0, V); one line and HP_EXIT_CONFIG on a bad one.
static int parse_ids(const char *s, int V, gen_job *g, int loud) {
    const size_t cap = strlen(s) / 2 + 1;
    g->prompt = malloc(cap * sizeof(int));
    if (!g->prompt) return HP_EXIT_FAIL;
    const char *p = s;
    while (*p) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',')) {
            if (loud) fprintf(stderr, "hp generate: --prompt-ids expects comma-separated ids (1,2,3), got '%s'\n", s);
            return HP_EXIT_CONFIG;
        }
        if (v < 0 || v >= V) {
            if (loud) fprintf(stderr, "hp generate: --prompt-ids: id %ld at position %d is not in [0, %d) (the model's vocab)\n",
                    v, g->n_prompt, V);
            return HP_EXIT_CONFIG;
        }
        g->prompt[g->n_prompt++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (g->n_prompt == 0) {
        if (loud) fprintf(stderr, "hp generate: --prompt-ids is empty\n");
        return HP_EXIT_CONFIG;
    }
    return 0;
}

// The tokenizer and the prompt: one line and HP_EXIT_CONFIG on bad input (printed when loud).
static int prepare(const tool_cli *cli, gen_job *g, int loud) {
    char err[512];
    const int V = cli->model.vocab_size;
    g->eos = -1;
    if (cli->tokenizer_path) {
        if (!(g->tk = hp_tokenizer_load(cli->tokenizer_path, err, sizeof err))) {
            if (loud) fprintf(stderr, "hp generate: --tokenizer: %s\n", err);
            return HP_EXIT_CONFIG;
        }
        if (hp_tokenizer_vocab_size(g->tk) > V) {
            if (loud) fprintf(stderr, "hp generate: the tokenizer has %d pieces, more than the model's vocab of %d\n",
                              hp_tokenizer_vocab_size(g->tk), V);
            return HP_EXIT_CONFIG;
        }
        g->eos = hp_tokenizer_eos(g->tk);
    }
    const char *text = cli->sample_prompt;
    if (!!text == !!cli->prompt_ids) {
        if (loud) fprintf(stderr, "hp generate: give one prompt: --prompt TEXT or --prompt-ids 1,2,3\n");
        return HP_EXIT_CONFIG;
    }
    if (cli->prompt_ids) return parse_ids(cli->prompt_ids, V, g, loud);
    if (!g->tk && V != 256) {
        if (loud) fprintf(stderr, "hp generate: --prompt text needs a tokenizer (--tokenizer PATH or "
                          "model.hf_assets_path): a vocab of %d is not bytes (or give --prompt-ids)\n", V);
        return HP_EXIT_CONFIG;
    }
    const size_t len = strlen(text);
    if (!g->tk) {   // a 256-token model: a token is a byte
        g->prompt = malloc((len ? len : 1) * sizeof(int));
        if (!g->prompt) return HP_EXIT_FAIL;
        for (size_t i = 0; i < len; i++) g->prompt[i] = (unsigned char)text[i];
        g->n_prompt = (int)len;
    } else {
        int *ids = NULL, n = 0;
        if (hp_tokenizer_encode(g->tk, text, len, &ids, &n, err, sizeof err) != 0) {
            if (loud) fprintf(stderr, "hp generate: --prompt: %s\n", err);
            return HP_EXIT_CONFIG;
        }
        const int bos = hp_tokenizer_bos(g->tk);
        g->prompt = malloc(((size_t)n + 1) * sizeof(int));
        if (!g->prompt) { free(ids); return HP_EXIT_FAIL; }
        if (bos >= 0) g->prompt[g->n_prompt++] = bos;
        memcpy(g->prompt + g->n_prompt, ids, (size_t)n * sizeof(int));
        g->n_prompt += n;
        free(ids);
    }
    if (g->n_prompt == 0) {
        if (loud) fprintf(stderr, "hp generate: --prompt is empty (a byte model needs at least one byte)\n");
        return HP_EXIT_CONFIG;
    }
    return 0;
}

// The bytes t[0..n) as UTF-8 into out (room for 3 n + 1): a byte that does not start or
// continue a valid sequence becomes U+FFFD, as SentencePiece decodes stray bytes, so the JSON
// text is always valid UTF-8.
static void utf8_valid(char *out, const unsigned char *t, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char c = t[i];
        const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 && c >= 0xC2 ? 2 : (c >> 4) == 14 ? 3
                         : (c >> 3) == 30 && c <= 0xF4 ? 4 : 0;
        size_t j = 1;
        while (len && j < len && i + j < n && (t[i + j] & 0xC0) == 0x80) j++;
        if (len && j == len && c) {
            memcpy(out + k, t + i, len);
            k += len;
            i += len;
        } else {
            memcpy(out + k, "\xEF\xBF\xBD", 3);
            k += 3;
            i += 1;
        }
    }
    out[k] = '\0';
}

// The text of ids: the tokenizer's, or the bytes of a 256-token model, else "" (malloc'd).
static char *text_of(const gen_job *g, const int *ids, int n, int V) {
    if (g->tk) return hp_tokenizer_decode(g->tk, ids, n);
    char *t = malloc((size_t)n + 1);
    if (!t) return NULL;
    int k = 0;
    if (V == 256)
        for (int i = 0; i < n; i++) t[k++] = (char)ids[i];
    t[k] = '\0';
    return t;
}

// Rank 0 streams the text: the decoded text so far, less what is printed, held back while it
// ends inside a character (SentencePiece decodes a partial UTF-8 sequence as U+FFFD).
typedef struct stream {
    const gen_job *g;
    int V, rank, n;
    int *ids;
    size_t printed;
} stream;

static int on_token(void *ctx, int id) {
    stream *s = ctx;
    s->ids[s->n++] = id;
    if (s->rank != 0) return 0;
    if (!s->g->tk && s->V != 256) { printf("%s%d", s->n > 1 ? " " : "", id); fflush(stdout); return 0; }
    char *t = text_of(s->g, s->ids, s->n, s->V);
    if (!t) return 0;
    size_t len = strlen(t);
    if (s->g->tk && len >= 3 && !memcmp(t + len - 3, "\xEF\xBF\xBD", 3)) len -= 3;
    if (s->g->tk == NULL) len = (size_t)s->n;   // bytes, a NUL among them included
    if (len > s->printed) {
        fwrite(t + s->printed, 1, len - s->printed, stdout);
        fflush(stdout);
        s->printed = len;
    }
    free(t);
    return 0;
}

static int write_json(const char *path, const gen_job *g, const int *ids, int n, int V) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "prompt_ids", cJSON_CreateIntArray(g->prompt, g->n_prompt));
    cJSON_AddItemToObject(o, "ids", cJSON_CreateIntArray(ids, n));
    char *text = text_of(g, ids, n, V), *valid = malloc(3 * (size_t)n + 1);
    if (valid) utf8_valid(valid, (const unsigned char *)(text ? text : ""), g->tk || !text ? strlen(text ? text : "") : (size_t)n);
    cJSON_AddStringToObject(o, "text", valid ? valid : "");
    free(valid);
    free(text);
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    FILE *f = s ? fopen(path, "w") : NULL;
    int rc = f && fputs(s, f) >= 0 && fputc('\n', f) != EOF ? 0 : HP_EXIT_FAIL;
    if (f && fclose(f) != 0) rc = HP_EXIT_FAIL;
    if (rc) fprintf(stderr, "hp generate: cannot write --json file '%s'\n", path);
    free(s);
    return rc;
}

// On every rank: the model, the decoder, the tokens.
static int generate_on_ranks(const tool_cli *cli, const gen_job *g, int rank) {
    char err[512];
    float *full = tool_run_load_model(cli, rank);
    if (!full) return HP_EXIT_CONFIG;
    const int max_new = cli->sample_max_new;
    hp_decoder *dec = hp_decoder_init(MPI_COMM_WORLD, &cli->model, &cli->dims, full, g->n_prompt + max_new,
                                      err, sizeof err);
    free(full);
    if (!dec) { if (rank == 0) fprintf(stderr, "hp generate: %s\n", err); return HP_EXIT_FAIL; }
    const hp_sampling s = { cli->sample_temperature, cli->sample_top_k, cli->sample_top_p, cli->run.seed };
    stream st = { g, cli->model.vocab_size, rank, 0, malloc(((size_t)max_new + 1) * sizeof(int)), 0 };
    int *out = malloc(((size_t)max_new + 1) * sizeof(int));
    hp_generate_stats gs;
    const int n = st.ids && out ? hp_generate(dec, g->prompt, g->n_prompt, max_new, &s, g->eos, out, on_token, &st, &gs) : -1;
    int rc = n < 0 ? HP_EXIT_FAIL : HP_EXIT_OK;
    if (rank == 0 && n >= 0) {
        printf("\n");
        fprintf(stderr, "generate: %d prompt tokens in %.3f s (%.1f tok/s) | %d new tokens in %.3f s (%.1f tok/s) | "
                "world %d\n", gs.prompt_tokens, gs.prompt_seconds, gs.prompt_tokens / (gs.prompt_seconds > 0 ? gs.prompt_seconds : 1e-9),
                gs.new_tokens, gs.new_seconds, gs.new_tokens / (gs.new_seconds > 0 ? gs.new_seconds : 1e-9), cli->dims.world);
        if (cli->json_out) rc = write_json(cli->json_out, g, out, n, cli->model.vocab_size);
    }
    free(out);
    free(st.ids);
    hp_decoder_free(dec);
    return rc;
}

int tool_cmd_generate(int argc, char **argv) {
    char **a = checkpoint_as_load(argc, argv);
    if (!a) { fprintf(stderr, "hp: out of memory\n"); return HP_EXIT_FAIL; }
    tool_cli cli;
    int e = tool_cli_parse(&cli, argc, a, 2, NULL, generate_usage);
    if (e) { free(a); return e < 0 ? HP_EXIT_OK : e; }
    const int under_mpi = tool_launch_under_mpi();
    char err[4600];
    if (cli.n_rest) e = (fprintf(stderr, "hp generate: unexpected argument '%s'\n", cli.rest[0]), HP_EXIT_CONFIG);
    else if (!cli.load_file)
        e = (fprintf(stderr, "hp generate: needs a model: --checkpoint D[/step-K] or --load FILE|DIR\n"), HP_EXIT_CONFIG);
    else if ((e = model_from_source(&cli, err, sizeof err)))
        fprintf(stderr, "hp generate: %s\n", err);
    hp_dims d = cli.dims;
    if (!e) {
        if (d.dp_shard < 0) d.dp_shard = 1;   // (one sequence: no data split to infer)
        d.world = cli.nproc > 0 ? cli.nproc : hp_dims_product(&d);
        if (hp_dims_validate(&d, &cli.model, &cli.run, err, sizeof err) != 0)
            e = (fprintf(stderr, "hp: %s\n", err), HP_EXIT_CONFIG);
        else if (hp_dims_batch(&d) != 1 || hp_dims_seq(&d) != 1 || d.ep != 1)
            e = (fprintf(stderr, "hp generate: runs under --tp and --pp only (one sequence has no data, context, "
                         "Ulysses or expert split), got world %d\n", d.world), HP_EXIT_CONFIG);
    }
    gen_job g = { 0 };
    if (!e && !under_mpi) {   // every check before any rank starts
        if ((e = prepare(&cli, &g, 1)) == 0) {
            tool_cli probe = cli;
            probe.dims = d;
            float *full = tool_run_load_model(&probe, 0);
            e = full ? 0 : HP_EXIT_CONFIG;
            free(full);
        }
        if (!e && d.world > 1) {
            hp_tokenizer_free(g.tk);
            free(g.prompt);
            e = tool_launch_self(d.world, argc, argv);
            free(a);
            return e;
        }
    }
    if (e) { hp_tokenizer_free(g.tk); free(g.prompt); free(a); return e; }
    tool_reexec(argv);
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    cli.dims = d;
    if (world != d.world) {
        if (rank == 0) fprintf(stderr, "hp generate: --tp x --pp is %d ranks, the launcher started %d\n", d.world, world);
        e = HP_EXIT_CONFIG;
    } else if (!g.prompt) {
        e = prepare(&cli, &g, rank == 0);
    }
    if (!e) e = generate_on_ranks(&cli, &g, rank);
    hp_tokenizer_free(g.tk);
    free(g.prompt);
    fflush(stdout);
    MPI_Finalize();
    free(a);
    return e;
}
