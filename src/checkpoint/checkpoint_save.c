// checkpoint_save.c - hp_ckpt_save: every rank writes the pieces it owns into D/.step-K.tmp,
// rank 0 writes the index, and the folder becomes D/step-K by one rename; D/latest follows
// by write-temp + rename. Crash-safe at every point: until the rename nothing a reader looks
// at has changed.
//
// Ownership: a box of a tensor held by several ranks (replicas over dp_replicate, norms and
// the router gate replicated over tp) is written by the lowest rank holding it, found from
// the parameter tables of the lower ranks (pure functions of the layout): the same
// elements the grad-norm owner of hp_trainer_clip counts, derived instead of restated.
//
// Fault injection: HP_CKPT_KILL_RANK=R (HP_CKPT_KILL_STEP=K) kills rank R (SIGKILL) halfway
// through a save, its file half written: the previous checkpoint must stay intact and
// loadable. HP_CKPT_KILL_SIGNAL=STOP freezes it instead (SIGSTOP): the others must end the
// job at the watchdog, naming the checkpoint's collective they wait in. (An environment
// variable, not an HP_FAILPOINT: those are numeric bugs the verifier must catch, run under
// --verify by tests/failpoints.cmake and hp matrix.)
#include <dirent.h>
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
#include "hyperpar/optim.h"
#include "hyperpar/safetensors.h"
#include "checkpoint/checkpoint_internal.h"
#include "train/trainer_internal.h"
#include "util/file_io.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fsync_path(const char *path) {
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    const int r = fsync(fd);
    close(fd);
    return r;
}

// Removes a folder of plain files (a step folder: nothing nested).
static void remove_flat_dir(const char *path) {
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    char f[4400];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(f, sizeof f, "%s/%s", path, e->d_name);
            unlink(f);
        }
    closedir(d);
    rmdir(path);
}

static int mkdir_p(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = buf + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}


// HP_CKPT_KILL_RANK=R [HP_CKPT_KILL_STEP=K]: rank R dies in the save of step K (default: in
// this process's second save, so that a first complete checkpoint exists).
// `hp run` refuses values that are not whole numbers before it starts (hp_ckpt_check_env);
// a library caller's job ends here.
static int kill_requested(int rank, int step) {
    static int saves = 0;
    saves++;
    char err[256];
    if (hp_ckpt_check_env(err, sizeof err) != 0) hp_fail_line_and_abort(2, "hp: %s", err);
    const int r = hp_ck_env_number("HP_CKPT_KILL_RANK"), k = hp_ck_env_number("HP_CKPT_KILL_STEP");
    if (r != rank) return 0;
    return k >= 0 ? k == step : saves == 2;
}

static cJSON *box_json(const hp_box *b) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < b->ndim; i++) {
        cJSON *r = cJSON_CreateArray();
        cJSON_AddItemToArray(r, cJSON_CreateNumber((double)b->lo[i]));
        cJSON_AddItemToArray(r, cJSON_CreateNumber((double)b->hi[i]));
        cJSON_AddItemToArray(a, r);
    }
    return a;
}

