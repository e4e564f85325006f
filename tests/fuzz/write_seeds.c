// write_seeds.c - writes the safetensors seed corpus with the project's own writer, so the
// fuzzer starts from the files hyperpar really makes (then mutates them into the ones it does
// not). tests/fuzz/corpus/safetensors/st_*.safetensors came from this program; `make fuzz` runs
// it again into build-fuzz/corpus/safetensors so the seeds follow the writer.
//   fuzz_write_seeds DIR    -> DIR/st_empty.safetensors, DIR/st_model.safetensors, ...
#include <stdio.h>
#include <string.h>
#include "hyperpar/safetensors.h"

static int save(hp_st_writer *w, const char *dir, const char *name) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = hp_st_writer_save(w, path, err, sizeof err);
    if (rc) fprintf(stderr, "fuzz_write_seeds: %s\n", err);
    hp_st_writer_free(w);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    const char *dir = argv[1];
    float f[24];
    int ids[8];
    for (int i = 0; i < 24; i++) f[i] = 0.25f * (float)(i - 7);
    for (int i = 0; i < 8; i++) ids[i] = 3 * i - 5;
    int rc = 0;

    rc |= save(hp_st_writer_init(), dir, "st_empty.safetensors");   // "{}" and padding only

    hp_st_writer *w = hp_st_writer_init();                           // a model's shapes, metadata
    hp_st_writer_metadata(w, "format", "pt");
    hp_st_writer_metadata(w, "note", "hyperpar \"seed\"");
    hp_st_writer_add(w, "tok_embeddings.weight", HP_DT_F32, 2, (int64_t[]){ 4, 3 }, f);
    hp_st_writer_add(w, "layers.0.attention.wq.weight", HP_DT_F32, 2, (int64_t[]){ 3, 3 }, f + 3);
    hp_st_writer_add(w, "norm.weight", HP_DT_F32, 1, (int64_t[]){ 3 }, f);
    hp_st_writer_add(w, "tokens", HP_DT_I32, 2, (int64_t[]){ 2, 4 }, ids);
    rc |= save(w, dir, "st_model.safetensors");

    w = hp_st_writer_init();                                         // scalar, empty, 8 dims
    hp_st_writer_add(w, "loss", HP_DT_F32, 0, NULL, f + 1);
    hp_st_writer_add(w, "nothing", HP_DT_F32, 2, (int64_t[]){ 0, 5 }, NULL);
    hp_st_writer_add(w, "deep", HP_DT_I32, 8, (int64_t[]){ 1, 2, 1, 2, 1, 2, 1, 1 }, ids);
    rc |= save(w, dir, "st_shapes.safetensors");

    w = hp_st_writer_init();                                         // metadata only
    hp_st_writer_metadata(w, "format", "pt");
    rc |= save(w, dir, "st_meta.safetensors");
    return rc ? 1 : 0;
}
