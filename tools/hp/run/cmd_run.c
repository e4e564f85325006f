// cmd_run.c - `hp run`: validate, launch N ranks (the torchrun role), train, verify.
//
//   hp run --tp 2 --dp-shard 2 --steps 3            # launches 4 ranks under mpirun
//   mpirun -np 4 hp run --tp 2 --dp-shard 2         # or started by the user's launcher
//   hp run --model tiny-moe --ep 4 --dp-shard 4 --verify --dump out/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "job/job_table.h"
#include "gemm_choice.h"
#include "launch/launch.h"
#include "run_checkpoint.h"
#include "run_sample.h"
#include "hyperpar/blas.h"
#include "hyperpar/optim.h"
#include "hyperpar/data.h"
#include "hyperpar/checkpoint.h"
#include "hyperpar/dump.h"
#include "hyperpar/hf.h"
#include "hyperpar/failpoint.h"
#include "hyperpar/metrics.h"
#include "hyperpar/train.h"
#include "hyperpar/verify.h"
#include "kernels/gemm.h"

static const char *const run_usage =
    "usage: hp run [flags]\n"
    "\n"
    "Trains --steps steps of the model on world = dp_replicate*dp_shard*ulysses*cp*tp*pp ranks\n"
    "(ep and etp re-use them). Started outside an MPI launcher it starts itself under mpirun with\n"
    "that many ranks (or --nproc N with --dp-shard -1), each bound to cores of its own when they\n"
    "fit, else oversubscribed and said in one line. Rank 0 logs TorchTitan's line at step 1,\n"
    "every --metrics.log_freq steps and the last: step, loss, grad_norm, lr, memory, tps (per\n"
    "rank), tflops, mfu (docs/metrics.md); --job.dump_folder D writes them to D/metrics.jsonl and\n"
    "D/loss.svg too; --validation.enable adds validation rounds.\n"
    "  --verify         compare loss, every gradient of step 1, every parameter after the step\n"
    "                   and a trajectory of losses with the single-process reference; exit 1 on a\n"
    "                   miss. Its length: --verify-steps N, else --steps N of the command line, else\n"
    "                   5 (a job file's training.steps is a training length: it does not set it);\n"
    "                   --steps and --verify-steps that differ are refused. It prints the\n"
    "                   verifier's table, not step lines\n"
    "  --dump DIR       write the initial model, batch and gradients of step 1 (safetensors)\n"
    "  --load FILE      start from a safetensors model\n"
    "  --json FILE      write the result (loss, verification table) as JSON\n"
    "  --gemm B         the GEMM backend: openblas, onednn, or auto (rank 0 times both on a\n"
    "                   1024^3 product of the run's precision and every rank takes the faster;\n"
    "                   the first line says the pick followed a timing); without the flag the\n"
    "                   environment's HP_GEMM, else the default: onednn for a step of 10 GFLOP\n"
    "                   or more in bf16 where the CPU has bf16 instructions, or in fp32 where\n"
    "                   OpenBLAS runs a core narrower than the CPU's (a preset\n"
    "                   OPENBLAS_CORETYPE); openblas otherwise. The first line names it.\n"
    "                   oneDNN has no bf16 matmul below avx512_core: there onednn in a bf16 run\n"
    "                   is refused (exit 2) and auto takes openblas (docs/portability.md)\n"
    "  --config FILE    a TorchTitan TOML job file (docs/job_file.md; keys: --help-config); the\n"
    "                   command line overrides it. With job.dump_folder D, D/config.toml gets the\n"
    "                   effective config before step 1 (--config on it reruns the job)\n"
    "\n";

// Under pp, each pp rank's measured idle fraction and microbatches in flight (last step).
typedef struct pp_measured { int P; float *idle_slots; } pp_measured;   // (P, 3)

// The conditions every bitwise promise holds under (docs/verification.md): the BLAS, its core and
// the BLAS threads of every rank, fewest and most. Collective: every rank calls it once.
typedef struct blas_conditions { hp_blas_info info; int threads_min, threads_max; } blas_conditions;
static blas_conditions conditions;

