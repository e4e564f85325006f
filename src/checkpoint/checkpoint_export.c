// checkpoint_export.c - hp_ckpt_export: the pieces of a checkpoint put back together as full
// tensors under TorchTitan names, one safetensors file `hp run --load` reads (AdamW's moments
// too with with_optimizer, as "optimizer.state.<name>.exp_avg" / ".exp_avg_sq"). The parameters
// are F32, or BF16 (the RNE cast of the fp32 master) under export_dtype bfloat16.
// One process reads every file whole, so every file's CRC32 is checked here as well.
#include <stdlib.h>
#include <string.h>
#include "hyperpar/bf16.h"
#include "hyperpar/dims.h"
#include "hyperpar/safetensors.h"
#include "checkpoint/checkpoint_internal.h"
#include "util/file_io.h"

int hp_ckpt_export(const char *step_dir, const char *out, int with_optimizer, hp_mp_dtype export_dtype,
                   char *err, size_t errlen) {
    hp_ck_index ix;
    int e = hp_ck_index_load(step_dir, &ix, err, errlen);
    if (e) return e;
    int kinds = 1;
    for (int i = 0; i < ix.n_pieces; i++)
        if ((int)ix.pieces[i].kind + 1 > kinds) kinds = (int)ix.pieces[i].kind + 1;
    if (with_optimizer && kinds < 3) {
        snprintf(err, errlen, "checkpoint %s: --optimizer: saved with %s, no exp_avg/exp_avg_sq to export", step_dir,
                 ix.optimizer == HP_OPT_ADAMW ? "adamw" : "sgd");
        hp_ck_index_free(&ix);
        return HP_EXIT_CONFIG;
    }
    if (!with_optimizer) kinds = 1;
    if (hp_ck_index_check_coverage(&ix, kinds, err, errlen) != 0) { hp_ck_index_free(&ix); return HP_EXIT_CONFIG; }
    // full tensors, [kind][tensor]
    float **full = calloc((size_t)kinds * (size_t)ix.n_tensors + 1, sizeof(float *));
    for (int k = 0; k < kinds * ix.n_tensors; k++) {
        const hp_ck_tensor *t = &ix.tensors[k % ix.n_tensors];
        int64_t n = 1;
        for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
        full[k] = calloc((size_t)n + 1, sizeof(float));
    }
    e = 0;
    for (int f = 0; f < ix.n_files && !e; f++) {
        char path[4200];
        unsigned char *buf = NULL;
        size_t len = 0;
        if ((e = hp_ck_read_file(step_dir, &ix, f, path, sizeof path, &buf, &len, err, errlen))) break;
        if ((int64_t)len != ix.files[f].bytes) {
            snprintf(err, errlen, "checkpoint %s: %s: %zu bytes, the index says %lld", path,
                     (int64_t)len < ix.files[f].bytes ? "truncated" : "longer than written", len,
                     (long long)ix.files[f].bytes);
            e = HP_EXIT_CONFIG;
        }
        for (int i = 0; i < ix.n_pieces && !e; i++) {
            const hp_ck_piece *p = &ix.pieces[i];
            if (p->file != f) continue;
            const hp_ck_tensor *t = &ix.tensors[p->tensor];
            char bs[96];
            hp_box_str(&p->box, bs, sizeof bs);
            if (hp_ck_crc32(buf + p->offset, (size_t)p->nbytes) != p->crc) {
                snprintf(err, errlen, "checkpoint %s: tensor %s (%s, box %s): CRC32 mismatch (corrupted)", path,
                         t->name, hp_ck_kind_name[p->kind], bs);
                e = HP_EXIT_CONFIG;
                break;
            }
            if ((int)p->kind >= kinds) continue;
            int64_t ext[HP_CKPT_MAXDIM], zero[HP_CKPT_MAXDIM] = { 0, 0, 0 };
            for (int d = 0; d < t->ndim; d++) ext[d] = p->box.hi[d] - p->box.lo[d];
            // the piece is 8-byte aligned in the file (safetensors pads the header), copy anyway
            float *src = malloc((size_t)p->nbytes + 4);
            memcpy(src, buf + p->offset, (size_t)p->nbytes);
            hp_box_copy(&p->box, src, p->box.lo, ext, full[p->kind * ix.n_tensors + p->tensor], zero, t->shape);
            free(src);
        }
        if (!e && hp_ck_crc32(buf, len) != ix.files[f].crc) {
            snprintf(err, errlen, "checkpoint %s: header: CRC32 mismatch (corrupted)", path);
            e = HP_EXIT_CONFIG;
        }
        free(buf);
    }
    if (!e) {
        hp_st_writer *w = hp_st_writer_init();
        static const char *const suffix[3] = { "", ".exp_avg", ".exp_avg_sq" };
        for (int k = 0; k < kinds; k++)
            for (int i = 0; i < ix.n_tensors; i++) {
                const hp_ck_tensor *t = &ix.tensors[i];
                const float *data = full[k * ix.n_tensors + i];
                char name[128];
                if (k == 0) snprintf(name, sizeof name, "%s", t->name);
                else snprintf(name, sizeof name, "optimizer.state.%s%s", t->name, suffix[k]);
                // the export dtype is the model's (TorchTitan's checkpoint.export_dtype): the
                // moments stay fp32, as a resumed optimizer needs them
                if (k == 0 && export_dtype == HP_DTYPE_BFLOAT16) {
                    int64_t n = 1;
                    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
                    hp_bf16 *packed = malloc((size_t)n * sizeof *packed + 2);
                    hp_bf16_pack(packed, data, (size_t)n);   // the RNE cast of the fp32 master
                    hp_st_writer_add(w, name, HP_DT_BF16, t->ndim, t->shape, packed);
                    free(packed);
                } else {
                    hp_st_writer_add(w, name, HP_DT_F32, t->ndim, t->shape, data);
                }
            }
        char step[32];
        snprintf(step, sizeof step, "%d", ix.step);
        hp_st_writer_metadata(w, "step", step);
        hp_st_writer_metadata(w, "model", ix.model.name);
        hp_st_writer_metadata(w, "export_dtype", hp_mp_dtype_name(export_dtype));
        if (hp_st_writer_save(w, out, err, errlen) != 0) e = HP_EXIT_FAIL;
        hp_st_writer_free(w);
    }
    for (int k = 0; k < kinds * ix.n_tensors; k++) free(full[k]);
    free(full);
    hp_ck_index_free(&ix);
    return e;
}

int hp_ckpt_model(const char *step_dir, hp_model_config *m, char *err, size_t errlen) {
    hp_ck_index ix;
    const int e = hp_ck_index_load(step_dir, &ix, err, errlen);
    if (e != 0) return e;
    *m = ix.model;
    hp_ck_index_free(&ix);
    return 0;
}
