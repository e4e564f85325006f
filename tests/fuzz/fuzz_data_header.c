// fuzz_data_header.c - the token-file readers of src/data on any bytes (training-job.md §4):
// the bytes as an llm.c shard, as a Megatron .idx (its .bin: the same bytes), as raw uint16 /
// uint32 / bytes, and as a file through hp_data_open (detection, mapping, the vocab scan).
// Invariants checked (abort when broken): a refusal leaves one line naming the file; an accepted
// shard's tokens lie inside the bytes given (ASan catches a read outside), and once the vocab scan
// passes every id read back through the windows is in [0, V).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "data/data_internal.h"
#include "hyperpar/data.h"
#include "fuzz_target.h"

enum { V = 300, S = 6 };

static void one_line(const char *err) {
    if (!err[0] || strchr(err, '\n')) abort();
}

// Reads every window of an accepted shard; when the scan passed, every id must be in [0, V).
static void read_all(const hp_data_shard *sh) {
    char err[512];
    const int scanned = hp_data_scan_vocab(sh, V, err, sizeof err) == 0;
    if (!scanned) one_line(err);
    int ids[S + 1];
    for (int64_t t = 0; t + S + 1 <= sh->n_tokens; t += S + 1) {
        hp_data_shard_read(sh, ids, t, S + 1);
        for (int i = 0; i <= S && scanned; i++)
            if (ids[i] < 0 || ids[i] >= V) abort();
    }
}

static void as_file(const uint8_t *data, size_t size, hp_data_format format) {
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/hp_fuzz_data_%d.bin", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return;
    const size_t put = size ? fwrite(data, 1, size, f) : 0;
    fclose(f);
    if (put != size) { remove(path); return; }
    char err[512];
    hp_data *d = hp_data_open(path, format, V, err, sizeof err);
    if (!d) {
        one_line(err);
        if (!strstr(err, path)) abort();
    } else {
        int ids[S + 1];
        const int64_t nw = hp_data_windows(d, S);
        for (int64_t w = 0; w < nw && w < 64; w++) {
            hp_data_window(d, ids, w, S);
            for (int i = 0; i <= S; i++)
                if (ids[i] < 0 || ids[i] >= V) abort();
        }
        hp_data_close(d);
    }
    remove(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    hp_data_shard sh;
    (void)hp_data_sniff(data, size);
    if (hp_data_parse_llmc(&sh, data, (int64_t)size, "fuzz", err, sizeof err) == 0) read_all(&sh);
    else one_line(err);
    hp_data_shard_free(&sh);
    if (hp_data_parse_megatron(&sh, data, (int64_t)size, "fuzz.idx", data, (int64_t)size, "fuzz.bin", err,
                               sizeof err) == 0)
        read_all(&sh);
    else one_line(err);
    hp_data_shard_free(&sh);
    const hp_data_format raw[3] = { HP_DATA_UINT16, HP_DATA_UINT32, HP_DATA_BYTES };
    for (int k = 0; k < 3; k++) {
        if (hp_data_parse_raw(&sh, raw[k], data, (int64_t)size, "fuzz", err, sizeof err) == 0) read_all(&sh);
        else one_line(err);
        hp_data_shard_free(&sh);
    }
    as_file(data, size, HP_DATA_AUTO_BYTES);
    as_file(data, size, HP_DATA_AUTO);
    return 0;
}
