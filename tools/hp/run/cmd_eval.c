// cmd_eval.c - `hp eval`: a model's loss on a dataset, nothing trained. The model comes from a
// checkpoint (--checkpoint D[/step-K], any layout), a file or a Hugging Face folder (--load), or
// the seed's initial model; the data from --data (any format hp run reads); the layout from the
// degree flags, as hp run's. It is hp run with the validation round alone: the same launcher,
// checks and trainer, so the loss is the validation loss hp run logs (docs/metrics.md).
//
//   hp eval --checkpoint ck --data val.bin --batches 8 --json eval.json
//   hp eval --load tiny-hf --data text.txt --tp 2
// prints "eval: loss 5.481 | perplexity 240.1 | bits per byte 7.907 | 8 batches, 512 tokens"
// (bits per byte with a tokenizer, --tokenizer PATH: the targets' loss in bits over the bytes
// their pieces stand for; without one where a token is a byte: the byte-level models).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "hyperpar/metrics.h"
#include "hyperpar/tokenizer.h"
#include "hyperpar/train.h"

// argv of hp eval as hp run's (the launcher starts the ranks with it, so it is its own fixed
// point): --batches N -> --validation.steps N, --checkpoint D -> --load D (its model alone),
// --data F -> --validation.dataset_path F (the set evaluated, over a job file's),
// --validation.enable, --checkpoint.no_enable and --sample.every 0 once. NULL when out of memory.
char **tool_eval_argv(int argc, char **argv, int *out_argc) {
    char **a = calloc((size_t)argc + 5, sizeof *a);
    if (!a) return NULL;
    int n = 0, enabled = 0, no_ckpt = 0, no_sample = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--batches")) a[n++] = "--validation.steps";
        else if (!strcmp(argv[i], "--checkpoint")) a[n++] = "--load";
        else if (!strcmp(argv[i], "--data")) a[n++] = "--validation.dataset_path";   // over a job file's
        else a[n++] = argv[i];
        enabled |= !strcmp(argv[i], "--validation.enable");
        no_ckpt |= !strcmp(argv[i], "--checkpoint.no_enable");
        no_sample |= i > 0 && !strcmp(argv[i - 1], "--sample.every");
    }
    if (!enabled) a[n++] = "--validation.enable";
    // nothing is trained: a job file's checkpoints are neither resumed from nor saved, no samples
    if (!no_ckpt) a[n++] = "--checkpoint.no_enable";
    if (!no_sample) { a[n++] = "--sample.every"; a[n++] = "0"; }
    *out_argc = n;
    return a;
}

static long long target_bytes;   // what bits_per_byte divided by (a tokenizer's), for --json

// The round's bits per byte (see tool_eval), NAN when there is no byte count.
static double bits_per_byte(const tool_cli *cli, const hp_validation *val, const hp_tokenizer *tk, double loss,
                            int64_t tokens) {
    if (!tk) return cli->model.vocab_size == 256 ? loss / log(2.0) : NAN;
    const int S = cli->run.seq_len;
    int *ids = malloc(((size_t)S + 1) * sizeof *ids);
    if (!ids) return NAN;
    long long bytes = 0;
    const int64_t windows = val->batches * (int64_t)val->batch;
    for (int64_t w = 0; w < windows; w++) {
        hp_data_window(val->data, ids, w, S);
        for (int i = 1; i <= S; i++) bytes += hp_tokenizer_token_bytes(tk, ids[i]);
    }
    free(ids);
    target_bytes = bytes;
    return bytes > 0 ? loss * (double)tokens / log(2.0) / (double)bytes : NAN;
}

