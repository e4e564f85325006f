// verify_json.c - hp_verify_record <-> JSON (verify_record.h). One field table is both the
// writer and the reader, so a key cannot be written and forgotten by the reader. Every double
// is written as "%.17g" text (cJSON's own printing keeps 15 digits when they read back within
// ~2 ulps; strtod of 17 digits is exact), so a record reads back bit for bit; a non-finite
// value is written as null and reads back as unknown. Pure: no MPI (tests/fuzz runs the reader
// on any bytes).
// defines: hp_verify_record_init, hp_verify_record_print, hp_verify_record_write,
//          hp_verify_record_parse, hp_verify_record_load
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "hyperpar/verify_record.h"
#include "util/file_io.h"

typedef enum { F_BOOL, F_INT, F_DOUBLE, F_STRING, F_DOUBLES, F_INTS } field_kind;

typedef struct field {
    const char *key;
    field_kind  kind;
    size_t      off, size;   // the member (F_STRING: its capacity; arrays: the whole array)
    size_t      count_off;   // arrays: the int member that counts them
    int         verified;    // written only when the record holds a verification
} field;

#define M(member) offsetof(hp_verify_record, member), sizeof(((hp_verify_record *)0)->member)
#define SCALAR(key, kind, member, v) { key, kind, M(member), 0, v }
#define ARRAY(key, kind, member, count, v) { key, kind, M(member), offsetof(hp_verify_record, count), v }

