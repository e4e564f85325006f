// dump_compare.c - `hp compare A B`: two tensor dumps of step 1 (dump.h; docs/dump.md), B
// measured against A with the verifier's tolerance table and per-tensor measures (verify.c).
// Pure: no MPI. Everything that makes the two dumps incomparable is refused first, with one
// line: files missing or corrupt, names, dtypes or shapes that differ, batches that differ,
// initial models that are not bit-identical, precisions that differ. Only then are the loss,
// the global gradient norm and every gradient compared.
// defines: hp_dump_compare, hp_dump_compare_bitwise, hp_dump_comparison_print, hp_dump_comparison_free
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "hyperpar/dump.h"
#include "hyperpar/safetensors.h"
#include "util/file_io.h"

// One dump folder, opened and checked on its own.
typedef struct dump {
    const char *dir;
    hp_st *model, *batch, *grads;
    double loss;
    char   precision[16];   // "float32" (the default when result.json does not say) or "bfloat16"
    char   framework[64];   // result.json "framework", or ""
    int    world;           // result.json parallel.world, or 0
    // result.json "reduce": {"dtype", "partials"}: the dtype the framework says it sums its
    // gradient partials in, over how many ranks ("" and 0 when it does not say)
    char   reduce_dtype[16];
    int    reduce_partials;
} dump;

static int refuse(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return HP_EXIT_CONFIG;
}

static void dump_close(dump *d) {
    if (d->model) hp_st_close(d->model);
    if (d->batch) hp_st_close(d->batch);
    if (d->grads) hp_st_close(d->grads);
    memset(d, 0, sizeof *d);
}

static int open_st(hp_st **f, const char *dir, const char *file, char *err, size_t errlen) {
    char path[4200], e[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    *f = hp_st_open(path, e, sizeof e);
    return *f ? 0 : refuse(err, errlen, "%s", e);
}

static void shape_text(char *buf, size_t n, const hp_st_tensor *t) {
    size_t off = (size_t)snprintf(buf, n, "[");
    for (int k = 0; k < t->ndim && off < n; k++)
        off += (size_t)snprintf(buf + off, n - off, k ? ", %lld" : "%lld", (long long)t->shape[k]);
    if (off < n) snprintf(buf + off, n - off, "]");
}

static int same_shape(const hp_st_tensor *x, const hp_st_tensor *y) {
    if (x->ndim != y->ndim) return 0;
    for (int k = 0; k < x->ndim; k++)
        if (x->shape[k] != y->shape[k]) return 0;
    return 1;
}

// result.json: a finite "loss"; "precision" float32 (default) or bfloat16; optional
// "framework" and parallel.world for the header.
static int read_result(dump *d, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/result.json", d->dir);
    unsigned char *buf = NULL;
    size_t len = 0;
    const char *why = NULL;
    if (hp_file_read(path, &buf, &len, &why) != 0) return refuse(err, errlen, "%s: cannot open: %s", path, why);
    cJSON *j = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return refuse(err, errlen, "%s: not a JSON object", path);
    }
    int rc = 0;
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(j, "loss");
    const cJSON *prec = cJSON_GetObjectItemCaseSensitive(j, "precision");
    const cJSON *fw = cJSON_GetObjectItemCaseSensitive(j, "framework");
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(j, "parallel");
    const cJSON *world = cJSON_GetObjectItemCaseSensitive(par, "world");
    const cJSON *reduce = cJSON_GetObjectItemCaseSensitive(j, "reduce");
    const cJSON *rdtype = cJSON_GetObjectItemCaseSensitive(reduce, "dtype");
    const cJSON *rparts = cJSON_GetObjectItemCaseSensitive(reduce, "partials");
    if (!cJSON_IsNumber(loss) || !isfinite(loss->valuedouble)) {
        rc = refuse(err, errlen, "%s: \"loss\" must be a finite number (the loss of step 1)", path);
    } else if (prec && (!cJSON_IsString(prec) || (strcmp(prec->valuestring, "float32") &&
                                                  strcmp(prec->valuestring, "bfloat16")))) {
        rc = refuse(err, errlen, "%s: \"precision\" must be \"float32\" or \"bfloat16\"", path);
    } else if (reduce && (!cJSON_IsObject(reduce) || !cJSON_IsString(rdtype) ||
                          (strcmp(rdtype->valuestring, "float32") && strcmp(rdtype->valuestring, "bfloat16")))) {
        rc = refuse(err, errlen, "%s: \"reduce\" must be {\"dtype\": \"float32\" or \"bfloat16\", \"partials\": N}",
                    path);
    } else if (reduce && (!cJSON_IsNumber(rparts) || rparts->valuedouble < 1 || rparts->valuedouble > 1e9 ||
                          rparts->valuedouble != (double)(int)rparts->valuedouble)) {
        rc = refuse(err, errlen, "%s: \"reduce\".\"partials\" must be a whole number of ranks >= 1", path);
    } else {
        d->loss = loss->valuedouble;
        snprintf(d->precision, sizeof d->precision, "%s", prec ? prec->valuestring : "float32");
        if (cJSON_IsString(fw)) snprintf(d->framework, sizeof d->framework, "%s", fw->valuestring);
        if (cJSON_IsNumber(world)) d->world = world->valueint;
        if (cJSON_IsString(rdtype)) snprintf(d->reduce_dtype, sizeof d->reduce_dtype, "%s", rdtype->valuestring);
        if (cJSON_IsNumber(rparts)) d->reduce_partials = rparts->valueint;
    }
    cJSON_Delete(j);
    return rc;
}

