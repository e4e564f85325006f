// metrics_jsonl.c - the records of {job.dump_folder}/metrics.jsonl: one JSON object a line,
// written whole and flushed, so that a reader (or a crash) sees only complete lines.
// defines: hp_metrics_jsonl_job, hp_metrics_jsonl_train, hp_metrics_jsonl_val, hp_metrics_jsonl_sample,
//          hp_metrics_jsonl_carry
//
// Numbers are written at round-trip precision: the shortest of %.15g, %.16g and %.17g that
// strtod reads back to the same double, bit for bit; a non-finite one is written as null. (Not
// cJSON's own printing: it takes %.15g when the reading is within DBL_EPSILON, so a loss could
// lose its last bit and differ from --json's.) The keys are docs/metrics.md's.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "hyperpar/metrics.h"

// o[key] = v, exactly (above).
static void add_number(cJSON *o, const char *key, double v) {
    if (!isfinite(v)) { cJSON_AddNullToObject(o, key); return; }
    char text[32];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        if (strtod(text, NULL) == v) break;
    }
    cJSON_AddRawToObject(o, key, text);
}

// Prints o unformatted as one line and frees it. 0, or -1 when it could not be written.
static int put_line(FILE *f, cJSON *o) {
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return -1;
    const int bad = fputs(text, f) < 0 || fputc('\n', f) == EOF || fflush(f) != 0;
    cJSON_free(text);
    return bad ? -1 : 0;
}

int hp_metrics_jsonl_job(FILE *f, const hp_metrics_job *j) {
    const hp_job *job = j->job;
    const hp_model_config *m = &job->model;
    const hp_dims *d = &job->dims;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "job");
    cJSON_AddStringToObject(o, "model", m->name);
    add_number(o, "world", j->world);
    add_number(o, "params", (double)j->flops.params);
    add_number(o, "embedding_params", (double)j->flops.embedding);
    add_number(o, "routed_expert_params", (double)j->flops.routed);
    add_number(o, "F", j->flops.F);
    add_number(o, "peak", j->peak);
    cJSON_AddStringToObject(o, "isa", j->isa);
    cJSON_AddStringToObject(o, "peak_source", j->peak_source ? j->peak_source : "");
    add_number(o, "blas_threads", j->blas_threads);
    add_number(o, "mem_total_gib", j->mem_total_gib);
    // the shapes F is made of, so that a reader can recount it
    add_number(o, "vocab_size", m->vocab_size);
    add_number(o, "dim", m->dim);
    add_number(o, "n_layers", m->n_layers);
    add_number(o, "n_heads", m->n_heads);
    add_number(o, "head_dim", hp_model_head_dim(m));
    add_number(o, "num_experts", m->num_experts);
    add_number(o, "top_k", m->top_k);
    add_number(o, "moe_hidden", m->moe_hidden);
    add_number(o, "n_dense_layers", m->n_dense_layers);
    add_number(o, "seq_len", job->run.seq_len);
    add_number(o, "global_batch_size", job->run.batch);
    add_number(o, "steps", job->run.steps);
    add_number(o, "first_step", j->first_step);
    add_number(o, "log_freq", job->log_freq);
    cJSON *par = cJSON_AddObjectToObject(o, "parallelism");
    add_number(par, "dp_replicate", d->dp_replicate);
    add_number(par, "dp_shard", d->dp_shard);
    add_number(par, "cp", d->cp);
    add_number(par, "tp", d->tp);
    add_number(par, "pp", d->pp);
    add_number(par, "ep", d->ep);
    add_number(par, "etp", d->etp);
    add_number(par, "ulysses", d->ulysses);
    cJSON_AddStringToObject(o, "dataset", job->run.data_path ? job->run.data_path : "");
    if (j->val && j->val->data) {
        cJSON_AddStringToObject(o, "val_dataset", j->val->path ? j->val->path : "");
        add_number(o, "val_batches", (double)j->val->batches);
        add_number(o, "val_freq", j->val->freq);
    }
    return put_line(f, o);
}

int hp_metrics_jsonl_train(FILE *f, const hp_metrics_train *t) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "train");
    add_number(o, "step", t->step);
    add_number(o, "loss", t->loss);
    add_number(o, "grad_norm", t->grad_norm);
    add_number(o, "lr", t->lr);
    add_number(o, "tokens_seen", (double)t->tokens_seen);
    add_number(o, "elapsed_s", t->elapsed_s);
    add_number(o, "memory_gib", t->memory_gib);
    add_number(o, "memory_gib_max", t->memory_gib_max);
    add_number(o, "memory_pct", t->memory_pct);
    add_number(o, "tps", t->tps);
    add_number(o, "tflops", t->tflops);
    add_number(o, "mfu_pct", t->mfu_pct);
    return put_line(f, o);
}

int hp_metrics_jsonl_val(FILE *f, const hp_metrics_valrec *v) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "val");
    add_number(o, "step", v->step);
    add_number(o, "loss", v->loss);
    add_number(o, "tokens", (double)v->tokens);
    add_number(o, "batches", (double)v->batches);
    add_number(o, "tps", v->tps);
    add_number(o, "elapsed_s", v->elapsed_s);
    return put_line(f, o);
}

int hp_metrics_jsonl_sample(FILE *f, const hp_metrics_samplerec *s) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "sample");
    add_number(o, "step", s->step);
    cJSON_AddStringToObject(o, "prompt", s->prompt ? s->prompt : "");
    cJSON_AddItemToObject(o, "ids", cJSON_CreateIntArray(s->ids, s->n));
    cJSON_AddStringToObject(o, "text", s->text ? s->text : "");
    add_number(o, "tps", s->tps);
    add_number(o, "elapsed_s", s->elapsed_s);
    return put_line(f, o);
}

static double number_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int hp_metrics_jsonl_carry(FILE *f, const char *text, size_t len, int first_step, hp_metrics_point_fn point,
                             void *ctx) {
    int kept = 0;
    for (size_t at = 0; at < len;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', len - at);
        const size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        cJSON *o = cJSON_ParseWithLength(line, n);
        const cJSON *type = o ? cJSON_GetObjectItemCaseSensitive(o, "type") : NULL;
        const char *kind = cJSON_IsString(type) ? type->valuestring : "";
        const double step = number_of(o, "step");
        const int job = !strcmp(kind, "job");
        const int curve = !strcmp(kind, "train") || !strcmp(kind, "val");
        const int record = (curve || !strcmp(kind, "sample")) && step >= 1 && step < first_step;
        if (job || record) {
            if (fwrite(line, 1, n, f) != n || fputc('\n', f) == EOF) { cJSON_Delete(o); return -1; }
            if (record && curve) {
                point(ctx, kind[0] == 't' ? 't' : 'v', (int)step, number_of(o, "loss"),
                      kind[0] == 't' ? number_of(o, "lr") : 0.0);
                kept++;
            }
        }
        cJSON_Delete(o);
    }
    return fflush(f) == 0 ? kept : -1;
}
