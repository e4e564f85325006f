// run_checkpoint.c - `hp run --checkpoint-dir/--checkpoint-every/--checkpoint-keep/--resume`
// (see run_checkpoint.h and include/hyperpar/checkpoint.h).
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hyperpar/checkpoint.h"
#include "hyperpar/config.h"
#include "hyperpar/dump.h"
#include "hyperpar/hf.h"
#include "job/job_table.h"
#include "run_checkpoint.h"

// "min A, max B bytes per rank (total C), slowest rank T s": what a save or load cost.
static void cost_line(char *buf, size_t n, const hp_ckpt_stats *st) {
    long long b = (long long)st->bytes, lo = 0, hi = 0, sum = 0;
    double t = 0.0;
    hp_mpi_reduce(MPI_COMM_WORLD, &lo, &b, 1, MPI_LONG_LONG, MPI_MIN, 0, "checkpoint-cost");
    hp_mpi_reduce(MPI_COMM_WORLD, &hi, &b, 1, MPI_LONG_LONG, MPI_MAX, 0, "checkpoint-cost");
    hp_mpi_reduce(MPI_COMM_WORLD, &sum, &b, 1, MPI_LONG_LONG, MPI_SUM, 0, "checkpoint-cost");
    hp_mpi_reduce(MPI_COMM_WORLD, &t, &st->seconds, 1, MPI_DOUBLE, MPI_MAX, 0, "checkpoint-cost");
    snprintf(buf, n, "bytes per rank min %lld max %lld, total %lld; %.3f s", lo, hi, sum, t);
}