// The three files and result.json of dir; within the dump, grads.safetensors holds the model's
// tensors (F32, same shapes) and the batch is tokens and labels, I32 [B, S].
static int dump_open(dump *d, const char *dir, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    d->dir = dir;
    int rc = open_st(&d->model, dir, "model.safetensors", err, errlen);
    if (!rc) rc = open_st(&d->batch, dir, "batch.safetensors", err, errlen);
    if (!rc) rc = open_st(&d->grads, dir, "grads.safetensors", err, errlen);
    if (!rc) rc = read_result(d, err, errlen);
    const int n = rc ? 0 : hp_st_count(d->model);
    if (!rc && n == 0) rc = refuse(err, errlen, "%s/model.safetensors: no tensors", dir);
    for (int i = 0; !rc && i < n; i++) {
        const hp_st_tensor *t = hp_st_at(d->model, i), *g = hp_st_get(d->grads, t->name);
        char s1[96], s2[96];
        if (t->dtype != HP_DT_F32)
            rc = refuse(err, errlen, "%s/model.safetensors: tensor '%s' is not F32", dir, t->name);
        else if (!g)
            rc = refuse(err, errlen, "%s/grads.safetensors: tensor '%s' of the model is missing", dir, t->name);
        else if (g->dtype != HP_DT_F32)
            rc = refuse(err, errlen, "%s/grads.safetensors: tensor '%s' is not F32", dir, t->name);
        else if (!same_shape(t, g)) {
            shape_text(s1, sizeof s1, g);
            shape_text(s2, sizeof s2, t);
            rc = refuse(err, errlen, "%s/grads.safetensors: tensor '%s' has shape %s, the model's is %s", dir,
                        t->name, s1, s2);
        }
    }
    if (!rc && hp_st_count(d->grads) != n)
        rc = refuse(err, errlen, "%s/grads.safetensors: %d tensors, model.safetensors has %d", dir,
                    hp_st_count(d->grads), n);
    const hp_st_tensor *tok = rc ? NULL : hp_st_get(d->batch, "tokens");
    const hp_st_tensor *lab = rc ? NULL : hp_st_get(d->batch, "labels");
    if (!rc && (!tok || !lab))
        rc = refuse(err, errlen, "%s/batch.safetensors: needs tensors 'tokens' and 'labels'", dir);
    if (!rc && (tok->dtype != HP_DT_I32 || lab->dtype != HP_DT_I32 || tok->ndim != 2 || !same_shape(tok, lab)))
        rc = refuse(err, errlen, "%s/batch.safetensors: 'tokens' and 'labels' must be I32 of one shape [B, S]", dir);
    if (rc) dump_close(d);
    return rc;
}

