// checkpoint_index.c - index.json <-> hp_ck_index: the model config, degrees, run state and
// every file's pieces. The parser trusts nothing: a missing or mistyped field, a box outside
// its tensor, a piece past its file's end is one line naming the file, the tensor and the
// problem.
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "hyperpar/dims.h"
#include "checkpoint/checkpoint_internal.h"
#include "util/file_io.h"

cJSON *hp_ck_model_json(const hp_model_config *m) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", m->name);
#define I(f) cJSON_AddNumberToObject(j, #f, m->f)
    I(vocab_size); I(dim); I(n_layers); I(n_heads); I(n_kv_heads); I(ffn_hidden);
    I(norm_eps); I(rope_theta); I(num_experts); I(top_k); I(moe_hidden); I(n_shared_experts);
    I(n_dense_layers); I(score_func); I(route_norm); I(route_scale);
    if (m->rope_factor != 0.0f) {   // (written only when set: older checkpoints have none)
        I(rope_factor); I(rope_low_freq_factor); I(rope_high_freq_factor); I(rope_original_max_positions);
    }
#undef I
    return j;
}

int hp_ck_model_compare(const hp_model_config *a, const hp_model_config *b, char *why, size_t n) {
#define CI(f) if (a->f != b->f) { snprintf(why, n, "model config %s: %d in this run, %d in the checkpoint", #f, (int)a->f, (int)b->f); return -1; }
#define CF(f) if (a->f != b->f) { snprintf(why, n, "model config %s: %g in this run, %g in the checkpoint", #f, (double)a->f, (double)b->f); return -1; }
    CI(vocab_size); CI(dim); CI(n_layers); CI(n_heads); CI(n_kv_heads); CI(ffn_hidden);
    CF(norm_eps); CF(rope_theta); CI(num_experts); CI(top_k); CI(moe_hidden);
    CI(n_shared_experts); CI(n_dense_layers); CI(score_func); CI(route_norm); CF(route_scale);
    CF(rope_factor); CF(rope_low_freq_factor); CF(rope_high_freq_factor); CI(rope_original_max_positions);
#undef CI
#undef CF
    return 0;
}

int64_t hp_ck_next_window(int step, int batch, int64_t windows) {
    return windows > 0 ? ((int64_t)step * batch) % windows : 0;
}

// ---- parsing ----------------------------------------------------------------------------

typedef struct parse_ctx {
    const char *path;
    char *err;
    size_t errlen;
    int failed;
} parse_ctx;

static double num(parse_ctx *c, const cJSON *o, const char *key, const char *where) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(x)) {
        if (!c->failed) snprintf(c->err, c->errlen, "checkpoint %s: %s: field '%s' is missing or not a number", c->path, where, key);
        c->failed = 1;
        return 0;
    }
    return x->valuedouble;
}

static const char *str(parse_ctx *c, const cJSON *o, const char *key, const char *where) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(x)) {
        if (!c->failed) snprintf(c->err, c->errlen, "checkpoint %s: %s: field '%s' is missing or not a string", c->path, where, key);
        c->failed = 1;
        return "";
    }
    return x->valuestring;
}

static int64_t i64(parse_ctx *c, const cJSON *o, const char *key, const char *where) {
    const double v = num(c, o, key, where);
    if (!c->failed && (v != (double)(int64_t)v || v < 0 || v > 9007199254740992.0)) {
        snprintf(c->err, c->errlen, "checkpoint %s: %s: field '%s' = %g is not a non-negative integer", c->path, where, key, v);
        c->failed = 1;
    }
    return (int64_t)v;
}

