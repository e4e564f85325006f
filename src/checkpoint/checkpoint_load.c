// checkpoint_load.c - finding a checkpoint (hp_ckpt_resolve), refusing a bad one before any
// rank starts (hp_ckpt_check) and loading it under any layout (hp_ckpt_load).
//
// Resharding is box intersection: a rank's shard of a tensor is a box of the full tensor
// (hp_ck_shard_box), every piece in the index is one too; the rank reads, from each piece
// that overlaps its box, only the overlapping bytes: whole contiguous runs of the piece's
// row-major data (one pread per run), never a piece it does not need.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "hyperpar/data.h"
#include "hyperpar/optim.h"
#include "checkpoint/checkpoint_internal.h"
#include "train/trainer_internal.h"
#include "util/file_io.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

int hp_ckpt_resolve(const char *path, char *step_dir, size_t n, char *err, size_t errlen) {
    char p[4200];
    snprintf(p, sizeof p, "%s/index.json", path);
    if (is_file(p)) { snprintf(step_dir, n, "%s", path); return 0; }
    snprintf(p, sizeof p, "%s/latest", path);
    FILE *f = fopen(p, "r");
    if (!f) {
        snprintf(err, errlen, "checkpoint '%s': neither a step folder (no index.json) nor a "
                 "checkpoint folder (no latest pointer)", path);
        return HP_EXIT_CONFIG;
    }
    char name[256] = "";
    const int got = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    name[strcspn(name, "\r\n")] = '\0';
    int k = -1;
    char tail;
    if (!got || sscanf(name, "step-%d%c", &k, &tail) != 1 || k < 0) {
        snprintf(err, errlen, "checkpoint %s: the latest pointer holds '%.64s', not step-K", p, name);
        return HP_EXIT_CONFIG;
    }
    snprintf(step_dir, n, "%s/%s", path, name);
    snprintf(p, sizeof p, "%s/index.json", step_dir);
    if (!is_file(p)) {
        snprintf(err, errlen, "checkpoint %s: the latest pointer names %s, which has no index.json", path, name);
        return HP_EXIT_CONFIG;
    }
    return 0;
}

static void shape_str(char *b, size_t n, int ndim, const int64_t *s) {
    size_t o = 0;
    b[0] = '\0';
    for (int i = 0; i < ndim && o < n; i++)
        o += (size_t)snprintf(b + o, n - o, "%s%lld", i ? "," : "", (long long)s[i]);
}

// The checks that need the index only (and the data file): the same on every rank.
static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

// 1 when this run's dataset is not the checkpoint's (format, or a file's base name, size or
// token count; the folder may move), with "what: this run's vs the checkpoint's" in why.
static int other_dataset(const hp_data *data, const hp_ck_index *ix, char *why, size_t n) {
    const char *fmt = hp_data_format_name(hp_data_found_format(data));
    if (strcmp(fmt, ix->data_format)) {
        snprintf(why, n, "format %s in this run, %s in the checkpoint", fmt, ix->data_format);
        return 1;
    }
    if (hp_data_n_files(data) != ix->data_n_files) {
        snprintf(why, n, "%d files in this run, %d in the checkpoint", hp_data_n_files(data), ix->data_n_files);
        return 1;
    }
    for (int i = 0; i < ix->data_n_files; i++) {
        int64_t bytes = 0, tokens = 0;
        const char *name = base_name(hp_data_file(data, i, &bytes, &tokens));
        const hp_ck_data_file *f = &ix->data_files[i];
        if (strcmp(name, base_name(f->name)) || bytes != f->bytes || tokens != f->tokens) {
            snprintf(why, n, "file %d is %s (%lld bytes, %lld tokens) in this run, %s (%lld bytes, %lld tokens) in the "
                     "checkpoint", i, name, (long long)bytes, (long long)tokens, base_name(f->name),
                     (long long)f->bytes, (long long)f->tokens);
            return 1;
        }
    }
    return 0;
}