// Names and shapes of y's model are x's; the batches are the same token for token; the initial
// models are bit-identical. The message names both folders and the first difference.
static int same_inputs(const dump *x, const dump *y, char *err, size_t errlen) {
    const int n = hp_st_count(x->model);
    if (hp_st_count(y->model) != n)
        return refuse(err, errlen, "the models differ: %s has %d tensors, %s has %d", x->dir, n, y->dir,
                      hp_st_count(y->model));
    for (int i = 0; i < n; i++) {
        const hp_st_tensor *t = hp_st_at(x->model, i), *u = hp_st_get(y->model, t->name);
        if (!u) return refuse(err, errlen, "the models differ: tensor '%s' of %s is not in %s", t->name, x->dir, y->dir);
        if (u->dtype != HP_DT_F32)
            return refuse(err, errlen, "%s/model.safetensors: tensor '%s' is not F32", y->dir, t->name);
        if (!same_shape(t, u)) {
            char s1[96], s2[96];
            shape_text(s1, sizeof s1, t);
            shape_text(s2, sizeof s2, u);
            return refuse(err, errlen, "the models differ: tensor '%s' is %s in %s, %s in %s", t->name, s1, x->dir,
                          s2, y->dir);
        }
    }
    static const char *const parts[2] = { "tokens", "labels" };
    for (int k = 0; k < 2; k++) {
        const hp_st_tensor *t = hp_st_get(x->batch, parts[k]), *u = hp_st_get(y->batch, parts[k]);
        if (!same_shape(t, u)) {
            char s1[96], s2[96];
            shape_text(s1, sizeof s1, t);
            shape_text(s2, sizeof s2, u);
            return refuse(err, errlen, "the batches differ: %s is %s in %s, %s in %s", parts[k], s1, x->dir, s2, y->dir);
        }
        for (int64_t e = 0; e < t->numel; e++) {
            int32_t vt, vu;
            memcpy(&vt, (const char *)t->data + 4 * e, 4);
            memcpy(&vu, (const char *)u->data + 4 * e, 4);
            if (vt != vu)
                return refuse(err, errlen, "the batches differ: %s[%lld, %lld] is %d in %s, %d in %s", parts[k],
                              (long long)(e / t->shape[1]), (long long)(e % t->shape[1]), vt, x->dir, vu, y->dir);
        }
    }
    for (int i = 0; i < n; i++) {
        const hp_st_tensor *t = hp_st_at(x->model, i), *u = hp_st_get(y->model, t->name);
        for (int64_t e = 0; e < t->numel; e++) {
            float vt, vu;
            memcpy(&vt, (const char *)t->data + 4 * e, 4);
            memcpy(&vu, (const char *)u->data + 4 * e, 4);
            if (memcmp(&vt, &vu, 4))
                return refuse(err, errlen, "the initial models are not bit-identical: %s[%lld] is %.9g in %s, %.9g "
                              "in %s", t->name, (long long)e, vt, x->dir, vu, y->dir);
        }
    }
    return 0;
}

// A tensor's F32 data copied out of the file (whose data need not be 4-byte aligned).
static float *floats(const hp_st_tensor *t) {
    float *x = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float));
    if (x) memcpy(x, t->data, (size_t)t->numel * sizeof(float));
    return x;
}

static double grad_norm(const hp_st *grads) {
    double s = 0.0;
    for (int i = 0; i < hp_st_count(grads); i++) {
        const hp_st_tensor *t = hp_st_at(grads, i);
        for (int64_t e = 0; e < t->numel; e++) {
            float v;
            memcpy(&v, (const char *)t->data + 4 * e, 4);
            s += (double)v * v;
        }
    }
    return sqrt(s);
}