int tool_eval(const tool_cli *cli, const float *init, int rank) {
    char err[256];
    hp_validation val;
    if (!cli->run.data_path && !cli->val_path) {
        if (rank == 0) fprintf(stderr, "hp eval: needs --data FILE (the dataset to evaluate on)\n");
        return HP_EXIT_CONFIG;
    }
    // the tokenizer (--tokenizer, model.hf_assets_path): bits per byte from its pieces' bytes
    hp_tokenizer *tk = NULL;
    if (cli->tokenizer_path) {
        if (!(tk = hp_tokenizer_load(cli->tokenizer_path, err, sizeof err))) {
            if (rank == 0) fprintf(stderr, "hp eval: --tokenizer: %s\n", err);
            return HP_EXIT_CONFIG;
        }
        if (hp_tokenizer_vocab_size(tk) > cli->model.vocab_size) {
            if (rank == 0) fprintf(stderr, "hp eval: the tokenizer has %d pieces, more than the model's vocab of %d\n",
                                   hp_tokenizer_vocab_size(tk), cli->model.vocab_size);
            hp_tokenizer_free(tk);
            return HP_EXIT_CONFIG;
        }
    }
    if (hp_validation_open(&val, cli, rank == 0) != 0) { hp_tokenizer_free(tk); return HP_EXIT_CONFIG; }
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &cli->model, &cli->dims, &cli->run, err, sizeof err);
    if (!tr) {
        if (rank == 0) fprintf(stderr, "hp: %s\n", err);
        hp_validation_close(&val);
        hp_tokenizer_free(tk);
        return HP_EXIT_CONFIG;
    }
    if (init) hp_trainer_set_params(tr, init);
    int rc = HP_EXIT_OK;
    int64_t tokens = 0;
    double seconds = 0.0, loss = NAN;
    if (rc == HP_EXIT_OK) loss = hp_validation_round(&val, tr, &tokens, &seconds);
    // Bits per byte: the loss in bits over the bytes the targets stand for. A round's loss is
    // the mean over its batches of each batch's token mean, every batch B x S targets, so the
    // targets' summed loss is loss x tokens. With a tokenizer the bytes are its pieces' bytes
    // of the targets y = w[1..S] of each window read (windows 0 .. batches x B - 1); without one
    // a token is a byte for the byte-level models (bits per byte = loss / ln 2), else none.
    double bpb = NAN;
    if (rc == HP_EXIT_OK && rank == 0) bpb = bits_per_byte(cli, &val, tk, loss, tokens);
    const int bytes = isfinite(bpb);
    if (rc == HP_EXIT_OK && !isfinite(loss)) {
        if (rank == 0) fprintf(stderr, "hp eval: the loss is %g: not finite\n", loss);
        rc = HP_EXIT_FAIL;
    }
    if (rc == HP_EXIT_OK && rank == 0) {
        const long long batches = tokens / ((long long)cli->run.batch * cli->run.seq_len);
        printf("eval: loss %.6f | perplexity %.4g", loss, exp(loss));
        if (bytes) printf(" | bits per byte %.4f", bpb);
        printf(" | %lld batches, %lld tokens | %.2f s\n", batches, (long long)tokens, seconds);
        if (cli->json_out) {
            FILE *f = fopen(cli->json_out, "w");
            if (!f) { fprintf(stderr, "hp eval: cannot write --json file '%s'\n", cli->json_out); rc = HP_EXIT_FAIL; }
            else {
                fprintf(f, "{\"loss\": %.17g, \"perplexity\": %.17g, ", loss, exp(loss));
                if (bytes) fprintf(f, "\"bits_per_byte\": %.17g, ", bpb);
                if (tk) fprintf(f, "\"target_bytes\": %lld, ", target_bytes);
                fprintf(f, "\"tokens\": %lld, \"batches\": %lld, \"seconds\": %.6f, \"world\": %d}\n",
                        (long long)tokens, batches, seconds, cli->dims.world);
                if (fclose(f) != 0) rc = HP_EXIT_FAIL;
            }
        }
    }
    hp_trainer_free(tr);
    hp_validation_close(&val);
    hp_tokenizer_free(tk);
    return rc;
}