// The file's keys. "losses" is also written as "losses_exact" strings (older readers use them),
// the pipeline's rows and statistics are nested and written apart (below).
static const field fields[] = {
    SCALAR("pass",            F_BOOL,   pass, 0),
    SCALAR("world",           F_INT,    world, 0),
    SCALAR("first_step",      F_INT,    first_step, 0),
    ARRAY ("losses",          F_DOUBLES, losses, steps, 0),
    SCALAR("loss",            F_DOUBLE, loss, 1),
    SCALAR("loss_ref",        F_DOUBLE, loss_ref, 1),
    SCALAR("loss_rel_err",    F_DOUBLE, loss_rel_err, 1),
    SCALAR("grad_norm",       F_DOUBLE, grad_norm, 1),
    SCALAR("grad_norm_ref",   F_DOUBLE, grad_norm_ref, 1),
    ARRAY ("losses_ref",      F_DOUBLES, losses_ref, steps_ref, 1),
    SCALAR("traj_worst",      F_DOUBLE, traj_worst, 1),
    SCALAR("tol_grad",        F_DOUBLE, tol_grad, 1),
    SCALAR("tol_param",       F_DOUBLE, tol_param, 1),
    SCALAR("worst_grad",      F_STRING, worst_grad, 1),
    SCALAR("worst_grad_rel",  F_DOUBLE, worst_grad_rel, 1),
    SCALAR("worst_param",     F_STRING, worst_param, 1),
    SCALAR("worst_param_rel", F_DOUBLE, worst_param_rel, 1),
    SCALAR("init_equal",      F_BOOL,   init_equal, 1),
    SCALAR("replica_diff",    F_DOUBLE, replica_diff, 1),
    SCALAR("traffic_ok",      F_BOOL,   traffic_ok, 1),
    SCALAR("bytes_counted",   F_DOUBLE, bytes_counted, 1),
    SCALAR("bytes_predicted", F_DOUBLE, bytes_predicted, 1),
    ARRAY ("route_flips",     F_INTS,   route_flips, n_moe_layers, 1),
    SCALAR("seconds",         F_DOUBLE, seconds, 1),
    SCALAR("failure",         F_STRING, failure, 1),
    SCALAR("precision",       F_STRING, precision, 0),
    SCALAR("closeness",       F_DOUBLE, closeness, 1),
    SCALAR("closeness_worst", F_DOUBLE, closeness_worst, 1),
    SCALAR("closeness_worst_of", F_STRING, closeness_worst_of, 1),
    SCALAR("structure_checks", F_DOUBLE, structure_checks, 1),
    SCALAR("structure_mismatches", F_DOUBLE, structure_mismatches, 1),
    SCALAR("blas",            F_STRING, blas, 0),
    SCALAR("blas_core",       F_STRING, blas_core, 0),
    SCALAR("gemm",            F_STRING, gemm, 0),
    SCALAR("blas_threads_min", F_INT,   blas_threads_min, 0),
    SCALAR("blas_threads_max", F_INT,   blas_threads_max, 0),
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

void hp_verify_record_init(hp_verify_record *rec) {
    memset(rec, 0, sizeof *rec);
    rec->first_step = 1;
    rec->loss_rel_err = rec->traj_worst = rec->worst_grad_rel = rec->worst_param_rel = -1;
    rec->closeness = rec->closeness_worst = -1;
    snprintf(rec->precision, sizeof rec->precision, "float32");
}

// ---------------------------------------------------------------------------------------------
// writing

static cJSON *number(double v) {
    if (!isfinite(v)) return cJSON_CreateNull();
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    return cJSON_CreateRaw(buf);
}

static void add_field(cJSON *j, const hp_verify_record *rec, const field *f) {
    const char *p = (const char *)rec + f->off;
    const int count = f->kind >= F_DOUBLES ? *(const int *)((const char *)rec + f->count_off) : 0;
    const int max = (int)(f->size / (f->kind == F_DOUBLES ? sizeof(double) : sizeof(int)));
    cJSON *a = NULL;
    switch (f->kind) {
    case F_BOOL:   cJSON_AddBoolToObject(j, f->key, *(const int *)p); break;
    case F_INT:    cJSON_AddItemToObject(j, f->key, number(*(const int *)p)); break;
    case F_DOUBLE: cJSON_AddItemToObject(j, f->key, number(*(const double *)p)); break;
    case F_STRING: if (p[0]) cJSON_AddStringToObject(j, f->key, p); break;   // "" is "none"
    case F_DOUBLES:
    case F_INTS:
        a = cJSON_AddArrayToObject(j, f->key);
        for (int i = 0; i < count && i < max; i++)
            cJSON_AddItemToArray(a, number(f->kind == F_DOUBLES ? ((const double *)p)[i] : ((const int *)p)[i]));
        break;
    }
}

static void add_pipeline(cJSON *j, const hp_verify_record *rec) {
    if (rec->pp_ranks > 0) {   // the verified run's last step, per pp rank
        cJSON *tl = cJSON_AddArrayToObject(j, "pp_timeline");
        for (int p = 0; p < rec->pp_ranks && p < HP_VERIFY_PP_RANKS; p++) {
            cJSON *acts = cJSON_CreateArray();
            for (int a = 0; a < rec->pp_n[p] && a < HP_VERIFY_PP_ACTIONS; a++) {
                cJSON *row = cJSON_CreateArray();
                for (int k = 0; k < 5; k++) cJSON_AddItemToArray(row, number(rec->pp_timeline[p][a][k]));
                cJSON_AddItemToArray(acts, row);
            }
            cJSON_AddItemToArray(tl, acts);
        }
    }
    if (rec->pp_stats > 1) {
        cJSON *a = cJSON_AddArrayToObject(j, "pp_ranks");
        for (int p = 0; p < rec->pp_stats && p < HP_VERIFY_MAX_PP; p++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToObject(o, "idle", number(rec->pp_idle[p]));
            cJSON_AddItemToObject(o, "microbatches_in_flight", number(rec->pp_in_flight[p]));
            cJSON_AddItemToObject(o, "activation_bytes", number(rec->pp_activation_bytes[p]));
            cJSON_AddItemToArray(a, o);
        }
    }
}

// "params_total", "memory", "traffic" and "plan_check": what the run measured (nested).
static void add_measured(cJSON *j, const hp_verify_record *rec) {
    if (!rec->measured) return;
    cJSON_AddItemToObject(j, "params_total", number(rec->params_total));
    cJSON *mem = cJSON_AddObjectToObject(j, "memory");
    cJSON_AddItemToObject(mem, "persistent_bytes", number(rec->mem_persistent));
    cJSON_AddItemToObject(mem, "peak_bytes", number(rec->mem_peak_total));
    cJSON *cur = cJSON_AddObjectToObject(mem, "current"), *pk = cJSON_AddObjectToObject(mem, "peak");
    for (int c = 0; c < HP_MEM_COUNT; c++) {
        cJSON_AddItemToObject(cur, hp_mem_category_name((hp_mem_category)c), number(rec->mem_current[c]));
        cJSON_AddItemToObject(pk, hp_mem_category_name((hp_mem_category)c), number(rec->mem_peak[c]));
    }
    cJSON *tr = cJSON_AddObjectToObject(j, "traffic");
    for (int i = 0; i < rec->n_traffic && i < HP_VERIFY_MAX_TRAFFIC; i++) {
        cJSON *g = cJSON_GetObjectItemCaseSensitive(tr, rec->traffic_group[i]);
        if (!g) g = cJSON_AddObjectToObject(tr, rec->traffic_group[i]);
        cJSON_AddItemToObject(g, rec->traffic_op[i], number(rec->traffic_bytes[i]));
    }
    if (!rec->plan_checked) return;
    cJSON *pc = cJSON_AddObjectToObject(j, "plan_check");
    cJSON_AddBoolToObject(pc, "pass", rec->plan_pass);
    cJSON_AddItemToObject(pc, "peak_predicted_bytes", number(rec->plan_peak_predicted));
    cJSON_AddItemToObject(pc, "peak_ratio", number(rec->plan_peak_ratio));
    if (rec->plan_why[0]) cJSON_AddStringToObject(pc, "why", rec->plan_why);
}

static cJSON *to_json(const hp_verify_record *rec) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    add_pipeline(j, rec);
    add_measured(j, rec);
    for (int i = 0; i < N_FIELDS; i++) {
        if (fields[i].verified && !rec->verified) continue;
        add_field(j, rec, &fields[i]);
        if (!strcmp(fields[i].key, "losses")) {
            cJSON *lx = cJSON_AddArrayToObject(j, "losses_exact");
            for (int s = 0; s < rec->steps && s < HP_VERIFY_MAX_STEPS; s++) {
                char buf[40];
                snprintf(buf, sizeof buf, "%.17g", rec->losses[s]);
                cJSON_AddItemToArray(lx, cJSON_CreateString(buf));
            }
        }
    }
    return j;
}