static void about(char *buf, size_t n, const dump *d) {
    char world[32] = "";
    if (d->world > 0) snprintf(world, sizeof world, ", world %d", d->world);
    snprintf(buf, n, "%s (%s, %s%s)", d->dir, *d->framework ? d->framework : "framework not named",
             d->precision, world);
}

static void fail(hp_dump_comparison *c, const char *why) {
    c->pass = 0;
    if (!c->failure) c->failure = why;
}

// The reduce dtype, seen in the bits: a sum in float32 of two or more bf16 partials is rarely a
// bf16 value itself, so a gradient of 64 or more elements that are every one bf16 values was
// summed in bfloat16, whatever B says (a bf16 reduce under a float32 policy). Only asked when B
// says float32 over >= 2 partials of a bfloat16 step.
static int all_bf16_values(const float *x, int64_t n) {
    if (n < 64) return 0;
    for (int64_t e = 0; e < n; e++) {
        uint32_t u;
        memcpy(&u, &x[e], 4);
        if (u & 0xffffu) return 0;
    }
    return 1;
}

// Byte for byte: the first element whose bits differ, if any (then c->identical = 0).
static void first_difference(hp_dump_comparison *c, const char *name, const float *a, const float *b, int64_t n) {
    for (int64_t e = 0; e < n; e++) {
        uint32_t ua, ub;
        memcpy(&ua, &a[e], 4);
        memcpy(&ub, &b[e], 4);
        if (ua != ub) {
            c->identical = 0;
            snprintf(c->diff_name, sizeof c->diff_name, "%s", name);
            c->diff_index = (long long)e;
            c->diff_a = ua;
            c->diff_b = ub;
            return;
        }
    }
}

// B against A (and F under bf16), every check of the verifier that two dumps can hold.
static int compare_tensors(hp_dump_comparison *c, const dump *A, const dump *B, const dump *F) {
    const hp_verify_tolerances *tol = &hp_verify_tol;
    c->pass = 1;
    c->closeness = tol->closeness_bf16;
    c->loss_a = A->loss;
    c->loss_b = B->loss;
    c->norm_a = grad_norm(A->grads);
    c->norm_b = grad_norm(B->grads);
    if (F) {
        c->loss_fp32 = F->loss;
        c->norm_fp32 = grad_norm(F->grads);
        c->loss_ratio = hp_verify_closeness_ratio(fabs(c->loss_b - c->loss_a), fabs(c->loss_a - c->loss_fp32));
        c->norm_ratio = hp_verify_closeness_ratio(fabs(c->norm_b - c->norm_a), fabs(c->norm_a - c->norm_fp32));
        if (!(c->loss_ratio <= c->closeness)) fail(c, "loss of step 1 (closeness)");
        if (!(c->norm_ratio <= c->closeness)) fail(c, "global gradient norm (closeness)");
    } else {
        if (!(fabs(c->loss_b - c->loss_a) <= tol->loss * fabs(c->loss_a))) fail(c, "loss of step 1");
        if (!(fabs(c->norm_b - c->norm_a) <= tol->grad * c->norm_a)) fail(c, "global gradient norm");
    }
    c->identical = 1;
    const int reduce_fp32 = !strcmp(B->reduce_dtype, "float32") && B->reduce_partials >= 2;
    c->reduce_partials = reduce_fp32 ? B->reduce_partials : 0;
    c->n = hp_st_count(A->model);
    c->grads = calloc((size_t)c->n, sizeof(hp_tensor_diff));
    if (!c->grads) return -1;
    for (int i = 0; i < c->n; i++) {
        const char *name = hp_st_at(A->model, i)->name;
        const hp_st_tensor *ga = hp_st_get(A->grads, name), *gb = hp_st_get(B->grads, name);
        float *a = floats(ga), *b = floats(gb), *f = F ? floats(hp_st_get(F->grads, name)) : NULL;
        if (!a || !b || (F && !f)) { free(a); free(b); free(f); return -1; }
        hp_tensor_diff *d = &c->grads[i];
        if (F) hp_verify_diff_tensor_bf16(d, name, b, a, f, ga->numel, c->closeness);
        else hp_verify_diff_tensor(d, name, b, a, ga->numel, tol->grad);
        const int summed_in_bf16 = F && reduce_fp32 && all_bf16_values(b, ga->numel);
        if (c->identical) first_difference(c, name, a, b, ga->numel);
        free(a); free(b); free(f);
        if (summed_in_bf16) {
            d->pass = 0;
            c->reduce_bf16++;
            fail(c, "a gradient summed in bfloat16 where B says float32");
        }
        if (!d->pass) fail(c, "a gradient of step 1");
        const hp_tensor_diff *w = &c->grads[c->worst];
        if (F ? !(d->ratio <= w->ratio) : !(d->rel_fro <= w->rel_fro)) c->worst = i;
    }
    if (c->identical && memcmp(&c->loss_a, &c->loss_b, sizeof c->loss_a)) {
        c->identical = 0;
        snprintf(c->diff_name, sizeof c->diff_name, "loss");
    }
    if (c->bitwise && !c->identical) fail(c, "not identical byte for byte");
    return 0;
}

