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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "gemm_choice.h"
#include "job/job_table.h"
#include "launch/launch.h"
#include "run_checkpoint.h"
#include "run_prompt.h"
#include "hyperpar/checkpoint.h"
#include "hyperpar/comm.h"
#include "hyperpar/generate.h"

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
    "                   --top-p P (1 = off), then a draw keyed by --seed (a seed repeats the\n"
    "                   text; no state is kept between draws)\n"
    "  --tp N, --pp N   run on N ranks of tensor (pipeline) parallelism, as training places the\n"
    "                   weights; the logits are the one process's to float rounding, and so the\n"
    "                   greedy ids (unless two logits tie within it)\n"
    "  --json F         write {\"prompt_ids\": [...], \"ids\": [...], \"text\": \"...\"}\n"
    "Of hp run's flags below, the model's, --tp and --pp apply; the other degrees must stay 1,\n"
    "and the training flags (--steps, --lr, --verify, ...) are read and have no effect.\n"
    "\n";

// --checkpoint D -> --load D (the loader takes a checkpoint folder too); NULL when out of memory.
static char **checkpoint_as_load(int argc, char **argv) {
    char **a = calloc((size_t)argc + 1, sizeof *a);
    if (!a) return NULL;
    for (int i = 0; i < argc; i++) a[i] = !strcmp(argv[i], "--checkpoint") ? "--load" : argv[i];
    return a;
}


// Rank 0 streams the text: the decoded text so far, less what is printed, held back while it
// ends inside a character (SentencePiece decodes a partial UTF-8 sequence as U+FFFD).
typedef struct stream {
    const tool_prompt *p;
    int rank, n;
    int *ids;
    size_t printed;
} stream;

static int on_token(void *ctx, int id) {
    stream *s = ctx;
    s->ids[s->n++] = id;
    if (s->rank != 0) return 0;
    size_t len = 0;
    char *t = tool_prompt_decode(s->p, s->ids, s->n, &len);
    if (!t) { printf("%s%d", s->n > 1 ? " " : "", id); fflush(stdout); return 0; }   // ids without text
    if (s->p->tk && len >= 3 && !memcmp(t + len - 3, "\xEF\xBF\xBD", 3)) len -= 3;
    if (len > s->printed) {
        fwrite(t + s->printed, 1, len - s->printed, stdout);
        fflush(stdout);
        s->printed = len;
    }
    free(t);
    return 0;
}

static int write_json(const char *path, const tool_prompt *p, const int *ids, int n) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "prompt_ids", cJSON_CreateIntArray(p->ids, p->n));
    cJSON_AddItemToObject(o, "ids", cJSON_CreateIntArray(ids, n));
    char *text = tool_prompt_text(p, ids, n);
    cJSON_AddStringToObject(o, "text", text ? text : "");
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

static int prompt_of(const tool_cli *cli, tool_prompt *g, int loud) {
    return tool_prompt_prepare(g, cli->tokenizer_path, cli->sample_prompt, cli->prompt_ids, cli->model.vocab_size,
                               "hp generate", loud);
}

// On every rank: the model, the decoder, the tokens.
static int generate_on_ranks(const tool_cli *cli, const tool_prompt *g, int rank) {
    char err[512];
    float *full = tool_run_load_model(cli, rank);
    if (!full) return HP_EXIT_CONFIG;
    const int max_new = cli->sample_max_new;
    hp_decoder *dec = hp_decoder_init(MPI_COMM_WORLD, &cli->model, &cli->dims, full, g->n + max_new,
                                      err, sizeof err);
    free(full);
    if (!dec) { if (rank == 0) fprintf(stderr, "hp generate: %s\n", err); return HP_EXIT_FAIL; }
    const hp_sampling s = { cli->sample_temperature, cli->sample_top_k, cli->sample_top_p, cli->run.seed };
    stream st = { g, rank, 0, malloc(((size_t)max_new + 1) * sizeof(int)), 0 };
    int *out = malloc(((size_t)max_new + 1) * sizeof(int));
    hp_generate_stats gs;
    const int n = st.ids && out ? hp_generate(dec, g->ids, g->n, max_new, &s, g->eos, out, on_token, &st, &gs) : -1;
    int rc = n < 0 ? HP_EXIT_FAIL : HP_EXIT_OK;
    if (rank == 0 && n >= 0) {
        printf("\n");
        fprintf(stderr, "generate: %d prompt tokens in %.3f s (%.1f tok/s) | %d new tokens in %.3f s (%.1f tok/s) | "
                "world %d\n", gs.prompt_tokens, gs.prompt_seconds, gs.prompt_tokens / (gs.prompt_seconds > 0 ? gs.prompt_seconds : 1e-9),
                gs.new_tokens, gs.new_seconds, gs.new_tokens / (gs.new_seconds > 0 ? gs.new_seconds : 1e-9), cli->dims.world);
        if (cli->json_out) rc = write_json(cli->json_out, g, out, n);
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
    else if ((e = tool_run_model_of_load(&cli, err, sizeof err)))
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
    tool_prompt g = { 0 };
    if (!e && !under_mpi) {   // every check before any rank starts
        if ((e = prompt_of(&cli, &g, 1)) == 0) {
            tool_cli probe = cli;
            probe.dims = d;
            float *full = tool_run_load_model(&probe, 0);
            e = full ? 0 : HP_EXIT_CONFIG;
            free(full);
        }
        if (!e && d.world > 1) {
            tool_prompt_free(&g);
            e = tool_launch_self(d.world, argc, argv);
            free(a);
            return e;
        }
    }
    if (e) { tool_prompt_free(&g); free(a); return e; }
    tool_reexec(argv);
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    cli.dims = d;
    if (world != d.world) {
        if (rank == 0) fprintf(stderr, "hp generate: --tp x --pp is %d ranks, the launcher started %d\n", d.world, world);
        e = HP_EXIT_CONFIG;
    } else if (!g.ids) {
        e = prompt_of(&cli, &g, rank == 0);
    }
    if (!e) e = generate_on_ranks(&cli, &g, rank);
    tool_prompt_free(&g);
    fflush(stdout);
    MPI_Finalize();
    free(a);
    return e;
}