static void conditions_measure(void) {
    hp_blas_info_get(&conditions.info);
    int t[2] = { conditions.info.threads, -conditions.info.threads }, r[2];
    MPI_Allreduce(t, r, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    conditions.threads_min = r[0];
    conditions.threads_max = -r[1];
}

// The GEMM backend when the products' bits are not OpenBLAS's: "onednn 2.6.3, isa
// avx512_core_bf16" (hp_gemm_info_line without its prefix and threads), else "".
static void gemm_conditions(char *out, size_t n) {
    out[0] = '\0';
    if (hp_gemm_get_backend() == HP_GEMM_OPENBLAS) return;
    char line[160];
    hp_gemm_info_line(line, sizeof line);
    const char *body = !strncmp(line, "gemm: ", 6) ? line + 6 : line;
    char *threads = strrchr(body, ',');   // ", 1 thread": the BLAS threads say it already
    if (threads && strstr(threads, "thread")) *threads = '\0';
    const size_t len = strlen(body) < n ? strlen(body) : n - 1;   // (a name fits: 96 > ~40)
    memcpy(out, body, len);
    out[len] = '\0';
}

static void conditions_print(FILE *out) {
    const blas_conditions *c = &conditions;
    char text[320], gemm[96];
    hp_blas_conditions_text(text, sizeof text, c->info.blas, c->info.core, c->threads_min, c->threads_max);
    gemm_conditions(gemm, sizeof gemm);
    if (gemm[0]) {   // the products' bits are oneDNN's
        const size_t len = strlen(text);
        snprintf(text + len, sizeof text - len, " and gemm %s", gemm);
    }
    if (c->threads_min == c->threads_max)
        fprintf(out, "verify: bitwise promises hold for this binary with %s (docs/verification.md)\n", text);
    else
        fprintf(out, "verify: ranks run unequal BLAS thread counts (%s): reruns are bitwise only with the "
                "same counts per rank (docs/verification.md)\n", text);
}

// --json: the verification record (verify_record.h) of a verified run, or of a plain run its
// losses (first_step > 1 after --resume) and, under pp, what each pp rank measured. The keys
// are the library's (src/verify/verify_json.c); a new one goes there. Returns 0, or
// HP_EXIT_FAIL after one line when the file cannot be written.
static int write_json(const char *path, const tool_cli *cli, const hp_verify_result *r,
                      const double *losses, int steps, int first_step, const pp_measured *pp,
                      const hp_plan_measured *meas) {
    hp_verify_record rec;
    if (r) hp_verify_record_from_result(&rec, r);
    else {
        hp_verify_record_init(&rec);
        rec.pass = 1;
        rec.steps = steps < HP_VERIFY_MAX_STEPS ? steps : HP_VERIFY_MAX_STEPS;
        for (int s = 0; s < rec.steps; s++) rec.losses[s] = losses[s];
    }
    rec.world = cli->dims.world;
    rec.first_step = first_step;
    snprintf(rec.precision, sizeof rec.precision, "%s", hp_mp_dtype_name(cli->run.mp_param));
    snprintf(rec.blas, sizeof rec.blas, "%s", conditions.info.blas);
    snprintf(rec.blas_core, sizeof rec.blas_core, "%s", conditions.info.core);
    gemm_conditions(rec.gemm, sizeof rec.gemm);
    rec.blas_threads_min = conditions.threads_min;
    rec.blas_threads_max = conditions.threads_max;
    if (pp && pp->P > 1 && pp->idle_slots) {
        rec.pp_stats = pp->P < HP_VERIFY_MAX_PP ? pp->P : HP_VERIFY_MAX_PP;
        for (int p = 0; p < rec.pp_stats; p++) {
            rec.pp_idle[p] = pp->idle_slots[3 * p];
            rec.pp_in_flight[p] = pp->idle_slots[3 * p + 1];
            rec.pp_activation_bytes[p] = pp->idle_slots[3 * p + 2];
        }
    }
    if (meas) {   // world rank 0's memory and traffic, and the planner's prediction of them
        hp_plan_check chk;
        const int c = hp_plan_check_run(&cli->model, &cli->dims, &cli->run, 0, meas, HP_PLAN_PEAK_TOL, &chk);
        hp_verify_record_add_measured(&rec, meas, c >= 0 ? &chk : NULL);
    }
    const int e = hp_verify_record_write(&rec, path);
    if (e != 0) fprintf(stderr, "hp: cannot write --json file '%s'\n", path);
    return e ? HP_EXIT_FAIL : 0;
}

// One line naming the step when its loss or grad norm is not finite (every rank agrees).
static void report_nonfinite(const hp_step_stats *st, int rank) {
    if (rank == 0)
        fprintf(stderr, "hp: step %d: loss %g, grad norm %g: not finite; stopped before the "
                "optimiser step\n", st->step, st->loss, st->grad_norm);
}

// Under pp: each pp rank's measured idle fraction of the last step and its microbatches in
// flight (its first inner rank's), printed unless quiet and kept (on rank 0) for --json.
static pp_measured measure_pp(hp_trainer *tr, int rank, int quiet) {
    const hp_dims *d = hp_comm_dims(hp_trainer_comm(tr));
    pp_measured pm = { d->pp, NULL };
    float mine[3] = { (float)hp_trainer_pp_idle(tr), (float)hp_trainer_pp_slots(tr),
                      (float)hp_trainer_activation_bytes(tr) };
    float *all = rank == 0 ? malloc((size_t)d->world * 3 * sizeof(float)) : NULL;
    hp_gather_to_root(hp_trainer_comm(tr), all, mine, 3);
    if (rank == 0 && all) {
        pm.idle_slots = malloc((size_t)d->pp * 3 * sizeof(float));
        for (int p = 0; pm.idle_slots && p < d->pp; p++)
            memcpy(pm.idle_slots + 3 * p, all + (size_t)p * (d->world / d->pp) * 3, 3 * sizeof(float));
    }
    if (rank == 0 && !quiet) {
        printf("pipeline (last step): ");
        for (int p = 0; p < d->pp; p++) {
            const float *x = all + (size_t)p * (d->world / d->pp) * 3;
            printf("%spp rank %d idle %.3f, %d microbatch%s in flight (%.2f MiB of activations)",
                   p ? "; " : "", p, x[0], (int)x[1], x[1] == 1 ? "" : "es", x[2] / (1024.0 * 1024.0));
        }
        printf("\n");
    }
    free(all);
    return pm;
}

// --async-tp (docs/async_tp.md): the step's fused ops run overlapped, the fewest over the ranks,
// logged; none on some rank fails the run (torchtitan#3869: async TP silently not applied).
static int check_async_tp(hp_trainer *tr, int step, int rank, int quiet) {
    int ops[2] = { (int)hp_trainer_async_tp_ops(tr), 0 };
    ops[1] = ops[0];
    hp_mpi_allreduce(MPI_COMM_WORLD, &ops[0], 1, MPI_INT, MPI_MIN, "async-tp-count");
    hp_mpi_allreduce(MPI_COMM_WORLD, &ops[1], 1, MPI_INT, MPI_MAX, "async-tp-count");
    if (ops[0] == 0) {
        if (rank == 0)
            fprintf(stderr, "hp: --async-tp: step %d ran 0 fused ops overlapped on some rank (max %d): "
                    "async TP was not applied (torchtitan#3869)\n", step, ops[1]);
        return HP_EXIT_FAIL;
    }
    if (rank == 0 && !quiet)
        printf("async tp: step %d: %d fused ops overlapped per rank (min %d, max %d)\n", step, ops[0],
               ops[0], ops[1]);
    return HP_EXIT_OK;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// A validation round after step k (docs/metrics.md): every rank runs it, rank 0 logs it.
static void validate(const hp_validation *val, hp_trainer *tr, hp_metrics *mt, int step) {
    int64_t tokens = 0;
    double seconds = 0.0;
    const double loss = hp_validation_round(val, tr, &tokens, &seconds);
    hp_metrics_val(mt, step, loss, tokens, seconds);
}

static int train(const tool_cli *cli, const float *init, int rank) {
    char err[256];
    hp_validation val;   // every rank opens the set; all see the same verdict, rank 0 says it
    if (hp_validation_open(&val, cli, rank == 0) != 0) return HP_EXIT_CONFIG;
    hp_trainer *tr = hp_trainer_init(MPI_COMM_WORLD, &cli->model, &cli->dims, &cli->run, err, sizeof err);
    if (!tr) { if (rank == 0) fprintf(stderr, "hp: %s\n", err); hp_validation_close(&val); return HP_EXIT_CONFIG; }
    if (init) hp_trainer_set_params(tr, init);
    double *losses = calloc((size_t)cli->run.steps + 1, sizeof(double));
    const int64_t full_n = hp_trainer_params(tr)->full_numel;
    int rc = HP_EXIT_OK;
    int first = 0;   // steps done before this run: the checkpoint's step after --resume
    if (cli->resume && (first = tool_run_ckpt_resume(tr, cli, rank)) < 0) {
        free(losses);
        hp_trainer_free(tr);
        hp_validation_close(&val);
        return HP_EXIT_CONFIG;
    }
    hp_metrics *mt = hp_metrics_open(cli, tr, &val, first + 1, conditions.info.threads, MPI_COMM_WORLD);
    if (!mt) {
        if (rank == 0) fprintf(stderr, "hp: out of memory (metrics)\n");
        rc = HP_EXIT_FAIL;
    }
    tool_sampler smp;
    if (tool_sampler_open(&smp, cli, rank) != 0) rc = HP_EXIT_CONFIG;   // (checked before the launch)
    for (int s = first; s < cli->run.steps && rc == HP_EXIT_OK; s++) {
        hp_step_stats st;
        const double t0 = now_s();
        if (s == 0 && cli->dump_dir) {
            // the step in phases, to catch gradients before clipping
            float *p0 = rank == 0 ? malloc((size_t)full_n * sizeof(float)) : NULL;
            float *g = rank == 0 ? malloc((size_t)full_n * sizeof(float)) : NULL;
            hp_trainer_gather_params(tr, p0);
            st.loss = hp_trainer_forward_backward(tr);
            hp_trainer_gather_grads(tr, g);
            // rank 0 alone writes; every rank learns whether it could, so that all of them
            // stop here together instead of the others waiting in the next step's collectives
            int dump_failed = hp_dump_step1(tr, cli->dump_dir, p0, g, st.loss, err, sizeof err) != 0;
            if (dump_failed) fprintf(stderr, "hp: --dump: %s\n", err);
            hp_mpi_allreduce(MPI_COMM_WORLD, &dump_failed, 1, MPI_INT, MPI_MAX, "dump-verdict");
            if (dump_failed) rc = HP_EXIT_FAIL;
            st.grad_norm = hp_trainer_clip(tr);
            st.step = 1; st.ms = 0; st.tokens_per_s = 0;
            if (hp_step_finite(st.loss, st.grad_norm)) hp_trainer_optimizer_step(tr);
            else rc = HP_EXIT_FAIL;
            free(p0); free(g);
        } else {
            rc = hp_trainer_step(tr, &st);
        }
        losses[s] = st.loss;
        if (rc == HP_EXIT_OK && cli->run.async_tp) rc = check_async_tp(tr, st.step, rank, cli->quiet);
        // the step's own wall time (hp_trainer_step's, barrier to barrier; the phased step 1 of
        // --dump: its gathers and writes too)
        const double seconds = (s == 0 && cli->dump_dir) ? now_s() - t0 : st.ms * 1e-3;
        const int finite = hp_step_finite(st.loss, st.grad_norm);
        hp_metrics_step(mt, &st, seconds, !finite);   // a stopping step is logged, whatever log_freq
        if (!finite) report_nonfinite(&st, rank);
        if (rc == HP_EXIT_OK && hp_validation_due(&val, st.step, cli->run.steps)) validate(&val, tr, mt, st.step);
        if (rc == HP_EXIT_OK && tool_sampler_due(&smp, st.step)) rc = tool_sampler_run(&smp, tr, mt, st.step);
        if (rc == HP_EXIT_OK) rc = tool_run_ckpt_after_step(tr, cli, st.step, rank);
    }
    tool_sampler_close(&smp);
    const int mrc = hp_metrics_close(mt);
    if (rc == HP_EXIT_OK) rc = mrc;
    hp_validation_close(&val);
    pp_measured pm = { 0, NULL };
    if (cli->dims.pp > 1) pm = measure_pp(tr, rank, cli->quiet);
    hp_plan_measured meas;
    hp_trainer_measured(tr, &meas);
    if (rank == 0 && cli->json_out &&
        write_json(cli->json_out, cli, NULL, losses + first, cli->run.steps - first, first + 1, &pm,
                   &meas) != 0)
        rc = HP_EXIT_FAIL;
    free(pm.idle_slots);
    free(losses);
    hp_trainer_free(tr);
    return rc;
}

// --job.dump_folder and the validation set (docs/metrics.md): one line and HP_EXIT_CONFIG before
// any rank trains, or 0.
static int check_metrics_inputs(const tool_cli *cli) {
    if (cli->verify && cli->val_enable) {
        fprintf(stderr, "hp: --validation.enable needs a training run; --verify runs the verifier's steps "
                "(drop one of them)\n");
        return HP_EXIT_CONFIG;
    }
    if (cli->dump_folder && tool_cli_check_dir("--job.dump_folder", cli->dump_folder)) return HP_EXIT_CONFIG;
    if (tool_sampler_check(cli) != 0) return HP_EXIT_CONFIG;
    hp_validation v;
    const int e = hp_validation_open(&v, cli, 1);
    hp_validation_close(&v);
    return e;
}

// --verify's trajectory: --verify-steps N, else --steps N given on the command line (`hp run
// --steps 8 --verify` compares 8 losses, not the default 5), else 5. A job file's training.steps
// is a training length (llama3_small.toml's 300) and leaves the default. Both flags with two
// numbers: one line and HP_EXIT_CONFIG, since one of them would be ignored.
static int resolve_verify_steps(tool_cli *cli) {
    const int row = hp_job_flag_key_row(F_STEPS);
    const int steps_given = row >= 0 && cli->key_cmdline[row];
    if (!cli->verify || !steps_given) return 0;
    if (cli->verify_steps_given && cli->verify_steps != cli->run.steps) {
        fprintf(stderr, "hp: --verify compares --verify-steps %d losses, but --steps asks for %d: give one of "
                "them, or the same number\n", cli->verify_steps, cli->run.steps);
        return HP_EXIT_CONFIG;
    }
    if (cli->run.steps > 1000) {   // --verify-steps' own bound: the reference trains them all too
        fprintf(stderr, "hp: --verify follows --steps %d, more than the 1000 losses it compares at most "
                "(--verify-steps N sets fewer)\n", cli->run.steps);
        return HP_EXIT_CONFIG;
    }
    cli->verify_steps = cli->run.steps;
    return 0;
}

// Under a launcher that hp did not start (mpirun, srun), the checks of the self-launch run
// here: on world rank 0, with its node's rank count, and every rank learns the verdict.
static int check_under_launcher(const tool_cli *cli, int rank) {
    MPI_Comm node;
    int local = 1, bad = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    if (rank == 0 && !getenv("HP_LAUNCHED"))
        bad = tool_cli_check_outputs(cli) || check_metrics_inputs(cli) ||
              tool_cli_check_memory(cli, &cli->dims, local);
    hp_mpi_broadcast(MPI_COMM_WORLD, &bad, 1, MPI_INT, 0, "launch-check");
    return bad ? HP_EXIT_CONFIG : 0;
}

static const char *const eval_usage =
    "usage: hp eval (--checkpoint D[/step-K] | --load FILE|DIR) --data F [--batches N] [--json F]\n"
    "               [--tokenizer PATH] [degrees and model flags of hp run]\n"
    "\n"
    "The loss of a model on a dataset, nothing trained: from a checkpoint (any layout), hp's\n"
    "file or a Hugging Face folder (--load), else the seed's initial model; on --data (any\n"
    "format hp run reads), N batches of --batch sequences of --seq-len (default: every full\n"
    "batch), under any layout of the degree flags. Prints the loss, the perplexity and the bits\n"
    "per byte: with --tokenizer PATH (a tokenizer.model or its folder) over the bytes the target\n"
    "tokens' pieces stand for, else where a token is a byte (a 256-token model); --json F\n"
    "writes them.\n"
    "Every flag of hp run is taken (hp run --help); --batches N is --validation.steps N.\n"
    "\n";
static int eval_mode;   // hp eval: hp run with its validation round alone (cmd_eval.c)

int tool_cmd_eval(int argc, char **argv) {
    int n = 0;
    char **a = tool_eval_argv(argc, argv, &n);
    if (!a) { fprintf(stderr, "hp: out of memory\n"); return HP_EXIT_FAIL; }
    eval_mode = 1;
    const int rc = tool_cmd_run(n, a);
    free(a);
    return rc;
}

int tool_cmd_run(int argc, char **argv) {
    tool_cli cli;
    int e = tool_cli_parse(&cli, argc, argv, 2, NULL, eval_mode ? eval_usage : run_usage);
    if (e < 0) return HP_EXIT_OK;
    if (e) return e;
    if (cli.n_rest) {
        fprintf(stderr, "hp run: unexpected argument '%s'\n", cli.rest[0]);
        return HP_EXIT_CONFIG;
    }
    if (cli.list_failpoints) { hp_failpoint_print_list(stdout); return HP_EXIT_OK; }
    if (eval_mode) cli.run.data_path = NULL;   // nothing is trained: a job file's training data is not read
    {
        char line[4600];
        if ((e = tool_run_model_of_load(&cli, line, sizeof line))) {
            fprintf(stderr, "hp: --load: %s\n", line);
            return e;
        }
    }
    if ((e = resolve_verify_steps(&cli))) return e;
    if ((e = tool_run_ckpt_flags(&cli))) return e;
    const char *gemm;   // --gemm, HP_GEMM or the default: a bad HP_GEMM is refused before any rank
    if ((e = tool_gemm_name(&cli, &gemm))) return e;
    char fp_err[256];   // HP_FAILPOINT=name[,name]: an unknown name is refused before any rank
    if (hp_failpoint_init(fp_err, sizeof fp_err) != 0) {
        fprintf(stderr, "hp: %s\n", fp_err);
        return HP_EXIT_CONFIG;
    }
    const int under_mpi = tool_launch_under_mpi();
    if (!under_mpi) {
        // validate before starting any rank: bad input exits 2 here, fast
        hp_dims d = cli.dims;
        d.world = cli.nproc;
        char err[256];
        if (hp_dims_validate(&d, &cli.model, &cli.run, err, sizeof err) != 0) {
            fprintf(stderr, "hp: %s\n", err);
            return HP_EXIT_CONFIG;
        }
        // input files too: one line and exit 2 before any rank starts
        if (cli.run.data_path) {
            hp_data *data = hp_data_open(cli.run.data_path, cli.run.data_format, cli.model.vocab_size, err, sizeof err);
            if (!data) { fprintf(stderr, "hp: training.dataset_path (--data): %s\n", err); return HP_EXIT_CONFIG; }
            const int short_data = hp_data_check_batch(data, cli.run.seq_len, cli.run.batch, err, sizeof err);
            const int64_t nw = hp_data_windows(data, cli.run.seq_len);
            hp_data_close(data);
            if (short_data) { fprintf(stderr, "hp: training.dataset_path (--data): %s\n", err); return HP_EXIT_CONFIG; }   // Nw < B
            if ((int64_t)cli.run.steps * cli.run.batch > nw)   // past Nw: a new epoch (docs/data.md)
                fprintf(stderr, "hp: note: %lld windows of seq_len+1 = %d tokens hold %lld full steps of %d sequences; "
                        "in step %lld the windows wrap to 0 (a new epoch)\n", (long long)nw, cli.run.seq_len + 1,
                        (long long)(nw / cli.run.batch), cli.run.batch, (long long)(nw / cli.run.batch + 1));
        }
        if ((e = tool_cli_check_outputs(&cli)) || (e = check_metrics_inputs(&cli)) ||
            (e = tool_cli_check_memory(&cli, &d, d.world)))
            return e;
        if (cli.load_file) {
            tool_cli probe = cli;
            probe.dims = d;
            float *full = tool_run_load_model(&probe, 0);
            if (!full) return HP_EXIT_CONFIG;
            free(full);
        }
        if ((e = tool_run_ckpt_precheck(&cli))) return e;   // --resume: refused before any rank
        // the ranks parse the same command line, --config FILE included: they read the file again
        if (d.world > 1) {
            hp_job_print_notes(&cli, stderr);
            hp_job_config_pin(&cli, argc, argv);
            return tool_launch_self(d.world, argc, argv);
        }
    }

    tool_reexec(argv);   // the kernels this CPU deserves, OpenMP's wait policy, before MPI_Init
    if (!under_mpi) hp_job_print_notes(&cli, stderr);   // after the re-exec: said once
    if (cli.timeout > 0) {
        // the comm layer's watchdog reads HP_TIMEOUT; relaunched ranks parse --timeout too
        char t[32];
        snprintf(t, sizeof t, "%g", (double)cli.timeout);
        setenv("HP_TIMEOUT", t, 1);
    }
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    cli.dims.world = world;
    char err[256];
    if (hp_dims_validate(&cli.dims, &cli.model, &cli.run, err, sizeof err) != 0) {
        if (rank == 0) fprintf(stderr, "hp: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;   // every rank sees the same rule: no one is left waiting
    }
    if (check_under_launcher(&cli, rank) != 0) {
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    int changed = hp_job_config_changed(&cli), any_changed = 0;   // the job file hp run checked?
    MPI_Allreduce(&changed, &any_changed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_changed) {
        if (rank == 0)
            fprintf(stderr, "hp: --config %s changed while the ranks started (every rank reads it): run again\n",
                    cli.config_file);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    if (rank == 0 && under_mpi && !getenv("HP_LAUNCHED")) hp_job_print_notes(&cli, stderr);
    // the effective job file: {job.dump_folder}/config.toml before step 1, job.print_config prints it
    int saved = 0;
    if (rank == 0) {
        saved = hp_job_save_config(&cli, argc, argv);
        if (cli.print_config) hp_job_write_config(&cli, stdout, argc, argv);
    }
    hp_mpi_broadcast(MPI_COMM_WORLD, &saved, 1, MPI_INT, 0, "config-saved");
    if (saved) {
        MPI_Finalize();
        return HP_EXIT_FAIL;
    }
    char why[256];
    tool_gemm_apply(gemm, &cli, MPI_COMM_WORLD, why, sizeof why);   // every rank takes rank 0's pick
    if (rank == 0 && !cli.quiet) {
        char b[512];
        printf("%s\n", tool_first_line(b, sizeof b));
        if (*why) printf("hp: %s\n", why);
    }
    conditions_measure();
    if (rank == 0) {   // a clamped schedule is said, as TorchTitan warns
        char note[256];
        hp_lr_schedule_resolve(&cli.run, note, sizeof note);
        if (*note) fprintf(stderr, "hp: note: %s\n", note);
    }
    float *init = NULL;
    if (cli.load_file && !(init = tool_run_load_model(&cli, rank))) {
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    int rc;
    if (cli.verify) {
        hp_verify_opts o = hp_verify_opts_default(&cli.run);
        o.steps = cli.verify_steps > 0 ? cli.verify_steps : 1;   // resolve_verify_steps
        o.dump_dir = cli.dump_dir;
        o.load_full = init;
        hp_verify_result r;
        rc = hp_verify_run(MPI_COMM_WORLD, &cli.model, &cli.dims, &cli.run, &o, &r);
        if (rank == 0) {
            if (!cli.quiet) { hp_verify_print(stdout, &r); conditions_print(stdout); }
            else printf("verify: %s\n", r.pass ? "PASS" : "FAIL");
            if (cli.json_out && write_json(cli.json_out, &cli, &r, r.losses, r.steps, 1, NULL, &r.measured) != 0)
                rc = HP_EXIT_FAIL;
        }
        hp_verify_result_free(&r);
    } else {
        rc = eval_mode ? tool_eval(&cli, init, rank) : train(&cli, init, rank);
    }
    free(init);
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