int hp_dump_compare(const char *a, const char *b, const char *fp32_dir, hp_dump_comparison *out,
                    char *err, size_t errlen) {
    return hp_dump_compare_bitwise(a, b, fp32_dir, 0, out, err, errlen);
}

int hp_dump_compare_bitwise(const char *a, const char *b, const char *fp32_dir, int bitwise,
                            hp_dump_comparison *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->bitwise = bitwise;
    dump A, B, F;
    memset(&F, 0, sizeof F);
    int rc = dump_open(&A, a, err, errlen);
    if (rc) return rc;
    if ((rc = dump_open(&B, b, err, errlen))) { dump_close(&A); return rc; }
    rc = same_inputs(&A, &B, err, errlen);
    if (!rc && strcmp(A.precision, B.precision))
        rc = refuse(err, errlen, "the precisions differ: %s is %s, %s is %s (the rules compare like with like)",
                    a, A.precision, b, B.precision);
    const int bf16 = !rc && !strcmp(A.precision, "bfloat16");
    if (!rc && bf16 && !fp32_dir)
        rc = refuse(err, errlen, "%s and %s are bfloat16: the closeness rule (precision.md 4.2) needs an fp32 dump "
                    "of the same model and batch: --fp32 DIR", a, b);
    if (!rc && fp32_dir && !bf16)
        rc = refuse(err, errlen, "--fp32 is for two bfloat16 dumps; %s and %s are float32", a, b);
    if (!rc && fp32_dir && !(rc = dump_open(&F, fp32_dir, err, errlen))) {
        if (strcmp(F.precision, "float32"))
            rc = refuse(err, errlen, "--fp32 %s: its precision is %s, not float32", fp32_dir, F.precision);
        else
            rc = same_inputs(&A, &F, err, errlen);
    }
    if (!rc) {
        out->bf16 = bf16;
        about(out->about_a, sizeof out->about_a, &A);
        about(out->about_b, sizeof out->about_b, &B);
        const hp_st_tensor *tok = hp_st_get(A.batch, "tokens");
        out->batch = (int)tok->shape[0];
        out->seq_len = (int)tok->shape[1];
        if (compare_tensors(out, &A, &B, bf16 ? &F : NULL) != 0) {
            hp_dump_comparison_free(out);
            rc = refuse(err, errlen, "out of memory comparing %s and %s", a, b);
        }
    }
    dump_close(&A);
    dump_close(&B);
    dump_close(&F);
    return rc;
}

static float bits_float(unsigned u) {
    float f;
    uint32_t v = u;
    memcpy(&f, &v, 4);
    return f;
}