static int check_index(const char *step_dir, const hp_ck_index *ix, const hp_model_config *m,
                       const hp_run_config *rc, char *err, size_t errlen) {
    char why[800];
    if (hp_ck_model_compare(m, &ix->model, why, sizeof why) != 0) {
        snprintf(err, errlen, "checkpoint %s/index.json: %s", step_dir, why);
        return HP_EXIT_CONFIG;
    }
    // names and shapes: the table of a single process has every full shape
    hp_dims d1 = hp_dims_default();
    d1.dp_shard = 1; d1.sp = 0; d1.world = 1;
    hp_param_table t;
    if (hp_params_build(&t, m, &d1, 0) != 0) { snprintf(err, errlen, "out of memory"); return HP_EXIT_CONFIG; }
    int rc_ = 0;
    for (int i = 0; i < t.n && !rc_; i++) {
        const hp_param *p = &t.p[i];
        const int k = hp_ck_index_find_tensor(ix, p->name);
        if (k < 0) {
            snprintf(err, errlen, "checkpoint %s/index.json: tensor %s: missing from the checkpoint", step_dir, p->name);
            rc_ = HP_EXIT_CONFIG;
            break;
        }
        const hp_ck_tensor *x = &ix->tensors[k];
        int same = x->ndim == p->ndim;
        for (int j = 0; same && j < p->ndim; j++) same = x->shape[j] == p->shape[j];
        if (!same) {
            char a[64], b[64];
            shape_str(a, sizeof a, x->ndim, x->shape);
            shape_str(b, sizeof b, p->ndim, p->shape);
            snprintf(err, errlen, "checkpoint %s/index.json: tensor %s: shape [%s] in the checkpoint, the model needs [%s]",
                     step_dir, p->name, a, b);
            rc_ = HP_EXIT_CONFIG;
        }
    }
    for (int k = 0; k < ix->n_tensors && !rc_; k++)
        if (hp_params_find(&t, ix->tensors[k].name) < 0) {
            snprintf(err, errlen, "checkpoint %s/index.json: tensor %s: in the checkpoint, not in the model", step_dir,
                     ix->tensors[k].name);
            rc_ = HP_EXIT_CONFIG;
        }
    hp_params_free(&t);
    if (rc_) return rc_;
    const char *opt = rc->optimizer == HP_OPT_ADAMW ? "adamw" : "sgd";
    if ((int)rc->optimizer != ix->optimizer) {
        snprintf(err, errlen, "checkpoint %s/index.json: optimizer %s in this run, %s in the checkpoint", step_dir, opt,
                 ix->optimizer == HP_OPT_ADAMW ? "adamw" : "sgd");
        return HP_EXIT_CONFIG;
    }
    if ((float)ix->lr != rc->lr) {
        snprintf(err, errlen, "checkpoint %s/index.json: lr %g in this run, %g in the checkpoint (constant lr)", step_dir,
                 (double)rc->lr, ix->lr);
        return HP_EXIT_CONFIG;
    }
    if (ix->seed != rc->seed) {
        snprintf(err, errlen, "checkpoint %s/index.json: seed %llu in this run, %llu in the checkpoint", step_dir,
                 (unsigned long long)rc->seed, (unsigned long long)ix->seed);
        return HP_EXIT_CONFIG;
    }
    if (ix->data_text != (rc->data_path != NULL)) {
        snprintf(err, errlen, "checkpoint %s/index.json: data: %s in this run, %s in the checkpoint", step_dir,
                 rc->data_path ? "text" : "synthetic", ix->data_text ? "text" : "synthetic");
        return HP_EXIT_CONFIG;
    }
    if (ix->data_text) {
        hp_data *data = hp_data_open(rc->data_path, rc->data_format, m->vocab_size, why, sizeof why);
        if (!data) { snprintf(err, errlen, "training.dataset_path (--data): %s", why); return HP_EXIT_CONFIG; }
        const int64_t windows = hp_data_windows(data, rc->seq_len);
        const int other = ix->data_format[0] ? other_dataset(data, ix, why, sizeof why) : 0;
        hp_data_close(data);
        if (other) {
            snprintf(err, errlen, "checkpoint %s/index.json: another dataset: %s", step_dir, why);
            return HP_EXIT_CONFIG;
        }
        const int64_t next = hp_ck_next_window(ix->step, rc->batch, windows);
        if (windows != ix->data_windows || next != ix->data_next_window) {
            snprintf(err, errlen, "checkpoint %s/index.json: data position: this run would resume at window %lld of %lld, "
                     "the checkpoint at window %lld of %lld", step_dir, (long long)next, (long long)windows,
                     (long long)ix->data_next_window, (long long)ix->data_windows);
            return HP_EXIT_CONFIG;
        }
    }
    if (hp_ck_index_check_coverage(ix, rc->optimizer == HP_OPT_ADAMW ? 3 : 1, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s/index.json: %s", step_dir, why);
        return HP_EXIT_CONFIG;
    }
    for (int f = 0; f < ix->n_files; f++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", step_dir, ix->files[f].name);
        struct stat sb;
        if (stat(path, &sb) != 0) {
            snprintf(err, errlen, "checkpoint %s: %s", path, strerror(errno));
            return HP_EXIT_CONFIG;
        }
        if ((int64_t)sb.st_size != ix->files[f].bytes) {
            // name the first tensor whose bytes the file lacks
            const char *t = "(header)";
            for (int i = 0; i < ix->n_pieces; i++)
                if (ix->pieces[i].file == f && ix->pieces[i].offset + ix->pieces[i].nbytes > (int64_t)sb.st_size) {
                    t = ix->tensors[ix->pieces[i].tensor].name;
                    break;
                }
            snprintf(err, errlen, "checkpoint %s: tensor %s: %s: %lld bytes, the index says %lld", path, t,
                     (int64_t)sb.st_size < ix->files[f].bytes ? "truncated" : "longer than written",
                     (long long)sb.st_size, (long long)ix->files[f].bytes);
            return HP_EXIT_CONFIG;
        }
    }
    return 0;
}

int hp_ckpt_schedule_note(const char *step_dir, const hp_run_config *rc, char *note, size_t n) {
    note[0] = '\0';
    hp_ck_index ix;
    char err[256];
    if (hp_ck_index_load(step_dir, &ix, err, sizeof err) != 0) return 0;   // hp_ckpt_check says why
    const hp_lr_schedule sc = hp_lr_schedule_resolve(rc, NULL, 0);
    const char *decay = hp_ck_decay_name[rc->decay_type];
    const int differs = ix.has_schedule &&
        (ix.sched_T != sc.T || ix.sched_W != sc.W || ix.sched_D != sc.D || ix.sched_S != sc.S ||
         strcmp(ix.sched_decay, decay) != 0 || ix.sched_min_lr_factor != rc->min_lr_factor);
    if (differs)
        snprintf(note, n, "the checkpoint's lr schedule (total %d, warmup %d, decay %d %s, stable %d, "
                 "min_lr_factor %g) is not this run's (total %d, warmup %d, decay %d %s, stable %d, "
                 "min_lr_factor %g): step %d takes lr %g, where the saved run's would be %g",
                 ix.sched_T, ix.sched_W, ix.sched_D, ix.sched_decay, ix.sched_S, ix.sched_min_lr_factor,
                 sc.T, sc.W, sc.D, decay, sc.S, rc->min_lr_factor, ix.step + 1,
                 (double)hp_lr_at(rc, ix.step + 1), ix.sched_lr_next);
    hp_ck_index_free(&ix);
    return differs;
}

static void piece_desc(char *b, size_t n, const hp_ck_index *ix, const hp_ck_piece *p) {
    char bs[96];
    hp_box_str(&p->box, bs, sizeof bs);
    snprintf(b, n, "tensor %s (%s, box %s)", ix->tensors[p->tensor].name, hp_ck_kind_name[p->kind], bs);
}

int hp_ckpt_check(const char *step_dir, const hp_model_config *m, const hp_run_config *rc,
                  int check_crc, int *step, char *err, size_t errlen) {
    hp_ck_index ix;
    int e = hp_ck_index_load(step_dir, &ix, err, errlen);
    if (e) return e;
    if (step) *step = ix.step;
    e = check_index(step_dir, &ix, m, rc, err, errlen);
    for (int f = 0; !e && check_crc && f < ix.n_files; f++) {
        char path[4200];
        unsigned char *buf = NULL;
        size_t len = 0;
        if ((e = hp_ck_read_file(step_dir, &ix, f, path, sizeof path, &buf, &len, err, errlen))) break;
        const uint32_t crc = hp_ck_crc32(buf, len);
        if (crc != ix.files[f].crc) {
            // which piece: its own CRC tells; else the header was hit
            char what[200] = "header";
            for (int i = 0; i < ix.n_pieces; i++) {
                const hp_ck_piece *p = &ix.pieces[i];
                if (p->file == f && hp_ck_crc32(buf + p->offset, (size_t)p->nbytes) != p->crc) {
                    piece_desc(what, sizeof what, &ix, p);
                    break;
                }
            }
            snprintf(err, errlen, "checkpoint %s: %s: CRC32 0x%08x, the index says 0x%08x (corrupted)", path, what,
                     (unsigned)crc, (unsigned)ix.files[f].crc);
            e = HP_EXIT_CONFIG;
        }
        free(buf);
    }
    hp_ck_index_free(&ix);
    return e;
}


// Reads the part `region` of piece p (open as fd) into dst: one pread per contiguous run of
// the piece's row-major data. A region that is the whole piece is one run, and *crc gets
// its CRC32. Returns bytes read, or -1.
static int64_t read_overlap(int fd, const hp_ck_piece *p, const hp_box *region, float *dst,
                            const int64_t *dst_origin, const int64_t *dst_dims, uint32_t *crc) {
    const int nd = p->box.ndim;
    int64_t ext[HP_CKPT_MAXDIM];
    for (int k = 0; k < nd; k++) ext[k] = p->box.hi[k] - p->box.lo[k];
    // j: the outermost dim of a run; every dim inside it is taken whole
    int j = nd - 1;
    while (j > 0 && region->lo[j] == p->box.lo[j] && region->hi[j] == p->box.hi[j]) j--;
    int64_t inner = 1;
    for (int k = j + 1; k < nd; k++) inner *= ext[k];
    const int64_t run_n = (region->hi[j] - region->lo[j]) * inner;
    float *tmp = malloc((size_t)run_n * sizeof(float));
    if (!tmp) return -1;
    int64_t idx[HP_CKPT_MAXDIM], total = 0;
    for (int k = 0; k < nd; k++) idx[k] = region->lo[k];
    for (;;) {
        // the run at (idx[0..j), region->lo[j], piece start of the inner dims)
        hp_box run = p->box;
        for (int k = 0; k < j; k++) { run.lo[k] = idx[k]; run.hi[k] = idx[k] + 1; }
        run.lo[j] = region->lo[j];
        run.hi[j] = region->hi[j];
        int64_t off = 0;
        for (int k = 0; k < nd; k++) off = off * ext[k] + (run.lo[k] - p->box.lo[k]);
        const size_t len = (size_t)run_n * sizeof(float);
        size_t got = 0;
        while (got < len) {
            const ssize_t r = pread(fd, (char *)tmp + got, len - got,
                                    (off_t)(p->offset + off * 4 + (int64_t)got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { free(tmp); return -1; }
            got += (size_t)r;
        }
        int64_t run_dims[HP_CKPT_MAXDIM];
        for (int k = 0; k < nd; k++) run_dims[k] = run.hi[k] - run.lo[k];
        hp_box_copy(&run, tmp, run.lo, run_dims, dst, dst_origin, dst_dims);
        if (hp_box_equal(&run, &p->box)) *crc = hp_ck_crc32(tmp, len);
        total += (int64_t)len;
        int k = j - 1;   // next combination of the outer dims
        while (k >= 0 && ++idx[k] == region->hi[k]) { idx[k] = region->lo[k]; k--; }
        if (k < 0) break;
    }
    free(tmp);
    return total;
}

int hp_ck_env_number(const char *name) {
    const char *r = getenv(name);
    if (!r) return -1;
    char *end = NULL;
    errno = 0;
    const long v = strtol(r, &end, 10);
    return end == r || *end != '\0' || errno != 0 || v < 0 || v > INT_MAX ? -2 : (int)v;
}

int hp_ckpt_check_env(char *err, size_t errlen) {
    static const char *const names[] = { "HP_CKPT_KILL_RANK", "HP_CKPT_KILL_STEP", "HP_CKPT_LOAD_STOP_RANK" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (hp_ck_env_number(names[i]) == -2) {
            snprintf(err, errlen, "%s=%s: must be a whole number >= 0 (a %s)", names[i],
                     getenv(names[i]), i == 1 ? "step" : "rank");
            return HP_EXIT_CONFIG;
        }
    return 0;
}

// HP_CKPT_LOAD_STOP_RANK=R: rank R freezes (SIGSTOP) once it has read its pieces, before the
// load's CRC collective: the load's counterpart of the save's HP_CKPT_KILL_RANK, for the test
// that a frozen rank ends a resume at the watchdog too. `hp run` refuses a value that is not
// a rank number before it starts (hp_ckpt_check_env); a library caller's job ends here.
static int stop_rank_requested(void) {
    char err[256];
    if (hp_ckpt_check_env(err, sizeof err) != 0) hp_fail_line_and_abort(2, "hp: %s", err);
    return hp_ck_env_number("HP_CKPT_LOAD_STOP_RANK");
}

static void stop_if_requested(int rank, const char *step_dir, int stop_rank) {
    if (stop_rank != rank) return;
    fprintf(stderr, "hp: HP_CKPT_LOAD_STOP_RANK: rank %d stopped in the load of %s (pid %ld)\n", rank,
            step_dir, (long)getpid());
    fflush(stderr);
    raise(SIGSTOP);
}

int hp_ckpt_load(hp_trainer *tr, const char *step_dir, hp_ckpt_stats *st, char *err,
                 size_t errlen) {
    hp_ckpt_stats local = { 0 };
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    err[0] = '\0';
    const int stop_rank = stop_rank_requested();
    hp_mpi_barrier(tr->world, "checkpoint-load-start");
    const double t0 = now_s();
    int world;
    MPI_Comm_size(tr->world, &world);
    hp_ck_index ix;
    int failed = hp_ck_index_load(step_dir, &ix, err, errlen) != 0;
    if (!failed) failed = check_index(step_dir, &ix, &tr->m, &tr->rc, err, errlen) != 0;
    if (hp_ck_agree(tr->world, tr->rank, failed, err, errlen)) { hp_ck_index_free(&ix); return HP_EXIT_CONFIG; }

    const hp_param_table *t = &tr->pt;
    const int kinds = tr->rc.optimizer == HP_OPT_ADAMW ? 3 : 1;
    float *const state[3] = { tr->fsdp.p_shard, tr->fsdp.m_shard, tr->fsdp.v_shard };
    for (int k = 0; k < 3; k++) memset(state[k], 0, (size_t)t->shard_numel * sizeof(float));
    int *fds = malloc((size_t)ix.n_files * sizeof(int) + 1);
    int *checked = calloc((size_t)ix.n_pieces + 1, sizeof(int));   // CRC32 verified by some rank
    for (int f = 0; f < ix.n_files; f++) fds[f] = -1;
    char path[4200];
    // open on first use: a rank opens only the files it reads from
#define FD(f) (fds[f] >= 0 ? fds[f] : (snprintf(path, sizeof path, "%s/%s", step_dir, ix.files[f].name), \
                                       fds[f] = open(path, O_RDONLY)))
    for (int i = 0; i < t->n && !failed; i++) {
        const hp_param *p = &t->p[i];
        hp_box mine;
        int64_t origin[3], dims[3];
        hp_ck_shard_box(p, &mine, origin, dims);
        const int64_t want = hp_box_numel(&mine);
        if (want == 0) continue;
        const int ti = hp_ck_index_find_tensor(&ix, p->name);
        for (int kind = 0; kind < kinds && !failed; kind++) {
            int64_t have = 0;
            for (int j = 0; j < ix.n_pieces && !failed; j++) {
                const hp_ck_piece *pc = &ix.pieces[j];
                hp_box ov;
                if (pc->tensor != ti || (int)pc->kind != kind || !hp_box_intersect(&mine, &pc->box, &ov)) continue;
                const int fd = FD(pc->file);
                uint32_t crc = 0;
                const int whole = hp_box_equal(&ov, &pc->box);
                const int64_t got = fd < 0 ? -1 : read_overlap(fd, pc, &ov, state[kind] + p->shard_offset, origin, dims, &crc);
                char d[200];
                piece_desc(d, sizeof d, &ix, pc);
                if (got < 0) {
                    snprintf(err, errlen, "checkpoint %s/%s: %s: cannot be read (truncated?)", step_dir,
                             ix.files[pc->file].name, d);
                    failed = 1;
                } else if (whole && crc != pc->crc) {
                    snprintf(err, errlen, "checkpoint %s/%s: %s: CRC32 0x%08x, the index says 0x%08x (corrupted)", step_dir,
                             ix.files[pc->file].name, d, (unsigned)crc, (unsigned)pc->crc);
                    failed = 1;
                } else if (whole) {
                    checked[j] = 1;
                }
                have += hp_box_numel(&ov);
                st->bytes += got;
                st->pieces++;
            }
            if (!failed && have != want) {
                snprintf(err, errlen, "checkpoint %s: tensor %s (%s): the pieces cover %lld of this rank's %lld elements",
                         step_dir, p->name, hp_ck_kind_name[kind], (long long)have, (long long)want);
                failed = 1;
            }
        }
    }
    stop_if_requested(tr->rank, step_dir, stop_rank);
    // every piece's CRC32, checked once over the job: by a rank that read it whole, else
    // piece j by rank j mod world (reading it whole once more)
    hp_mpi_allreduce(tr->world, checked, ix.n_pieces, MPI_INT, MPI_MAX, "checkpoint-load-crc");
    for (int j = tr->rank; j < ix.n_pieces && !failed; j += world) {
        const hp_ck_piece *pc = &ix.pieces[j];
        if ((int)pc->kind >= kinds || checked[j]) continue;
        unsigned char *buf = malloc((size_t)pc->nbytes + 1);
        const int fd = FD(pc->file);
        size_t got = 0;
        while (fd >= 0 && buf && got < (size_t)pc->nbytes) {
            const ssize_t r = pread(fd, buf + got, (size_t)pc->nbytes - got, (off_t)(pc->offset + (int64_t)got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        char d[200];
        piece_desc(d, sizeof d, &ix, pc);
        if (got != (size_t)pc->nbytes) {
            snprintf(err, errlen, "checkpoint %s/%s: %s: cannot be read (truncated?)", step_dir, ix.files[pc->file].name, d);
            failed = 1;
        } else {
            st->bytes += (int64_t)got;
            const uint32_t crc = hp_ck_crc32(buf, got);
            if (crc != pc->crc) {
                snprintf(err, errlen, "checkpoint %s/%s: %s: CRC32 0x%08x, the index says 0x%08x (corrupted)", step_dir,
                         ix.files[pc->file].name, d, (unsigned)crc, (unsigned)pc->crc);
                failed = 1;
            }
        }
        free(buf);
    }
#undef FD
    for (int f = 0; f < ix.n_files; f++)
        if (fds[f] >= 0) close(fds[f]);
    free(fds);
    free(checked);
    const int step = ix.step;
    hp_ck_index_free(&ix);
    if (hp_ck_agree(tr->world, tr->rank, failed, err, errlen)) return HP_EXIT_CONFIG;
    tr->step = step;
    hp_mpi_barrier(tr->world, "checkpoint-load-end");
    st->seconds = now_s() - t0;
    st->step = step;
    return 0;
}