static int parse_model(parse_ctx *c, const cJSON *j, hp_model_config *m) {
    memset(m, 0, sizeof *m);
    if (!cJSON_IsObject(j)) {
        snprintf(c->err, c->errlen, "checkpoint %s: 'model' is missing", c->path);
        return c->failed = 1;
    }
    snprintf(m->name, sizeof m->name, "%s", str(c, j, "name", "model"));
#define I(f) m->f = (int)i64(c, j, #f, "model")
#define F(f) m->f = (float)num(c, j, #f, "model")
    I(vocab_size); I(dim); I(n_layers); I(n_heads); I(n_kv_heads); I(ffn_hidden);
    F(norm_eps); F(rope_theta); I(num_experts); I(top_k); I(moe_hidden); I(n_shared_experts);
    I(n_dense_layers); m->score_func = (hp_score_func)i64(c, j, "score_func", "model");
    I(route_norm); F(route_scale);
    if (cJSON_GetObjectItemCaseSensitive(j, "rope_factor")) {   // Llama 3.1's RoPE rescale, when set
        F(rope_factor); F(rope_low_freq_factor); F(rope_high_freq_factor); I(rope_original_max_positions);
    }
#undef I
#undef F
    return c->failed;
}

static int parse_box(parse_ctx *c, const cJSON *jb, const hp_ck_tensor *t, hp_box *b, const char *key) {
    b->ndim = cJSON_GetArraySize(jb);
    if (!cJSON_IsArray(jb) || b->ndim != t->ndim) {
        snprintf(c->err, c->errlen, "checkpoint %s: tensor %s: piece %s has a box of %d dims, the tensor has %d",
                 c->path, t->name, key, cJSON_IsArray(jb) ? b->ndim : 0, t->ndim);
        return c->failed = 1;
    }
    for (int i = 0; i < b->ndim; i++) {
        const cJSON *r = cJSON_GetArrayItem(jb, i);
        const cJSON *lo = cJSON_GetArrayItem(r, 0), *hi = cJSON_GetArrayItem(r, 1);
        if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 2 || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) ||
            lo->valuedouble < 0 || hi->valuedouble <= lo->valuedouble ||
            hi->valuedouble > (double)t->shape[i]) {
            snprintf(c->err, c->errlen, "checkpoint %s: tensor %s: piece %s: dim %d of its box is not "
                     "[lo, hi) with 0 <= lo < hi <= %lld", c->path, t->name, key, i, (long long)t->shape[i]);
            return c->failed = 1;
        }
        b->lo[i] = (int64_t)lo->valuedouble;
        b->hi[i] = (int64_t)hi->valuedouble;
    }
    return 0;
}

static int parse_kind(const char *s) {
    for (int k = 0; k < HP_CK_KINDS; k++)
        if (!strcmp(s, hp_ck_kind_name[k])) return k;
    return -1;
}