int tool_run_ckpt_flags(const tool_cli *cli) {
    char err[256];
    if (hp_ckpt_check_env(err, sizeof err) != 0) {
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    if (cli->ckpt_alias_given && !cli->ckpt_dir) {   // the job keys alone may sit unused, as in TT
        fprintf(stderr, "hp: --checkpoint-every and --checkpoint-keep need --checkpoint-dir\n");
        return HP_EXIT_CONFIG;
    }
    if (cli->resume && (cli->load_file || cli->verify)) {
        fprintf(stderr, "hp: --resume cannot be combined with %s (the checkpoint is the start)\n",
                cli->load_file ? "--load" : "--verify");
        return HP_EXIT_CONFIG;
    }
    return 0;
}

// checkpoint.initial_load_in_hf (TorchTitan's): initial_load_path is a Hugging Face folder, read
// for the model alone. hp tells the folder from a checkpoint by itself; the key is checked, not
// needed. One line and HP_EXIT_CONFIG, or 0.
static int check_initial_load_in_hf(const tool_cli *cli) {
    if (!cli->init_load_in_hf) return 0;
    if (!cli->init_load) {
        fprintf(stderr, "hp: checkpoint.initial_load_in_hf needs checkpoint.initial_load_path (the Hugging Face folder)\n");
        return HP_EXIT_CONFIG;
    }
    if (!cli->init_model_only) {
        fprintf(stderr, "hp: checkpoint.initial_load_in_hf reads a model alone: checkpoint.initial_load_model_only "
                "must stay true\n");
        return HP_EXIT_CONFIG;
    }
    char cfg[4200];
    struct stat sb;
    snprintf(cfg, sizeof cfg, "%s/config.json", cli->init_load);
    if (stat(cfg, &sb) != 0) {
        fprintf(stderr, "hp: checkpoint.initial_load_in_hf: %s is not a Hugging Face folder (no config.json)\n",
                cli->init_load);
        return HP_EXIT_CONFIG;
    }
    return 0;
}

int tool_run_ckpt_precheck(const tool_cli *cli) {
    if (cli->ckpt_dir && tool_cli_check_dir("--checkpoint-dir", cli->ckpt_dir) != 0) return HP_EXIT_CONFIG;
    if (check_initial_load_in_hf(cli) != 0) return HP_EXIT_CONFIG;
    if (!cli->resume) return 0;
    char dir[4096], err[1024];
    int step = 0;
    if (hp_ckpt_resolve(cli->resume, dir, sizeof dir, err, sizeof err) != 0 ||
        hp_ckpt_check(dir, &cli->model, &cli->run, 1, &step, err, sizeof err) != 0) {
        fprintf(stderr, "hp: --resume: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    if (step >= cli->run.steps) {
        fprintf(stderr, "hp: --resume: %s is at step %d; --steps %d leaves nothing to train "
                "(--steps is the step to train up to)\n", dir, step, cli->run.steps);
        return HP_EXIT_CONFIG;
    }
    char note[600];
    if (hp_ckpt_schedule_note(dir, &cli->run, note, sizeof note)) fprintf(stderr, "hp: note: --resume: %s\n", note);
    return 0;
}

int tool_run_ckpt_resume(hp_trainer *tr, const tool_cli *cli, int rank) {
    char dir[4096], err[4600];
    hp_ckpt_stats st;
    int e = hp_ckpt_resolve(cli->resume, dir, sizeof dir, err, sizeof err);
    if (e == 0) e = hp_ckpt_load(tr, dir, &st, err, sizeof err);   // collective
    if (e == 0 && st.step >= cli->run.steps) {
        snprintf(err, sizeof err, "%s is at step %d; --steps %d leaves nothing to train", dir,
                 st.step, cli->run.steps);
        e = HP_EXIT_CONFIG;
    }
    if (e != 0) {
        if (rank == 0) fprintf(stderr, "hp: --resume: %s\n", err);
        return -1;
    }
    char cost[160];
    cost_line(cost, sizeof cost, &st);   // collective
    if (rank == 0 && !cli->quiet)
        printf("hp: resumed from %s (step %d; rank 0 read %lld bytes; read %s)\n", dir, st.step,
               (long long)st.bytes, cost);
    return st.step;
}

int tool_run_ckpt_after_step(hp_trainer *tr, const tool_cli *cli, int step, int rank) {
    if (!cli->ckpt_dir) return 0;
    if (!((cli->ckpt_every > 0 && step % cli->ckpt_every == 0) || step == cli->run.steps)) return 0;
    char err[1024];
    hp_ckpt_stats st;
    if (hp_ckpt_save(tr, cli->ckpt_dir, cli->ckpt_keep, &st, err, sizeof err) != 0) {
        if (rank == 0) fprintf(stderr, "hp: --checkpoint-dir: %s\n", err);
        return HP_EXIT_FAIL;
    }
    char cost[160];
    cost_line(cost, sizeof cost, &st);   // collective
    if (rank == 0 && !cli->quiet)
        printf("hp: saved %s/step-%d (rank 0 wrote %lld bytes; written %s)\n", cli->ckpt_dir, step,
               (long long)st.bytes, cost);
    return 0;
}

float *tool_run_load_model(const tool_cli *cli, int rank) {
    hp_param_table t;
    hp_params_build(&t, &cli->model, &cli->dims, rank);
    float *full = malloc((size_t)t.full_numel * sizeof(float));
    char err[4600], tmp[4200] = "";
    const char *path = cli->load_file;
    struct stat sb;
    int e = 0;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {   // an HF folder, or a checkpoint
        const char *td = getenv("TMPDIR");
        char cfg[4200], step_dir[4096];
        snprintf(tmp, sizeof tmp, "%s/hp-load-%d-%d.safetensors", td && *td ? td : "/tmp", (int)getpid(), rank);
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
        if (stat(cfg, &sb) == 0) e = hp_hf_import(path, &cli->model, tmp, err, sizeof err);
        else if ((e = hp_ckpt_resolve(path, step_dir, sizeof step_dir, err, sizeof err)) == 0)
            e = hp_ckpt_export(step_dir, tmp, 0, HP_DTYPE_FLOAT32, err, sizeof err);
        path = tmp;
    }
    if (e != 0 || hp_load_full(path, &t, full, err, sizeof err) != 0) {
        if (rank == 0) fprintf(stderr, "hp: --load: %s\n", err);
        free(full);
        full = NULL;
    }
    if (tmp[0]) unlink(tmp);
    hp_params_free(&t);
    return full;
}

// 1 when the command line or the job file gives the key of id.
static int named(const tool_cli *cli, hp_job_flag_id id) {
    const int row = hp_job_flag_key_row(id);
    return row >= 0 && cli->key_text[row] != NULL;
}

int tool_run_model_of_load(tool_cli *cli, char *err, size_t n) {
    if (!cli->load_file) return 0;
    const int named_model = named(cli, F_MODEL) || named(cli, F_MODEL_CONFIG);
    struct stat sb;
    if (stat(cli->load_file, &sb) != 0 || !S_ISDIR(sb.st_mode)) return 0;
    char cfg[4200], dir[4096];
    snprintf(cfg, sizeof cfg, "%s/config.json", cli->load_file);
    if (stat(cfg, &sb) == 0)
        return named_model ? 0 : hp_model_config_from_hf_file(cfg, &cli->model, err, n) ? HP_EXIT_CONFIG : 0;
    hp_model_config held;
    int e = hp_ckpt_resolve(cli->load_file, dir, sizeof dir, err, n);
    if (!e) e = hp_ckpt_model(dir, &held, err, n);
    if (e || !named_model) { if (!e) cli->model = held; return e; }
    const size_t shape = offsetof(hp_model_config, vocab_size);   // every field after the name
    if (memcmp((const char *)&held + shape, (const char *)&cli->model + shape, sizeof held - shape) != 0) {
        snprintf(err, n, "%s holds a %s model (vocab %d, dim %d, %d layers, %d experts); the flags name %s "
                 "(vocab %d, dim %d, %d layers, %d experts): leave --model out, a checkpoint knows its model",
                 dir, held.name, held.vocab_size, held.dim, held.n_layers, held.num_experts, cli->model.name,
                 cli->model.vocab_size, cli->model.dim, cli->model.n_layers, cli->model.num_experts);
        return HP_EXIT_CONFIG;
    }
    return 0;
}
