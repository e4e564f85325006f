// run_checkpoint.c - `hp run --checkpoint-dir/--checkpoint-every/--checkpoint-keep/--resume`
// (see run_checkpoint.h and include/hyperpar/checkpoint.h).
#include <stdio.h>
#include "hyperpar/checkpoint.h"
#include "run_checkpoint.h"

int hp_run_ckpt_flags(const hp_cli *cli) {
    if ((cli->ckpt_every > 0 || cli->ckpt_keep > 0) && !cli->ckpt_dir) {
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

int hp_run_ckpt_precheck(const hp_cli *cli) {
    if (cli->ckpt_dir && hp_cli_check_dir("--checkpoint-dir", cli->ckpt_dir) != 0) return HP_EXIT_CONFIG;
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
    return 0;
}

int hp_run_ckpt_resume(hp_trainer *tr, const hp_cli *cli, int rank) {
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
    if (rank == 0 && !cli->quiet)
        printf("hp: resumed from %s (step %d; rank 0 read %lld bytes in %.3f s)\n", dir, st.step,
               (long long)st.bytes, st.seconds);
    return st.step;
}

int hp_run_ckpt_after_step(hp_trainer *tr, const hp_cli *cli, int step, int rank) {
    if (!cli->ckpt_dir) return 0;
    if (!((cli->ckpt_every > 0 && step % cli->ckpt_every == 0) || step == cli->run.steps)) return 0;
    char err[1024];
    hp_ckpt_stats st;
    if (hp_ckpt_save(tr, cli->ckpt_dir, cli->ckpt_keep, &st, err, sizeof err) != 0) {
        if (rank == 0) fprintf(stderr, "hp: --checkpoint-dir: %s\n", err);
        return HP_EXIT_FAIL;
    }
    if (rank == 0 && !cli->quiet)
        printf("hp: saved %s/step-%d (rank 0 wrote %lld bytes in %.3f s)\n", cli->ckpt_dir, step,
               (long long)st.bytes, st.seconds);
    return 0;
}