int hp_ck_index_load(const char *step_dir, hp_ck_index *ix, char *err, size_t errlen) {
    memset(ix, 0, sizeof *ix);
    char path[4200];
    snprintf(path, sizeof path, "%s/index.json", step_dir);
    cJSON *j = hp_json_load(path);
    if (!j) {
        snprintf(err, errlen, "checkpoint %s: cannot be read or is not JSON (no complete checkpoint here)", path);
        return HP_EXIT_CONFIG;
    }
    parse_ctx c = { path, err, errlen, 0 };
    const char *fmt = str(&c, j, "format", "index");
    if (!c.failed && strcmp(fmt, HP_CKPT_FORMAT) != 0) {
        snprintf(err, errlen, "checkpoint %s: format '%s', this hp reads '%s'", path, fmt, HP_CKPT_FORMAT);
        c.failed = 1;
    }
    ix->step = (int)i64(&c, j, "step", "index");
    if (!c.failed) parse_model(&c, cJSON_GetObjectItemCaseSensitive(j, "model"), &ix->model);
    const cJSON *dg = cJSON_GetObjectItemCaseSensitive(j, "degrees");
    if (!c.failed) {
        ix->dims.world = (int)i64(&c, dg, "world", "degrees");
        ix->dims.dp_replicate = (int)i64(&c, dg, "dp_replicate", "degrees");
        ix->dims.dp_shard = (int)i64(&c, dg, "dp_shard", "degrees");
        ix->dims.cp = (int)i64(&c, dg, "cp", "degrees");
        ix->dims.tp = (int)i64(&c, dg, "tp", "degrees");
        ix->dims.pp = (int)i64(&c, dg, "pp", "degrees");
        ix->dims.ep = (int)i64(&c, dg, "ep", "degrees");
        ix->dims.etp = (int)i64(&c, dg, "etp", "degrees");
        ix->dims.sp = (int)i64(&c, dg, "sp", "degrees");
    }
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(j, "run");
    if (!c.failed) {
        const char *opt = str(&c, run, "optimizer", "run");
        ix->optimizer = !strcmp(opt, "adamw") ? HP_OPT_ADAMW : HP_OPT_SGD;
        ix->lr = num(&c, run, "lr", "run");
        ix->seed = strtoull(str(&c, run, "seed", "run"), NULL, 10);
        ix->seq_len = (int)i64(&c, run, "seq_len", "run");
        ix->batch = (int)i64(&c, run, "batch", "run");
        const cJSON *ls = cJSON_GetObjectItemCaseSensitive(run, "lr_schedule");
        if (cJSON_IsObject(ls)) {
            ix->has_schedule = 1;
            ix->sched_T = (int)i64(&c, ls, "total_steps", "run.lr_schedule");
            ix->sched_W = (int)i64(&c, ls, "warmup_steps", "run.lr_schedule");
            ix->sched_D = (int)i64(&c, ls, "decay_steps", "run.lr_schedule");
            ix->sched_S = (int)i64(&c, ls, "stable_steps", "run.lr_schedule");
            snprintf(ix->sched_decay, sizeof ix->sched_decay, "%s", str(&c, ls, "decay_type", "run.lr_schedule"));
            ix->sched_min_lr_factor = num(&c, ls, "min_lr_factor", "run.lr_schedule");
            ix->sched_lr_next = num(&c, ls, "lr_next_step", "run.lr_schedule");
        }
    }
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
    if (!c.failed) {
        ix->data_text = !strcmp(str(&c, data, "kind", "data"), "text");
        if (ix->data_text) {
            ix->data_windows = i64(&c, data, "windows", "data");
            ix->data_next_window = i64(&c, data, "next_window", "data");
            // the dataset's description (absent before the formats: nothing to compare)
            const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(data, "format");
            const cJSON *files = cJSON_GetObjectItemCaseSensitive(data, "files");
            if (cJSON_IsString(fmt) && cJSON_IsArray(files)) {
                snprintf(ix->data_format, sizeof ix->data_format, "%s", fmt->valuestring);
                const int n = cJSON_GetArraySize(files);
                ix->data_files = calloc(n > 0 ? (size_t)n : 1, sizeof *ix->data_files);
                if (!ix->data_files) { snprintf(err, errlen, "checkpoint %s: out of memory", path); c.failed = 1; }
                const cJSON *f;
                cJSON_ArrayForEach(f, files) {
                    if (c.failed) break;
                    hp_ck_data_file *df = &ix->data_files[ix->data_n_files++];
                    snprintf(df->name, sizeof df->name, "%s", str(&c, f, "name", "data.files"));
                    df->bytes = i64(&c, f, "bytes", "data.files");
                    df->tokens = i64(&c, f, "tokens", "data.files");
                }
            }
        }
    }
    // tensors
    const cJSON *jt = cJSON_GetObjectItemCaseSensitive(j, "tensors");
    const cJSON *jf = cJSON_GetObjectItemCaseSensitive(j, "files");
    if (!c.failed && (!cJSON_IsArray(jt) || !cJSON_IsArray(jf))) {
        snprintf(err, errlen, "checkpoint %s: 'tensors' or 'files' is missing", path);
        c.failed = 1;
    }
    if (!c.failed) {
        ix->n_tensors = cJSON_GetArraySize(jt);
        ix->tensors = calloc((size_t)ix->n_tensors + 1, sizeof *ix->tensors);
        int i = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, jt) {
            hp_ck_tensor *x = &ix->tensors[i++];
            snprintf(x->name, sizeof x->name, "%s", str(&c, t, "name", "tensors"));
            const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
            x->ndim = cJSON_GetArraySize(sh);
            if (!c.failed && (!cJSON_IsArray(sh) || x->ndim < 1 || x->ndim > HP_CKPT_MAXDIM)) {
                snprintf(err, errlen, "checkpoint %s: tensor %s: shape is not a list of 1 to %d sizes", path, x->name, HP_CKPT_MAXDIM);
                c.failed = 1;
            }
            for (int k = 0; !c.failed && k < x->ndim; k++) {
                const cJSON *s = cJSON_GetArrayItem(sh, k);
                x->shape[k] = cJSON_IsNumber(s) ? (int64_t)s->valuedouble : -1;
                if (x->shape[k] < 1) {
                    snprintf(err, errlen, "checkpoint %s: tensor %s: shape dim %d is not a size >= 1", path, x->name, k);
                    c.failed = 1;
                }
            }
            if (c.failed) break;
        }
    }
    // files and their pieces
    if (!c.failed) {
        ix->n_files = cJSON_GetArraySize(jf);
        ix->files = calloc((size_t)ix->n_files + 1, sizeof *ix->files);
        int np = 0, fi = 0;
        const cJSON *f;
        cJSON_ArrayForEach(f, jf) np += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "pieces"));
        ix->pieces = calloc((size_t)np + 1, sizeof *ix->pieces);
        cJSON_ArrayForEach(f, jf) {
            hp_ck_file *x = &ix->files[fi];
            const char *fname = str(&c, f, "file", "files");
            if (!c.failed && (strchr(fname, '/') || strlen(fname) >= sizeof x->name || !fname[0])) {
                snprintf(err, errlen, "checkpoint %s: file name '%s' is not a plain file name", path, fname);
                c.failed = 1;
            }
            snprintf(x->name, sizeof x->name, "%s", fname);
            x->rank = (int)i64(&c, f, "rank", x->name);
            x->bytes = i64(&c, f, "bytes", x->name);
            x->crc = (uint32_t)i64(&c, f, "crc32", x->name);
            const cJSON *ps = cJSON_GetObjectItemCaseSensitive(f, "pieces"), *p;
            if (!c.failed && !cJSON_IsArray(ps)) {
                snprintf(err, errlen, "checkpoint %s: file %s: 'pieces' is missing", path, x->name);
                c.failed = 1;
            }
            if (c.failed) break;
            cJSON_ArrayForEach(p, ps) {
                hp_ck_piece *y = &ix->pieces[ix->n_pieces];
                const char *key = str(&c, p, "key", x->name);
                const char *tname = str(&c, p, "tensor", key);
                const char *kind = str(&c, p, "kind", key);
                if (c.failed) break;
                y->tensor = hp_ck_index_find_tensor(ix, tname);
                y->kind = (hp_ck_kind)parse_kind(kind);
                if (y->tensor < 0 || (int)y->kind < 0) {
                    snprintf(err, errlen, "checkpoint %s: file %s: piece %s: tensor '%s' or kind '%s' unknown",
                             path, x->name, key, tname, kind);
                    c.failed = 1;
                    break;
                }
                y->file = fi;
                y->offset = i64(&c, p, "offset", key);
                y->nbytes = i64(&c, p, "bytes", key);
                y->crc = (uint32_t)i64(&c, p, "crc32", key);
                if (c.failed || parse_box(&c, cJSON_GetObjectItemCaseSensitive(p, "box"),
                                          &ix->tensors[y->tensor], &y->box, key)) break;
                if (y->nbytes != hp_box_numel(&y->box) * 4 || y->offset + y->nbytes > x->bytes) {
                    snprintf(err, errlen, "checkpoint %s: file %s: tensor %s: piece %s: %lld bytes at "
                             "offset %lld do not fit its box or the file's %lld bytes", path, x->name,
                             tname, key, (long long)y->nbytes, (long long)y->offset, (long long)x->bytes);
                    c.failed = 1;
                    break;
                }
                ix->n_pieces++;
            }
            if (c.failed) break;
            fi++;
        }
    }
    cJSON_Delete(j);
    if (c.failed) { hp_ck_index_free(ix); return HP_EXIT_CONFIG; }
    return 0;
}

