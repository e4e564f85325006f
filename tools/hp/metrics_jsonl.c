// metrics_jsonl.c - the records of {job.dump_folder}/metrics.jsonl: one JSON object a line,
// written whole and flushed, so that a reader (or a crash) sees only complete lines.
// defines: tool_metrics_jsonl_job, tool_metrics_jsonl_train, tool_metrics_jsonl_val
//
// Numbers are cJSON's: the shortest of %.15g and %.17g that reads back to the same double
// (round-trip precision); a non-finite one is written as null. The keys are docs/metrics.md's.
#include <cjson/cJSON.h>
#include "metrics.h"

// Prints o unformatted as one line and frees it. 0, or -1 when it could not be written.
static int put_line(FILE *f, cJSON *o) {
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return -1;
    const int bad = fputs(text, f) < 0 || fputc('\n', f) == EOF || fflush(f) != 0;
    cJSON_free(text);
    return bad ? -1 : 0;
}

int tool_metrics_jsonl_job(FILE *f, const tool_metrics_job *j) {
    const tool_cli *cli = j->cli;
    const hp_model_config *m = &cli->model;
    const hp_dims *d = &cli->dims;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "job");
    cJSON_AddStringToObject(o, "model", m->name);
    cJSON_AddNumberToObject(o, "world", j->world);
    cJSON_AddNumberToObject(o, "params", (double)j->flops.params);
    cJSON_AddNumberToObject(o, "embedding_params", (double)j->flops.embedding);
    cJSON_AddNumberToObject(o, "routed_expert_params", (double)j->flops.routed);
    cJSON_AddNumberToObject(o, "F", j->flops.F);
    cJSON_AddNumberToObject(o, "peak", j->peak);
    cJSON_AddStringToObject(o, "isa", j->isa);
    cJSON_AddStringToObject(o, "peak_source", j->peak_source ? j->peak_source : "");
    cJSON_AddNumberToObject(o, "blas_threads", j->blas_threads);
    cJSON_AddNumberToObject(o, "mem_total_gib", j->mem_total_gib);
    // the shapes F is made of, so that a reader can recount it
    cJSON_AddNumberToObject(o, "vocab_size", m->vocab_size);
    cJSON_AddNumberToObject(o, "dim", m->dim);
    cJSON_AddNumberToObject(o, "n_layers", m->n_layers);
    cJSON_AddNumberToObject(o, "n_heads", m->n_heads);
    cJSON_AddNumberToObject(o, "head_dim", hp_model_head_dim(m));
    cJSON_AddNumberToObject(o, "num_experts", m->num_experts);
    cJSON_AddNumberToObject(o, "top_k", m->top_k);
    cJSON_AddNumberToObject(o, "moe_hidden", m->moe_hidden);
    cJSON_AddNumberToObject(o, "n_dense_layers", m->n_dense_layers);
    cJSON_AddNumberToObject(o, "seq_len", cli->run.seq_len);
    cJSON_AddNumberToObject(o, "global_batch_size", cli->run.batch);
    cJSON_AddNumberToObject(o, "steps", cli->run.steps);
    cJSON_AddNumberToObject(o, "first_step", j->first_step);
    cJSON_AddNumberToObject(o, "log_freq", cli->log_freq);
    cJSON *par = cJSON_AddObjectToObject(o, "parallelism");
    cJSON_AddNumberToObject(par, "dp_replicate", d->dp_replicate);
    cJSON_AddNumberToObject(par, "dp_shard", d->dp_shard);
    cJSON_AddNumberToObject(par, "cp", d->cp);
    cJSON_AddNumberToObject(par, "tp", d->tp);
    cJSON_AddNumberToObject(par, "pp", d->pp);
    cJSON_AddNumberToObject(par, "ep", d->ep);
    cJSON_AddNumberToObject(par, "etp", d->etp);
    cJSON_AddNumberToObject(par, "ulysses", d->ulysses);
    cJSON_AddStringToObject(o, "dataset", cli->run.data_path ? cli->run.data_path : "");
    if (j->val && j->val->data) {
        cJSON_AddStringToObject(o, "val_dataset", j->val->path ? j->val->path : "");
        cJSON_AddNumberToObject(o, "val_batches", (double)j->val->batches);
        cJSON_AddNumberToObject(o, "val_freq", j->val->freq);
    }
    return put_line(f, o);
}

int tool_metrics_jsonl_train(FILE *f, const tool_metrics_train *t) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "train");
    cJSON_AddNumberToObject(o, "step", t->step);
    cJSON_AddNumberToObject(o, "loss", t->loss);
    cJSON_AddNumberToObject(o, "grad_norm", t->grad_norm);
    cJSON_AddNumberToObject(o, "lr", t->lr);
    cJSON_AddNumberToObject(o, "tokens_seen", (double)t->tokens_seen);
    cJSON_AddNumberToObject(o, "elapsed_s", t->elapsed_s);
    cJSON_AddNumberToObject(o, "memory_gib", t->memory_gib);
    cJSON_AddNumberToObject(o, "memory_gib_max", t->memory_gib_max);
    cJSON_AddNumberToObject(o, "memory_pct", t->memory_pct);
    cJSON_AddNumberToObject(o, "tps", t->tps);
    cJSON_AddNumberToObject(o, "tflops", t->tflops);
    cJSON_AddNumberToObject(o, "mfu_pct", t->mfu_pct);
    return put_line(f, o);
}

int tool_metrics_jsonl_val(FILE *f, const tool_metrics_valrec *v) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "val");
    cJSON_AddNumberToObject(o, "step", v->step);
    cJSON_AddNumberToObject(o, "loss", v->loss);
    cJSON_AddNumberToObject(o, "tokens", (double)v->tokens);
    cJSON_AddNumberToObject(o, "batches", (double)v->batches);
    cJSON_AddNumberToObject(o, "tps", v->tps);
    cJSON_AddNumberToObject(o, "elapsed_s", v->elapsed_s);
    return put_line(f, o);
}