// Writes this rank's file into tmp; *entry receives its index entry (NULL: it owns nothing).
static int write_rank_file(hp_trainer *tr, const char *tmp, cJSON **entry, int64_t *bytes,
                           int *n_pieces, char *err, size_t errlen) {
    *entry = NULL;
    *bytes = 0;
    *n_pieces = 0;
    const hp_param_table *t = &tr->pt;
    const int kinds = tr->rc.optimizer == HP_OPT_ADAMW ? 3 : 1;
    float *const state[3] = { tr->fsdp.p_shard, tr->fsdp.m_shard, tr->fsdp.v_shard };
    int *owned = calloc((size_t)t->n + 1, sizeof(int));
    hp_ck_owned(&tr->m, &tr->d, tr->rank, t, owned);
    int any = 0;
    for (int i = 0; i < t->n; i++) any |= owned[i];
    if (!any) { free(owned); return 0; }

    char fname[64], path[8400];
    snprintf(fname, sizeof fname, "rank-%05d.safetensors", tr->rank);
    snprintf(path, sizeof path, "%s/%s", tmp, fname);
    hp_st_writer *w = hp_st_writer_init();
    cJSON *pieces = cJSON_CreateArray();
    // each piece's CRC32 and size, in file order: the file's CRC32 is combined from them
    uint32_t *pcrc = malloc((size_t)t->n * 3 * sizeof(uint32_t) + 1);
    int64_t *plen = malloc((size_t)t->n * 3 * sizeof(int64_t) + 1);
    int64_t data_off = 0;   // relative to the data section, in the order added
    for (int i = 0; i < t->n; i++) {
        if (!owned[i]) continue;
        const hp_param *p = &t->p[i];
        hp_box b;
        int64_t origin[3], dims[3], shape[3];
        hp_ck_shard_box(p, &b, origin, dims);
        for (int k = 0; k < p->ndim; k++) shape[k] = b.hi[k] - b.lo[k];
        const int64_t n = hp_box_numel(&b);
        float *buf = malloc((size_t)n * sizeof(float));
        for (int kind = 0; kind < kinds; kind++) {
            hp_box_copy(&b, state[kind] + p->shard_offset, origin, dims, buf, b.lo, shape);
            char key[200];
            hp_ck_piece_key(key, sizeof key, (hp_ck_kind)kind, p->name, &b);
            hp_st_writer_add(w, key, HP_DT_F32, p->ndim, shape, buf);
            cJSON *pj = cJSON_CreateObject();
            cJSON_AddStringToObject(pj, "key", key);
            cJSON_AddStringToObject(pj, "tensor", p->name);
            cJSON_AddStringToObject(pj, "kind", hp_ck_kind_name[kind]);
            cJSON_AddItemToObject(pj, "box", box_json(&b));
            cJSON_AddNumberToObject(pj, "offset", (double)data_off);   // made absolute below
            cJSON_AddNumberToObject(pj, "bytes", (double)(n * 4));
            pcrc[*n_pieces] = hp_ck_crc32(buf, (size_t)n * 4);
            plen[*n_pieces] = n * 4;
            cJSON_AddNumberToObject(pj, "crc32", (double)pcrc[*n_pieces]);
            cJSON_AddItemToArray(pieces, pj);
            data_off += n * 4;
            ++*n_pieces;
        }
        free(buf);
    }
    free(owned);
    char meta[64];
    snprintf(meta, sizeof meta, "%d", tr->step);
    hp_st_writer_metadata(w, "format", HP_CKPT_FORMAT);
    hp_st_writer_metadata(w, "step", meta);
    snprintf(meta, sizeof meta, "%d", tr->rank);
    hp_st_writer_metadata(w, "rank", meta);
    int rc = hp_st_writer_save(w, path, err, errlen);
    hp_st_writer_free(w);
    // read back the header only: where the data starts, and the file's CRC32 = CRC32 of the
    // header combined with the pieces' (the data was checksummed in memory, not re-read)
    unsigned char *hdr = NULL;
    size_t len = 0;
    int64_t start = 0;
    uint32_t file_crc = 0;
    if (rc == 0) {
        struct stat sb;
        unsigned char len8[8];
        const int fd = open(path, O_RDONLY);
        uint64_t hlen = 0;
        int ok = fd >= 0 && fstat(fd, &sb) == 0 && pread(fd, len8, 8, 0) == 8;
        for (int i = 0; ok && i < 8; i++) hlen |= (uint64_t)len8[i] << (8 * i);
        ok = ok && hlen < (uint64_t)sb.st_size && (hdr = malloc((size_t)hlen + 8)) != NULL;
        if (ok) {
            memcpy(hdr, len8, 8);
            ok = pread(fd, hdr + 8, (size_t)hlen, 8) == (ssize_t)hlen;
        }
        if (fd >= 0) close(fd);
        len = ok ? (size_t)sb.st_size : 0;
        start = 8 + (int64_t)hlen;
        if (!ok || start + data_off != (int64_t)len) {
            snprintf(err, errlen, "checkpoint %s: written %zu bytes, expected %lld", path, len,
                     (long long)(start + data_off));
            rc = -1;
        } else {
            file_crc = hp_ck_crc32(hdr, (size_t)start);
            for (int i = 0; i < *n_pieces; i++) file_crc = hp_ck_crc32_combine(file_crc, pcrc[i], plen[i]);
        }
    }
    free(hdr);
    free(pcrc);
    free(plen);
    if (rc == 0 && kill_requested(tr->rank, tr->step)) {
        // the failpoint: this rank dies with its file half written, before the index exists
        if (truncate(path, (off_t)(len / 2)) == 0) fsync_path(path);
        const char *sig = getenv("HP_CKPT_KILL_SIGNAL");
        const int stop = sig && strcmp(sig, "STOP") == 0;
        fprintf(stderr, "hp: HP_CKPT_KILL_RANK: rank %d %s halfway through the save of step %d "
                "(pid %ld)\n", tr->rank, stop ? "stopped" : "killed", tr->step, (long)getpid());
        fflush(stderr);
        raise(stop ? SIGSTOP : SIGKILL);
    }
    if (rc == 0) {
        cJSON *pj;
        cJSON_ArrayForEach(pj, pieces) {   // offsets made absolute: after the header
            cJSON *o = cJSON_GetObjectItemCaseSensitive(pj, "offset");
            cJSON_SetNumberValue(o, o->valuedouble + (double)start);
        }
    }
    if (rc == 0 && fsync_path(path) != 0) {
        snprintf(err, errlen, "checkpoint %s: fsync failed: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc == 0) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "file", fname);
        cJSON_AddNumberToObject(e, "rank", tr->rank);
        cJSON_AddNumberToObject(e, "bytes", (double)len);
        cJSON_AddNumberToObject(e, "crc32", (double)file_crc);
        cJSON_AddItemToObject(e, "pieces", pieces);
        pieces = NULL;
        *entry = e;
        *bytes = (int64_t)len;
    }
    cJSON_Delete(pieces);
    return rc;
}

static cJSON *index_json(const hp_trainer *tr, cJSON *files) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", HP_CKPT_FORMAT);
    cJSON_AddNumberToObject(j, "step", tr->step);
    cJSON_AddItemToObject(j, "model", hp_ck_model_json(&tr->m));
    cJSON *d = cJSON_AddObjectToObject(j, "degrees");
    int world;
    MPI_Comm_size(tr->world, &world);
    cJSON_AddNumberToObject(d, "world", world);
    cJSON_AddNumberToObject(d, "dp_replicate", tr->d.dp_replicate);
    cJSON_AddNumberToObject(d, "dp_shard", tr->d.dp_shard);
    cJSON_AddNumberToObject(d, "cp", tr->d.cp);
    cJSON_AddNumberToObject(d, "tp", tr->d.tp);
    cJSON_AddNumberToObject(d, "pp", tr->d.pp);
    cJSON_AddNumberToObject(d, "pp_schedule", tr->d.pp_schedule);   // informative: any loads
    cJSON_AddNumberToObject(d, "pp_virtual", tr->d.pp_virtual);
    cJSON_AddNumberToObject(d, "ep", tr->d.ep);
    cJSON_AddNumberToObject(d, "etp", tr->d.etp);
    cJSON_AddNumberToObject(d, "sp", tr->d.sp);
    cJSON *r = cJSON_AddObjectToObject(j, "run");
    cJSON_AddStringToObject(r, "optimizer", tr->rc.optimizer == HP_OPT_ADAMW ? "adamw" : "sgd");
    // the lr state: the schedule resolved (optim.h); its position, like AdamW's bias correction,
    // is the step, which the checkpoint's step restores (a resume computes f from its own config
    // at that step, as TorchTitan restores only the step)
    cJSON_AddNumberToObject(r, "lr", (double)tr->rc.lr);
    const hp_lr_schedule sc = hp_lr_schedule_resolve(&tr->rc, NULL, 0);
    cJSON *ls = cJSON_AddObjectToObject(r, "lr_schedule");
    cJSON_AddNumberToObject(ls, "total_steps", sc.T);
    cJSON_AddNumberToObject(ls, "warmup_steps", sc.W);
    cJSON_AddNumberToObject(ls, "decay_steps", sc.D);
    cJSON_AddNumberToObject(ls, "stable_steps", sc.S);
    cJSON_AddStringToObject(ls, "decay_type", hp_ck_decay_name[tr->rc.decay_type]);
    cJSON_AddNumberToObject(ls, "min_lr_factor", tr->rc.min_lr_factor);
    cJSON_AddNumberToObject(ls, "lr_next_step", (double)hp_lr_at(&tr->rc, tr->step + 1));
    cJSON_AddNumberToObject(r, "optimizer_step", tr->step);
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)tr->rc.seed);
    cJSON_AddStringToObject(r, "seed", seed);
    cJSON_AddNumberToObject(r, "seq_len", tr->rc.seq_len);
    cJSON_AddNumberToObject(r, "batch", tr->rc.batch);
    cJSON *da = cJSON_AddObjectToObject(j, "data");
    cJSON_AddStringToObject(da, "kind", tr->rc.data_path ? "text" : "synthetic");
    cJSON_AddNumberToObject(da, "step", tr->step);   // synthetic data: the position is the step
    if (tr->rc.data_path) {
        const int64_t windows = hp_data_windows(tr->data, tr->rc.seq_len);
        cJSON_AddStringToObject(da, "path", tr->rc.data_path);
        cJSON_AddNumberToObject(da, "windows", (double)windows);
        cJSON_AddNumberToObject(da, "next_window", (double)hp_ck_next_window(tr->step, tr->rc.batch, windows));
        // what the dataset is (docs/checkpoints.md): a resume on another one is refused
        cJSON_AddStringToObject(da, "format", hp_data_format_name(hp_data_found_format(tr->data)));
        cJSON *df = cJSON_AddArrayToObject(da, "files");
        for (int i = 0; i < hp_data_n_files(tr->data); i++) {
            int64_t bytes = 0, tokens = 0;
            const char *name = hp_data_file(tr->data, i, &bytes, &tokens);
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "name", name);
            cJSON_AddNumberToObject(f, "bytes", (double)bytes);
            cJSON_AddNumberToObject(f, "tokens", (double)tokens);
            cJSON_AddItemToArray(df, f);
        }
    }
    cJSON *ts = cJSON_AddArrayToObject(j, "tensors");
    for (int i = 0; i < tr->pt.n; i++) {
        const hp_param *p = &tr->pt.p[i];
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", p->name);
        cJSON *s = cJSON_AddArrayToObject(t, "shape");
        for (int k = 0; k < p->ndim; k++) cJSON_AddItemToArray(s, cJSON_CreateNumber((double)p->shape[k]));
        cJSON_AddItemToArray(ts, t);
    }
    cJSON_AddItemToObject(j, "files", files);
    return j;
}