void hp_ck_index_free(hp_ck_index *ix) {
    free(ix->tensors);
    free(ix->files);
    free(ix->pieces);
    free(ix->data_files);
    memset(ix, 0, sizeof *ix);
}

int hp_ck_index_find_tensor(const hp_ck_index *ix, const char *name) {
    for (int i = 0; i < ix->n_tensors; i++)
        if (!strcmp(ix->tensors[i].name, name)) return i;
    return -1;
}

int hp_ck_index_check_coverage(const hp_ck_index *ix, int kinds, char *err, size_t errlen) {
    for (int t = 0; t < ix->n_tensors; t++) {
        const hp_ck_tensor *x = &ix->tensors[t];
        int64_t full = 1;
        for (int k = 0; k < x->ndim; k++) full *= x->shape[k];
        for (int kind = 0; kind < kinds; kind++) {
            int64_t sum = 0;
            for (int i = 0; i < ix->n_pieces; i++) {
                const hp_ck_piece *a = &ix->pieces[i];
                if (a->tensor != t || (int)a->kind != kind) continue;
                sum += hp_box_numel(&a->box);
                for (int k = i + 1; k < ix->n_pieces; k++) {
                    const hp_ck_piece *b = &ix->pieces[k];
                    hp_box o;
                    if (b->tensor == t && b->kind == a->kind && hp_box_intersect(&a->box, &b->box, &o)) {
                        char sa[96], sb[96];
                        hp_box_str(&a->box, sa, sizeof sa);
                        hp_box_str(&b->box, sb, sizeof sb);
                        snprintf(err, errlen, "checkpoint: tensor %s (%s): pieces %s (%s) and %s (%s) overlap",
                                 x->name, hp_ck_kind_name[kind], sa, ix->files[a->file].name, sb,
                                 ix->files[b->file].name);
                        return -1;
                    }
                }
            }
            if (sum != full) {
                snprintf(err, errlen, "checkpoint: tensor %s (%s): its pieces hold %lld of its %lld elements",
                         x->name, hp_ck_kind_name[kind], (long long)sum, (long long)full);
                return -1;
            }
        }
    }
    return 0;
}

int hp_ck_agree(MPI_Comm world, int rank, int failed, char *err, size_t errlen) {
    int first = failed ? rank : INT_MAX;
    hp_mpi_allreduce(world, &first, 1, MPI_INT, MPI_MIN, "checkpoint-agree");
    if (first == INT_MAX) return 0;
    char line[512];
    snprintf(line, sizeof line, "%s", rank == first ? err : "");
    hp_mpi_broadcast(world, line, (int)sizeof line, MPI_CHAR, first, "checkpoint-agree");
    snprintf(err, errlen, "%s", line);
    return 1;
}

int hp_ck_read_file(const char *step_dir, const hp_ck_index *ix, int f, char *path, size_t pathlen,
                    unsigned char **buf, size_t *len, char *err, size_t errlen) {
    snprintf(path, pathlen, "%s/%s", step_dir, ix->files[f].name);
    const char *why = "";
    if (hp_file_read(path, buf, len, &why) == 0) return 0;
    snprintf(err, errlen, "checkpoint %s: %s", path, why);
    return HP_EXIT_CONFIG;
}
