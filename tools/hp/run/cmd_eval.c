// cmd_eval.c - `hp eval`: a model's loss on a dataset, nothing trained. The model comes from a
// checkpoint (--checkpoint D[/step-K], any layout), a file or a Hugging Face folder (--load), or
// the seed's initial model; the data from --data (any format hp run reads); the layout from the
// degree flags, as hp run's. It is hp run with the validation round alone: the same launcher,
// checks and trainer, so the loss is the validation loss hp run logs (docs/metrics.md).
//
//   hp eval --checkpoint ck --data val.bin --batches 8 --json eval.json
//   hp eval --load tiny-hf --data text.txt --tp 2
// prints "eval: loss 5.481 | perplexity 240.1 | bits per byte 7.907 | 8 batches, 512 tokens"
// (bits per byte where a token is a byte: the byte-level models and byte data).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "hyperpar/metrics.h"
#include "hyperpar/train.h"

// argv of hp eval as hp run's (the launcher starts the ranks with it, so it is its own fixed
// point): --batches N -> --validation.steps N, --checkpoint D -> --load D (its model alone), and
// --validation.enable once. NULL when out of memory.
char **tool_eval_argv(int argc, char **argv, int *out_argc) {
    char **a = calloc((size_t)argc + 2, sizeof *a);
    if (!a) return NULL;
    int n = 0, enabled = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--batches")) a[n++] = "--validation.steps";
        else if (!strcmp(argv[i], "--checkpoint")) a[n++] = "--load";
        else a[n++] = argv[i];
        enabled |= !strcmp(argv[i], "--validation.enable");
    }
    if (!enabled) a[n++] = "--validation.enable";
    *out_argc = n;
    return a;
}

int tool_eval(const tool_cli *cli, const float *init, int rank) {
    char err[256];
    hp_validation val;
    if (!cli->run.data_path && !cli->val_path) {
        if (rank == 0) fprintf(stderr, "hp eval: needs --data FILE (the dataset to evaluate on)\n");
        return HP_EXIT_CONFIG;
    }
    if (hp_validation_open(&val, cli, rank == 0) != 0) return HP_EXIT_CONFIG;
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &cli->model, &cli->dims, &cli->run, err, sizeof err);
    if (!tr) { if (rank == 0) fprintf(stderr, "hp: %s\n", err); hp_validation_close(&val); return HP_EXIT_CONFIG; }
    if (init) hp_trainer_set_params(tr, init);
    int rc = HP_EXIT_OK;
    int64_t tokens = 0;
    double seconds = 0.0, loss = NAN;
    if (rc == HP_EXIT_OK) loss = hp_validation_round(&val, tr, &tokens, &seconds);
    // a token is a byte for the byte-level models: then bits per byte is the loss in bits
    const int bytes = cli->model.vocab_size == 256;
    if (rc == HP_EXIT_OK && !isfinite(loss)) {
        if (rank == 0) fprintf(stderr, "hp eval: the loss is %g: not finite\n", loss);
        rc = HP_EXIT_FAIL;
    }
    if (rc == HP_EXIT_OK && rank == 0) {
        const long long batches = tokens / ((long long)cli->run.batch * cli->run.seq_len);
        printf("eval: loss %.6f | perplexity %.4g", loss, exp(loss));
        if (bytes) printf(" | bits per byte %.4f", loss / log(2.0));
        printf(" | %lld batches, %lld tokens | %.2f s\n", batches, (long long)tokens, seconds);
        if (cli->json_out) {
            FILE *f = fopen(cli->json_out, "w");
            if (!f) { fprintf(stderr, "hp eval: cannot write --json file '%s'\n", cli->json_out); rc = HP_EXIT_FAIL; }
            else {
                fprintf(f, "{\"loss\": %.17g, \"perplexity\": %.17g, ", loss, exp(loss));
                if (bytes) fprintf(f, "\"bits_per_byte\": %.17g, ", loss / log(2.0));
                fprintf(f, "\"tokens\": %lld, \"batches\": %lld, \"seconds\": %.6f, \"world\": %d}\n",
                        (long long)tokens, batches, seconds, cli->dims.world);
                if (fclose(f) != 0) rc = HP_EXIT_FAIL;
            }
        }
    }
    hp_trainer_free(tr);
    hp_validation_close(&val);
    return rc;
}