char *hp_verify_record_print(const hp_verify_record *rec) {
    cJSON *j = to_json(rec);
    char *text = j ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    return text;
}

int hp_verify_record_write(const hp_verify_record *rec, const char *path) {
    cJSON *j = to_json(rec);
    const int e = j ? hp_json_save(j, path) : -1;
    cJSON_Delete(j);
    return e;
}

// ---------------------------------------------------------------------------------------------
// reading

// A JSON number as an int: converting a double outside int's range is undefined behaviour (the
// fuzzer's first find: "world": 1e300), so it saturates; NaN reads as 0.
static int saturate_int(double v) {
    if (v != v) return 0;
    if (v >= (double)INT_MAX) return INT_MAX;
    if (v <= (double)INT_MIN) return INT_MIN;
    return (int)v;
}

static void read_field(const cJSON *j, hp_verify_record *rec, const field *f) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, f->key), *e;
    char *p = (char *)rec + f->off;
    int *count = f->kind >= F_DOUBLES ? (int *)((char *)rec + f->count_off) : NULL;
    const int max = (int)(f->size / (f->kind == F_DOUBLES ? sizeof(double) : sizeof(int)));
    switch (f->kind) {
    case F_BOOL:   *(int *)p = cJSON_IsTrue(v); break;
    case F_INT:    if (cJSON_IsNumber(v)) *(int *)p = saturate_int(v->valuedouble); break;
    case F_DOUBLE: if (cJSON_IsNumber(v)) *(double *)p = v->valuedouble; break;
    case F_STRING: if (cJSON_IsString(v)) snprintf(p, f->size, "%s", v->valuestring); break;
    case F_DOUBLES:
    case F_INTS:
        *count = 0;
        cJSON_ArrayForEach(e, v) {
            if (*count >= max || !cJSON_IsNumber(e)) continue;
            if (f->kind == F_DOUBLES) ((double *)p)[(*count)++] = e->valuedouble;
            else ((int *)p)[(*count)++] = saturate_int(e->valuedouble);
        }
        break;
    }
}

// "pp_timeline": [[[op, stage, mb, t0, t1], ...] per pp rank]: only well-formed rows count.
static void read_timeline(const cJSON *j, hp_verify_record *rec) {
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(j, "pp_timeline"), *rk, *a;
    cJSON_ArrayForEach(rk, ranks) {
        if (rec->pp_ranks >= HP_VERIFY_PP_RANKS) break;
        const int p = rec->pp_ranks++;
        cJSON_ArrayForEach(a, rk) {
            if (rec->pp_n[p] >= HP_VERIFY_PP_ACTIONS || cJSON_GetArraySize(a) != 5) continue;
            double v[5];
            int ok = 1;
            for (int k = 0; k < 5; k++) {
                const cJSON *e = cJSON_GetArrayItem(a, k);
                ok &= cJSON_IsNumber(e) && isfinite(e->valuedouble) && fabs(e->valuedouble) <= 1e9;
                v[k] = ok ? e->valuedouble : 0;
            }
            if (!ok || v[0] < 0 || v[0] > 3 || v[3] < 0 || v[4] < v[3]) continue;
            float *row = rec->pp_timeline[p][rec->pp_n[p]++];
            for (int k = 0; k < 5; k++) row[k] = (float)v[k];
        }
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "pp_ranks"), *o;
    cJSON_ArrayForEach(o, st) {
        if (rec->pp_stats >= HP_VERIFY_MAX_PP) break;
        const cJSON *idle = cJSON_GetObjectItemCaseSensitive(o, "idle");
        const cJSON *fl = cJSON_GetObjectItemCaseSensitive(o, "microbatches_in_flight");
        const cJSON *ab = cJSON_GetObjectItemCaseSensitive(o, "activation_bytes");
        const int p = rec->pp_stats++;
        rec->pp_idle[p] = cJSON_IsNumber(idle) ? idle->valuedouble : 0;
        rec->pp_in_flight[p] = cJSON_IsNumber(fl) ? fl->valuedouble : 0;
        rec->pp_activation_bytes[p] = cJSON_IsNumber(ab) ? ab->valuedouble : 0;
    }
}

