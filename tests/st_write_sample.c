// st_write_sample.c - writes a small safetensors file with known contents through hp_st_writer,
// so that tests/read_safetensors.py (written against the format alone) can check it.
// usage: st_write_sample OUT.safetensors
#include "hyperpar/safetensors.h"

#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s OUT.safetensors\n", argv[0]); return 2; }
    float emb[4 * 3];                           // (V=4, D=3), value 0.25*i: sum 16.5
    for (int i = 0; i < 12; i++) emb[i] = 0.25f * (float)i;
    int tokens[2 * 4];                          // (B=2, S=4), value i - 3: sum 4
    for (int i = 0; i < 8; i++) tokens[i] = i - 3;
    float norm[3] = {1.0f, 1.0f, 1.0f};         // sum 3
    float loss = -1.5f;                         // a 0-d tensor
    char err[512];
    hp_st_writer *w = hp_st_writer_init();
    hp_st_writer_metadata(w, "format", "pt");
    hp_st_writer_metadata(w, "note", "hyperpar \"sample\"");
    hp_st_writer_add(w, "tok_embeddings.weight", HP_DT_F32, 2, (int64_t[]){4, 3}, emb);
    hp_st_writer_add(w, "tokens", HP_DT_I32, 2, (int64_t[]){2, 4}, tokens);
    hp_st_writer_add(w, "norm.weight", HP_DT_F32, 1, (int64_t[]){3}, norm);
    hp_st_writer_add(w, "loss", HP_DT_F32, 0, NULL, &loss);
    int rc = hp_st_writer_save(w, argv[1], err, sizeof err);
    hp_st_writer_free(w);
    if (rc) { fprintf(stderr, "%s\n", err); return 1; }
    printf("wrote %s\n", argv[1]);
    return 0;
}
