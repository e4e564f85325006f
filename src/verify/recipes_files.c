// recipes_files.c - the bad input files the negative cases load (recipes.h): a model of `tiny`
// built from the parameter table, damaged one way per file.
// defines: hp_negative_write_files
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hyperpar/recipes.h"
#include "hyperpar/dims.h"
#include "hyperpar/params.h"
#include "hyperpar/safetensors.h"


static int write_model(const char *path, const hp_param_table *t, hp_badfile kind, char *err, int errlen) {
    float *zeros = calloc((size_t)t->full_numel, sizeof(float));
    if (!zeros) { snprintf(err, (size_t)errlen, "out of memory"); return -1; }
    hp_st_writer *w = hp_st_writer_init();
    for (int i = 0; i < t->n; i++) {
        const hp_param *p = &t->p[i];
        int64_t shape[3] = { p->shape[0], p->shape[1], p->shape[2] };
        const char *name = p->name;
        // same numel, so the data offsets stay consistent: only the shape is wrong
        if (kind == HP_BADFILE_SHAPE && !strcmp(name, "tok_embeddings.weight")) {
            shape[0] = p->shape[1];
            shape[1] = p->shape[0];
        }
        if (kind == HP_BADFILE_NAMES && !strcmp(name, "output.weight")) name = "lm_head.weight";
        hp_st_writer_add(w, name, HP_DT_F32, p->ndim, shape, zeros);
    }
    char e[256] = "";
    int rc = hp_st_writer_save(w, path, e, sizeof e);
    hp_st_writer_free(w);
    free(zeros);
    if (rc != 0) { snprintf(err, (size_t)errlen, "%s", e); return -1; }
    return 0;
}

int hp_negative_write_files(const char *dir, char *err, int errlen) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, (size_t)errlen, "cannot create '%s': %s", dir, strerror(errno));
        return -1;
    }
    hp_model_config m;
    hp_model_config_by_name("tiny", &m);
    hp_run_config rc;
    hp_run_config_default(&rc);
    hp_dims d = hp_dims_default();
    d.world = 1;
    char e[256];
    if (hp_dims_validate(&d, &m, &rc, e, sizeof e) != 0) {
        snprintf(err, (size_t)errlen, "%s", e);
        return -1;
    }
    hp_param_table t;
    if (hp_params_build(&t, &m, &d, 0) != 0) {
        snprintf(err, (size_t)errlen, "cannot build the parameter table of 'tiny'");
        return -1;
    }
    char path[1024];
    int bad = 0;
    snprintf(path, sizeof path, "%s/truncated.safetensors", dir);
    if (!bad && write_model(path, &t, HP_BADFILE_TRUNCATED, err, errlen) != 0) bad = 1;
    if (!bad) {
        // cut the complete file in half: the header promises data that is not there
        struct stat st;
        if (stat(path, &st) != 0 || truncate(path, st.st_size / 2) != 0) {
            snprintf(err, (size_t)errlen, "cannot truncate '%s': %s", path, strerror(errno));
            bad = 1;
        }
    }
    snprintf(path, sizeof path, "%s/wrong_shape.safetensors", dir);
    if (!bad && write_model(path, &t, HP_BADFILE_SHAPE, err, errlen) != 0) bad = 1;
    snprintf(path, sizeof path, "%s/wrong_names.safetensors", dir);
    if (!bad && write_model(path, &t, HP_BADFILE_NAMES, err, errlen) != 0) bad = 1;
    snprintf(path, sizeof path, "%s/not_safetensors.txt", dir);
    if (!bad) {
        FILE *f = fopen(path, "w");
        if (!f) {
            snprintf(err, (size_t)errlen, "cannot write '%s': %s", path, strerror(errno));
            bad = 1;
        } else {
            fputs("this is a text file, not a safetensors model: no 8-byte header length here\n", f);
            fclose(f);
        }
    }
    hp_params_free(&t);
    return bad ? -1 : 0;
}