static double num_or(const cJSON *v, double dflt) { return cJSON_IsNumber(v) ? v->valuedouble : dflt; }

// The measured block (add_measured); a missing "memory" leaves measured = 0.
static void read_measured(const cJSON *j, hp_verify_record *rec) {
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(j, "memory"), *g, *o;
    if (!cJSON_IsObject(mem)) return;
    rec->measured = 1;
    rec->params_total = num_or(cJSON_GetObjectItemCaseSensitive(j, "params_total"), 0);
    rec->mem_persistent = num_or(cJSON_GetObjectItemCaseSensitive(mem, "persistent_bytes"), 0);
    rec->mem_peak_total = num_or(cJSON_GetObjectItemCaseSensitive(mem, "peak_bytes"), 0);
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(mem, "current");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(mem, "peak");
    for (int c = 0; c < HP_MEM_COUNT; c++) {
        const char *name = hp_mem_category_name((hp_mem_category)c);
        rec->mem_current[c] = num_or(cJSON_GetObjectItemCaseSensitive(cur, name), 0);
        rec->mem_peak[c] = num_or(cJSON_GetObjectItemCaseSensitive(pk, name), 0);
    }
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(j, "traffic")) {
        cJSON_ArrayForEach(o, g) {
            if (rec->n_traffic >= HP_VERIFY_MAX_TRAFFIC || !g->string || !o->string || !cJSON_IsNumber(o)) continue;
            const int i = rec->n_traffic++;
            snprintf(rec->traffic_group[i], sizeof rec->traffic_group[i], "%s", g->string);
            snprintf(rec->traffic_op[i], sizeof rec->traffic_op[i], "%s", o->string);
            rec->traffic_bytes[i] = o->valuedouble;
        }
    }
    const cJSON *pc = cJSON_GetObjectItemCaseSensitive(j, "plan_check");
    if (!cJSON_IsObject(pc)) return;
    rec->plan_checked = 1;
    rec->plan_pass = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pc, "pass"));
    rec->plan_peak_predicted = num_or(cJSON_GetObjectItemCaseSensitive(pc, "peak_predicted_bytes"), 0);
    rec->plan_peak_ratio = num_or(cJSON_GetObjectItemCaseSensitive(pc, "peak_ratio"), 0);
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(pc, "why");
    if (cJSON_IsString(why)) snprintf(rec->plan_why, sizeof rec->plan_why, "%s", why->valuestring);
}

static void from_json(const cJSON *j, hp_verify_record *rec) {
    for (int i = 0; i < N_FIELDS; i++) read_field(j, rec, &fields[i]);
    // the exact text of the same losses, when present: strtod reads "%.17g" and "%a"
    const cJSON *lx = cJSON_GetObjectItemCaseSensitive(j, "losses_exact"), *e;
    if (rec->steps > 0 && cJSON_GetArraySize(lx) == rec->steps) {
        int k = 0;
        cJSON_ArrayForEach(e, lx) {
            if (cJSON_IsString(e)) rec->losses[k] = strtod(e->valuestring, NULL);
            k++;
        }
        rec->exact = 1;
    }
    rec->verified = cJSON_GetObjectItemCaseSensitive(j, "losses_ref") != NULL;
    read_timeline(j, rec);
    read_measured(j, rec);
}

int hp_verify_record_parse(hp_verify_record *rec, const char *text, size_t len) {
    hp_verify_record_init(rec);
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (!j) return -1;
    from_json(j, rec);
    cJSON_Delete(j);
    return 0;
}

int hp_verify_record_load(hp_verify_record *rec, const char *path) {
    hp_verify_record_init(rec);
    cJSON *j = hp_json_load(path);
    if (!j) return -1;
    from_json(j, rec);
    cJSON_Delete(j);
    return 0;
}