void hp_dump_comparison_print(FILE *out, const hp_dump_comparison *c) {
    const hp_verify_tolerances *tol = &hp_verify_tol;
    fprintf(out, "compare: A = %s\ncompare: B = %s\n", c->about_a, c->about_b);
    fprintf(out, "compare: %d tensors, names and shapes match; batch [%d, %d] identical; initial models "
                 "bit-identical\n", c->n, c->batch, c->seq_len);
    const double dl = fabs(c->loss_b - c->loss_a), dn = fabs(c->norm_b - c->norm_a);
    if (c->bf16) {
        fprintf(out, "compare: bf16 closeness (precision.md §4.2): ratio = ||B - A|| / ||A - fp32 dump||, pass "
                     "<= %g\n", c->closeness);
        fprintf(out, "compare: loss A %.9f B %.9f fp32 %.9f, ratio %.3f: %s\n", c->loss_a, c->loss_b,
                c->loss_fp32, c->loss_ratio, c->loss_ratio <= c->closeness ? "ok" : "FAIL");
        fprintf(out, "compare: grad norm A %.6f B %.6f fp32 %.6f, ratio %.3f: %s\n", c->norm_a, c->norm_b,
                c->norm_fp32, c->norm_ratio, c->norm_ratio <= c->closeness ? "ok" : "FAIL");
    } else {
        fprintf(out, "compare: loss A %.9f B %.9f |diff| %.3e (rel %.3e, tolerance %g): %s\n", c->loss_a,
                c->loss_b, dl, dl / fabs(c->loss_a), tol->loss, dl <= tol->loss * fabs(c->loss_a) ? "ok" : "FAIL");
        fprintf(out, "compare: grad norm A %.6f B %.6f (rel %.3e, tolerance %g): %s\n", c->norm_a, c->norm_b,
                dn / c->norm_a, tol->grad, dn <= tol->grad * c->norm_a ? "ok" : "FAIL");
    }
    hp_verify_print_tensors(out, "gradients of step 1 (before clipping; B against A, TorchTitan names):", c->grads,
                            c->n, c->bf16);
    if (c->reduce_partials)
        fprintf(out, "compare: reduce dtype: B says float32 over %d partials; %d gradients are bf16 values in "
                     "every element (summed in bfloat16): %s\n", c->reduce_partials, c->reduce_bf16,
                c->reduce_bf16 ? "FAIL" : "ok");
    if (c->identical)
        fprintf(out, "compare: byte for byte: identical (the loss and %d gradients)\n", c->n);
    else if (!strcmp(c->diff_name, "loss"))
        fprintf(out, "compare: byte for byte: the gradients are identical, the loss is not (A %a, B %a)%s\n",
                c->loss_a, c->loss_b, c->bitwise ? ": FAIL" : "");
    else
        fprintf(out, "compare: byte for byte: first difference %s[%lld]: A 0x%08x (%.9g), B 0x%08x (%.9g)%s\n",
                c->diff_name, c->diff_index, c->diff_a, bits_float(c->diff_a), c->diff_b, bits_float(c->diff_b),
                c->bitwise ? ": FAIL" : "");
    const char *same = c->identical ? "; identical byte for byte" : "";
    const hp_tensor_diff *w = c->n ? &c->grads[c->worst] : NULL;
    if (c->bf16)
        fprintf(out, "compare: %s (worst gradient %s, ratio %.3f; bound %g%s)%s%s\n", c->pass ? "PASS" : "FAIL",
                w ? w->name : "-", w ? w->ratio : 0.0, c->closeness, same, c->failure ? ": " : "",
                c->failure ? c->failure : "");
    else
        fprintf(out, "compare: %s (worst gradient %s, %.3e relative; tolerance %g%s)%s%s\n", c->pass ? "PASS" : "FAIL",
                w ? w->name : "-", w ? w->rel_fro : 0.0, tol->grad, same, c->failure ? ": " : "",
                c->failure ? c->failure : "");
}

void hp_dump_comparison_free(hp_dump_comparison *c) {
    free(c->grads);
    c->grads = NULL;
    c->n = 0;
}