// Prunes step folders: keeps the one just saved and the newest keep-1 older ones.
static void prune(const char *dir, int step, int keep) {
    if (keep <= 0) return;
    DIR *d = opendir(dir);
    if (!d) return;
    int *steps = NULL, n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int k = -1;
        char tail;
        if (sscanf(e->d_name, "step-%d%c", &k, &tail) != 1 || k < 0 || k == step) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            int *ns = realloc(steps, (size_t)cap * sizeof *ns);
            if (!ns) break;
            steps = ns;
        }
        steps[n++] = k;
    }
    closedir(d);
    // newest older first; later steps belong to an abandoned timeline and go too
    int kept = 1;
    for (int pass = 0; pass < n; pass++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (steps[i] >= 0 && (best < 0 || steps[i] > steps[best])) best = i;
        if (best < 0) break;
        char path[8400];
        snprintf(path, sizeof path, "%s/step-%d", dir, steps[best]);
        if (steps[best] > step || kept >= keep) remove_flat_dir(path);
        else kept++;
        steps[best] = -1;
    }
    free(steps);
}

// Rank 0: the index, the renames, the pointer.
static int publish(hp_trainer *tr, const char *dir, const char *tmp, cJSON *files, int keep,
                   char *err, size_t errlen) {
    char path[8400], final_dir[8400], old[8400];
    cJSON *j = index_json(tr, files);
    snprintf(path, sizeof path, "%s/index.json", tmp);
    int rc = hp_json_save(j, path);
    cJSON_Delete(j);
    if (rc != 0 || fsync_path(path) != 0) {
        snprintf(err, errlen, "checkpoint %s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    // read it back as a loader would: every piece tiles its tensor exactly once
    hp_ck_index ix;
    if (hp_ck_index_load(tmp, &ix, err, errlen) != 0) return -1;
    rc = hp_ck_index_check_coverage(&ix, tr->rc.optimizer == HP_OPT_ADAMW ? 3 : 1, err, errlen);
    hp_ck_index_free(&ix);
    if (rc != 0) return -1;
    if (fsync_path(tmp) != 0) {
        snprintf(err, errlen, "checkpoint %s: fsync of the folder failed: %s", tmp, strerror(errno));
        return -1;
    }
    snprintf(final_dir, sizeof final_dir, "%s/step-%d", dir, tr->step);
    snprintf(old, sizeof old, "%s/.step-%d.old", dir, tr->step);
    remove_flat_dir(old);
    struct stat sb;
    const int existed = stat(final_dir, &sb) == 0;
    if (existed && rename(final_dir, old) != 0) {
        snprintf(err, errlen, "checkpoint %s: cannot move the old folder aside: %s", final_dir, strerror(errno));
        return -1;
    }
    if (rename(tmp, final_dir) != 0) {
        snprintf(err, errlen, "checkpoint %s: cannot rename %s to it: %s", final_dir, tmp, strerror(errno));
        return -1;
    }
    fsync_path(dir);
    if (existed) remove_flat_dir(old);
    char ptr[8400], line[64];
    snprintf(ptr, sizeof ptr, "%s/.latest.tmp", dir);
    snprintf(line, sizeof line, "step-%d\n", tr->step);
    FILE *f = fopen(ptr, "w");
    const int ok = f && fputs(line, f) >= 0;
    if (f && fclose(f) != 0) rc = -1;
    snprintf(path, sizeof path, "%s/latest", dir);
    if (!ok || rc != 0 || fsync_path(ptr) != 0 || rename(ptr, path) != 0) {
        snprintf(err, errlen, "checkpoint %s: cannot update the latest pointer: %s", path, strerror(errno));
        return -1;
    }
    fsync_path(dir);
    prune(dir, tr->step, keep);
    return 0;
}

int hp_ckpt_save(hp_trainer *tr, const char *dir, int keep, hp_ckpt_stats *st, char *err,
                 size_t errlen) {
    hp_ckpt_stats local = { 0 };
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    err[0] = '\0';
    hp_mpi_barrier(tr->world, "checkpoint-save-start");
    const double t0 = now_s();
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/.step-%d.tmp", dir, tr->step);
    int failed = 0;
    if (tr->rank == 0) {
        remove_flat_dir(tmp);   // a save that died before its rename
        if (mkdir_p(dir) != 0 || mkdir(tmp, 0777) != 0) {
            snprintf(err, errlen, "checkpoint %s: cannot create the folder: %s", tmp, strerror(errno));
            failed = 1;
        }
    }
    if (hp_ck_agree(tr->world, tr->rank, failed, err, errlen) != 0) return -1;

    cJSON *entry = NULL;
    failed = write_rank_file(tr, tmp, &entry, &st->bytes, &st->pieces, err, errlen) != 0;
    if (hp_ck_agree(tr->world, tr->rank, failed, err, errlen) != 0) { cJSON_Delete(entry); return -1; }

    // rank 0 gathers every rank's file entry
    char *mine = entry ? cJSON_PrintUnformatted(entry) : NULL;
    cJSON_Delete(entry);
    int len = mine ? (int)strlen(mine) : 0, world;
    MPI_Comm_size(tr->world, &world);
    int *lens = tr->rank == 0 ? calloc((size_t)world, sizeof(int)) : NULL;
    int *displs = tr->rank == 0 ? calloc((size_t)world, sizeof(int)) : NULL;
    hp_mpi_gather(tr->world, lens, &len, 1, MPI_INT, 0, "checkpoint-save-gather");
    char *all = NULL;
    if (tr->rank == 0) {
        int total = 0;
        for (int r = 0; r < world; r++) { displs[r] = total; total += lens[r]; }
        all = malloc((size_t)total + 1);
    }
    hp_mpi_gatherv(tr->world, all, lens, displs, mine ? mine : "", len, MPI_CHAR, 0,
                   "checkpoint-save-gather");
    failed = 0;
    if (tr->rank == 0) {
        cJSON *files = cJSON_CreateArray();
        for (int r = 0; r < world && !failed; r++) {
            if (!lens[r]) continue;
            cJSON *e = cJSON_ParseWithLength(all + displs[r], (size_t)lens[r]);
            if (!e) { snprintf(err, errlen, "checkpoint: rank %d's file entry does not parse", r); failed = 1; break; }
            cJSON_AddItemToArray(files, e);
        }
        if (!failed) failed = publish(tr, dir, tmp, files, keep, err, errlen) != 0;
        else cJSON_Delete(files);
    }
    free(mine); free(lens); free(displs); free(all);
    if (hp_ck_agree(tr->world, tr->rank, failed, err, errlen) != 0) return -1;
    hp_mpi_barrier(tr->world, "checkpoint-save-end");
    st->seconds = now_s() - t0;
    st->step = tr->step;
    return 0;
}
