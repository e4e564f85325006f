// run_sample.c - samples during training (run_sample.h).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "run_sample.h"
#include "hyperpar/comm.h"
#include "hyperpar/generate.h"

int tool_sampler_check(const tool_cli *cli) {
    if (cli->sample_every <= 0) return 0;
    if (cli->verify) {
        fprintf(stderr, "hp: sample.every needs a training run; --verify runs the verifier's steps (drop one of them)\n");
        return HP_EXIT_CONFIG;
    }
    if (!cli->sample_prompt && !cli->prompt_ids) {
        fprintf(stderr, "hp: sample.every %d needs a prompt: sample.prompt (--prompt TEXT) or --prompt-ids 1,2,3\n",
                cli->sample_every);
        return HP_EXIT_CONFIG;
    }
    tool_prompt p;
    const int e = tool_prompt_prepare(&p, cli->tokenizer_path, cli->sample_prompt, cli->prompt_ids,
                                      cli->model.vocab_size, "hp run: sample.prompt", 1);
    tool_prompt_free(&p);
    return e;
}

int tool_sampler_open(tool_sampler *s, const tool_cli *cli, int rank) {
    *s = (tool_sampler){ cli->sample_every > 0 ? cli->sample_every : 0, cli->run.steps, { 0 }, cli, rank };
    if (!s->every || rank != 0) return 0;
    return tool_prompt_prepare(&s->prompt, cli->tokenizer_path, cli->sample_prompt, cli->prompt_ids,
                               cli->model.vocab_size, "hp run: sample.prompt", 1);
}

void tool_sampler_close(tool_sampler *s) { tool_prompt_free(&s->prompt); }

int tool_sampler_due(const tool_sampler *s, int step) {
    return s->every > 0 && (step % s->every == 0 || step == s->last_step);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// Rank 0: the one-process decoder on the gathered model, the ids, the log.
static int sample_alone(tool_sampler *s, const float *full, hp_metrics *mt, int step) {
    const tool_cli *cli = s->cli;
    char err[512];
    hp_dims one = hp_dims_default();
    one.dp_shard = 1;
    one.world = 1;
    if (hp_dims_validate(&one, &cli->model, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "hp: sample: %s\n", err);
        return HP_EXIT_FAIL;
    }
    const int max_new = cli->sample_max_new;
    hp_decoder *dec = hp_decoder_init(MPI_COMM_SELF, &cli->model, &one, full, s->prompt.n + max_new, err, sizeof err);
    int *ids = malloc(((size_t)max_new + 1) * sizeof(int));
    if (!dec || !ids) {
        fprintf(stderr, "hp: sample: %s\n", dec ? "out of memory" : err);
        hp_decoder_free(dec);
        free(ids);
        return HP_EXIT_FAIL;
    }
    const hp_sampling how = { cli->sample_temperature, cli->sample_top_k, cli->sample_top_p, cli->run.seed };
    hp_generate_stats gs;
    const double t0 = now_s();
    const int n = hp_generate(dec, s->prompt.ids, s->prompt.n, max_new, &how, s->prompt.eos, ids, NULL, NULL, &gs);
    const double seconds = now_s() - t0;
    char *text = n >= 0 ? tool_prompt_text(&s->prompt, ids, n) : NULL;
    char *prompt = cli->sample_prompt ? NULL : tool_prompt_text(&s->prompt, s->prompt.ids, s->prompt.n);
    if (n >= 0) {
        const hp_metrics_samplerec rec = { step, cli->sample_prompt ? cli->sample_prompt : prompt, ids, n, text,
                                           seconds > 0 ? n / seconds : 0.0, 0.0 };
        hp_metrics_sample(mt, &rec);
    }
    free(prompt);
    free(text);
    free(ids);
    hp_decoder_free(dec);
    return n >= 0 ? 0 : HP_EXIT_FAIL;
}

int tool_sampler_run(tool_sampler *s, hp_trainer *tr, hp_metrics *mt, int step) {
    const int64_t n = hp_trainer_params(tr)->full_numel;
    float *full = s->rank == 0 ? malloc((size_t)n * sizeof(float)) : NULL;
    int failed = s->rank == 0 && !full;
    hp_mpi_allreduce(MPI_COMM_WORLD, &failed, 1, MPI_INT, MPI_MAX, "sample-alloc");
    if (failed) { free(full); return HP_EXIT_FAIL; }
    hp_trainer_gather_params(tr, full);
    if (s->rank == 0) failed = sample_alone(s, full, mt, step) != 0;
    free(full);
    // every rank learns the verdict, so that all of them stop together
    hp_mpi_allreduce(MPI_COMM_WORLD, &failed, 1, MPI_INT, MPI_MAX, "sample-verdict");
    return failed ? HP_EXIT_FAIL : 0;
}
