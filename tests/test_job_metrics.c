// test_job_metrics.c - the job file and the metrics as a program embedding libhyperpar uses them,
// through the public headers alone (include/hyperpar/job.h, metrics.h, train.h):
//   - hp_job_load reads a TorchTitan job file into the configs (and refuses an unknown key);
//   - hp_job_save_config writes {job.dump_folder}/config.toml, which hp_job_load reads back to
//     the same job;
//   - a 3-step loop with hp_metrics_* and hp_validation_* writes metrics.jsonl (one job record,
//     3 train records, a val record after steps 2 and 3) and loss.svg.
//   mpiexec -np 1 test_job_metrics DIR
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "hyperpar/job.h"
#include "hyperpar/metrics.h"
#include "hyperpar/train.h"
#include "test_mpi_check.h"

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

// How many lines of path hold needle (-1: the file cannot be read).
static int count_lines(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) n++;
    fclose(f);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: test_job_metrics DIR\n"); return 2; }
    const char *dir = argv[1];
    char out[4096], job_path[4200], bad_path[4200], cfg_path[4200], jsonl[4200], svg[4200], text[8192];
    mkdir(dir, 0777);
    snprintf(out, sizeof out, "%s/out", dir);
    mkdir(out, 0777);
    snprintf(job_path, sizeof job_path, "%s/job.toml", dir);
    snprintf(bad_path, sizeof bad_path, "%s/bad.toml", dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.toml", out);
    snprintf(jsonl, sizeof jsonl, "%s/metrics.jsonl", out);
    snprintf(svg, sizeof svg, "%s/loss.svg", out);
    // metrics.peak_tflops given: no FMA loop measured, no peak file written
    snprintf(text, sizeof text,
             "[job]\ndump_folder = \"%s\"\n\n[training]\nsteps = 3\nseq_len = 16\nglobal_batch_size = 4\n\n"
             "[optimizer]\nname = \"AdamW\"\nlr = 1e-3\n\n[metrics]\npeak_tflops = 1.0\n\n"
             "[validation]\nenable = true\nfreq = 2\nsteps = 1\n", out);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_wrank);
    CHECK(write_file(job_path, text) == 0, "cannot write %s", job_path);
    CHECK(write_file(bad_path, "[training]\nstepz = 3\n") == 0, "cannot write %s", bad_path);

    hp_job job;
    CHECK(hp_job_load(&job, job_path) == 0, "hp_job_load %s", job_path);
    CHECK(job.run.steps == 3 && job.run.seq_len == 16 && job.run.batch == 4, "training keys: %d %d %d",
          job.run.steps, job.run.seq_len, job.run.batch);
    CHECK(job.run.optimizer == HP_OPT_ADAMW && job.run.lr == 1e-3f, "optimizer keys");
    CHECK(!strcmp(job.model.name, "tiny"), "hp's default model, got %s", job.model.name);
    CHECK(job.val_enable && job.val_freq == 2 && job.val_steps == 1, "validation keys");
    CHECK(job.dump_folder && !strcmp(job.dump_folder, out), "job.dump_folder");
    hp_job bad;
    CHECK(hp_job_load(&bad, bad_path) == HP_EXIT_CONFIG, "an unknown key is refused");

    MPI_Comm_size(MPI_COMM_WORLD, &job.dims.world);
    char err[256] = "";
    CHECK(hp_dims_validate(&job.dims, &job.model, &job.run, err, sizeof err) == 0, "%s", err);
    CHECK(hp_job_save_config(&job, argc, argv) == 0, "hp_job_save_config");
    hp_job again;
    CHECK(hp_job_load(&again, cfg_path) == 0, "config.toml reads back");
    CHECK(again.run.steps == job.run.steps && again.run.seq_len == job.run.seq_len &&
          again.run.batch == job.run.batch && again.run.lr == job.run.lr && again.val_freq == job.val_freq,
          "config.toml is the same job");

    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &job.model, &job.dims, &job.run, err, sizeof err);
    CHECK(tr != NULL, "hp_trainer_init: %s", err);
    hp_validation val;
    CHECK(hp_validation_open(&val, &job, 1) == 0, "hp_validation_open");
    if (tr) {
        hp_metrics *mt = hp_metrics_open(&job, tr, &val, 1, 1, MPI_COMM_WORLD);
        CHECK(mt != NULL, "hp_metrics_open");
        for (int k = 1; k <= job.run.steps && mt; k++) {
            hp_step_stats st;
            CHECK(hp_trainer_step(tr, &st) == 0, "step %d", k);
            hp_metrics_step(mt, &st, st.ms * 1e-3, 0);
            if (hp_validation_due(&val, k, job.run.steps)) {
                int64_t tokens = 0;
                double seconds = 0.0;
                const double loss = hp_validation_round(&val, tr, &tokens, &seconds);
                hp_metrics_val(mt, k, loss, tokens, seconds);
            }
        }
        if (mt) CHECK(hp_metrics_close(mt) == 0, "hp_metrics_close");
        hp_trainer_free(tr);
    }
    hp_validation_close(&val);
    if (g_wrank == 0) {
        CHECK(count_lines(jsonl, "\"type\":\"job\"") == 1, "metrics.jsonl: one job record");
        CHECK(count_lines(jsonl, "\"type\":\"train\"") == 3, "metrics.jsonl: 3 train records, got %d",
              count_lines(jsonl, "\"type\":\"train\""));
        CHECK(count_lines(jsonl, "\"type\":\"val\"") == 2, "metrics.jsonl: 2 val records, got %d",
              count_lines(jsonl, "\"type\":\"val\""));
        CHECK(count_lines(svg, "</svg>") == 1, "loss.svg written");
    }
    MPI_Allreduce(MPI_IN_PLACE, &g_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_wrank == 0) printf("test_job_metrics: %d checks, %d failed\n", g_pass, g_fail);
    MPI_Finalize();
    return g_fail ? 1 : 0;
}
