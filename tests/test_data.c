// test_data.c - training data: synthetic ids are the counter hash mod V (deterministic, in
// range, different per step/sequence), text windows walk the file in order and wrap, and bad
// inputs give NULL / zero windows with one line. The token formats of training-job.md §4: the
// same ids written as an llm.c shard (v1, v7), Megatron .bin/.idx (three dtypes, with gaps
// between sequences), raw uint16 / uint32 read back identical; globs number windows shard by
// shard in bytewise order without crossing a shard; every bad file gives its one line.
#include "hyperpar/data.h"
#include "hyperpar/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test_check.h"


// writes n bytes to a fresh temp file; the caller unlinks it
static void temp_file(char *path, const unsigned char *bytes, size_t n) {
    strcpy(path, "/tmp/hp_test_data_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); exit(2); }
    if (n && write(fd, bytes, n) != (ssize_t)n) { perror("write"); exit(2); }
    close(fd);
}

// ---- writers of the formats (independent of src/data: the layout as the spec gives it)

static char dir[64];   // a fresh temp folder per run

static const char *at(const char *name) {
    static char buf[32][256];
    static int k;
    char *p = buf[k++ % 32];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

static void put_le(FILE *f, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) fputc((int)(v >> (8 * i) & 0xff), f);
}

static FILE *create(const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    return f;
}

// llm.c shard: 256 int32 header (magic, version, count), then the tokens; count_delta and
// trim bend the header's count and the file's length for the bad cases
static void write_llmc(const char *path, uint32_t magic, uint32_t version, const int *ids, int n, int count_delta,
                       int trim) {
    FILE *f = create(path);
    put_le(f, magic, 4);
    put_le(f, version, 4);
    put_le(f, (uint32_t)(n + count_delta), 4);
    for (int i = 3; i < 256; i++) put_le(f, 0, 4);
    const int w = magic == 20240520 ? 2 : 4;
    for (int i = 0; i < n; i++) put_le(f, (uint64_t)ids[i], w);
    fclose(f);
    if (trim && truncate(path, 1024 + (off_t)n * w - trim) != 0) { perror("truncate"); exit(2); }
}

static void write_raw(const char *path, const int *ids, int n, int w) {
    FILE *f = create(path);
    for (int i = 0; i < n; i++) put_le(f, (uint64_t)ids[i], w);
    fclose(f);
}

// Megatron PREFIX.idx / PREFIX.bin: the ids cut into sequences of lens[] tokens, each preceded
// in the .bin by `gap` junk tokens (pointers need not be contiguous); docs: every 2 sequences
static void write_megatron(const char *prefix, int code, const int *ids, const int *lens, int nseq, int gap) {
    const int widths[9] = { 0, 1, 1, 2, 4, 8, 8, 4, 2 };
    const int w = widths[code];
    char path[300];
    snprintf(path, sizeof path, "%s.bin", prefix);
    FILE *bin = create(path);
    int64_t pointers[64];
    int64_t pos = 0;
    for (int i = 0, t = 0; i < nseq; i++) {
        for (int j = 0; j < gap; j++) put_le(bin, 0x7fff, w);   // never read: past every vocab
        pos += (int64_t)gap * w;
        pointers[i] = pos;
        for (int j = 0; j < lens[i]; j++) put_le(bin, (uint64_t)ids[t++], w);
        pos += (int64_t)lens[i] * w;
    }
    fclose(bin);
    int ndocs = 1 + (nseq + 1) / 2;
    snprintf(path, sizeof path, "%s.idx", prefix);
    FILE *idx = create(path);
    fwrite("MMIDIDX\0\0", 1, 9, idx);
    put_le(idx, 1, 8);
    fputc(code, idx);
    put_le(idx, (uint64_t)nseq, 8);
    put_le(idx, (uint64_t)ndocs, 8);
    for (int i = 0; i < nseq; i++) put_le(idx, (uint64_t)lens[i], 4);
    for (int i = 0; i < nseq; i++) put_le(idx, (uint64_t)pointers[i], 8);
    for (int d = 0; d < ndocs; d++) put_le(idx, (uint64_t)(d * 2 < nseq ? d * 2 : nseq), 8);
    fclose(idx);
}

// Overwrites `bytes` bytes at offset of path with the LE value v.
static void poke(const char *path, long offset, uint64_t v, int bytes) {
    FILE *f = fopen(path, "r+b");
    if (!f) { perror(path); exit(2); }
    fseek(f, offset, SEEK_SET);
    put_le(f, v, bytes);
    fclose(f);
}

// Opening path in format must fail with a line containing want (and nothing after a newline).
static void expect_refused(const char *path, hp_data_format format, int V, const char *want) {
    char err[512];
    hp_data *d = hp_data_open(path, format, V, err, sizeof err);
    CHECK(d == NULL && strstr(err, want) && !strchr(err, '\n'), "%s (%s): want '%s', got '%s'", path,
          hp_data_format_name(format), want, d ? "(opened)" : err);
    hp_data_close(d);
}

static void test_formats(void) {
    char err[512];
    enum { N = 203, S = 9, V = 1000 };   // 20 windows of 10 and a 3-token tail
    int ids[N];
    for (int i = 0; i < N; i++) ids[i] = (i * 37 + 11) % 700;   // ids above 255 need two bytes
    const int lens[5] = { 50, 0, 73, 60, 20 };                  // an empty sequence too
    write_llmc(at("v1.bin"), 20240520, 1, ids, N, 0, 0);
    write_llmc(at("v7.bin"), 20240801, 7, ids, N, 0, 0);
    write_raw(at("train.u16"), ids, N, 2);
    write_raw(at("train.u32"), ids, N, 4);
    write_megatron(at("meg16"), 8, ids, lens, 5, 0);
    write_megatron(at("meg32"), 4, ids, lens, 5, 3);
    write_megatron(at("meg64"), 5, ids, lens, 5, 1);
    struct { const char *path; hp_data_format format, found; int bytes; } cases[] = {
        { at("v1.bin"), HP_DATA_AUTO, HP_DATA_LLMC, 2 },        { at("v7.bin"), HP_DATA_AUTO, HP_DATA_LLMC, 4 },
        { at("v1.bin"), HP_DATA_LLMC, HP_DATA_LLMC, 2 },        { at("train.u16"), HP_DATA_UINT16, HP_DATA_UINT16, 2 },
        { at("train.u32"), HP_DATA_UINT32, HP_DATA_UINT32, 4 }, { at("meg16"), HP_DATA_AUTO, HP_DATA_MEGATRON, 2 },
        { at("meg16.idx"), HP_DATA_AUTO, HP_DATA_MEGATRON, 2 }, { at("meg16.bin"), HP_DATA_AUTO, HP_DATA_MEGATRON, 2 },
        { at("meg32"), HP_DATA_MEGATRON, HP_DATA_MEGATRON, 4 }, { at("meg64.bin"), HP_DATA_MEGATRON, HP_DATA_MEGATRON, 8 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        hp_data *d = hp_data_open(cases[c].path, cases[c].format, V, err, sizeof err);
        CHECK(d != NULL, "%s: %s", cases[c].path, err);
        if (!d) continue;
        CHECK(hp_data_found_format(d) == cases[c].found && hp_data_token_bytes(d) == cases[c].bytes,
              "%s: found %s, %d bytes", cases[c].path, hp_data_format_name(hp_data_found_format(d)), hp_data_token_bytes(d));
        int64_t bytes = 0, tokens = 0;
        CHECK(hp_data_n_files(d) == 1 && hp_data_file(d, 0, &bytes, &tokens) && tokens == N && bytes > 0,
              "%s: files %d, tokens %lld", cases[c].path, hp_data_n_files(d), (long long)tokens);
        CHECK(hp_data_windows(d, S) == N / (S + 1), "%s: %lld windows", cases[c].path, (long long)hp_data_windows(d, S));
        int same = 1, w[S + 1];
        for (int step = 1; step <= 7; step++)   // 7 steps of 4 wrap the 20 windows
            for (int g = 0; g < 4; g++) {
                hp_data_sequence(d, w, 99, step, g, 4, S);
                const int win = ((step - 1) * 4 + g) % (N / (S + 1));
                for (int i = 0; i <= S; i++) same &= w[i] == ids[win * (S + 1) + i];
            }
        CHECK(same, "%s: windows differ from the ids written", cases[c].path);
        hp_data_close(d);
    }

    // a glob: shards in bytewise order ("B" < "a" < "b"), each with its own tail, never crossed
    const int n0 = 25, n1 = 31, n2 = 10;   // 2, 3 and 1 windows of 10
    write_llmc(at("sh_a.bin"), 20240520, 1, ids + 100, n1, 0, 0);
    write_llmc(at("sh_B.bin"), 20240520, 1, ids, n0, 0, 0);
    write_llmc(at("sh_b.bin"), 20240520, 1, ids + 150, n2, 0, 0);
    hp_data *d = hp_data_open(at("sh_*.bin"), HP_DATA_AUTO, V, err, sizeof err);
    CHECK(d != NULL, "glob: %s", err);
    if (d) {
        CHECK(hp_data_n_files(d) == 3 && strstr(hp_data_file(d, 0, NULL, NULL), "sh_B") &&
              strstr(hp_data_file(d, 1, NULL, NULL), "sh_a") && strstr(hp_data_file(d, 2, NULL, NULL), "sh_b"),
              "glob order: %d files", hp_data_n_files(d));
        CHECK(hp_data_windows(d, S) == 6, "glob windows %lld != 2 + 3 + 1", (long long)hp_data_windows(d, S));
        const int start[6] = { 0, 10, 100, 110, 120, 150 };   // token index in ids of each window
        int ok = 1, w[S + 1];
        for (int k = 0; k < 8; k++) {   // past Nw: a new epoch at window 0
            hp_data_window(d, w, k, S);
            for (int i = 0; i <= S; i++) ok &= w[i] == ids[start[k % 6] + i];
        }
        CHECK(ok, "glob windows are not numbered shard by shard");
        CHECK(hp_data_check_batch(d, S, 6, err, sizeof err) == 0, "6 windows hold a batch of 6");
        CHECK(hp_data_check_batch(d, S, 7, err, sizeof err) != 0 &&
              strstr(err, "6 windows of seq_len+1 = 10 tokens, fewer than the global batch 7"), "Nw < B: '%s'", err);
        hp_data_close(d);
    }
    // a Megatron glob matches PREFIX.bin and PREFIX.idx: one shard per prefix
    d = hp_data_open(at("meg16*"), HP_DATA_AUTO, V, err, sizeof err);
    CHECK(d && hp_data_n_files(d) == 1 && hp_data_windows(d, S) == N / (S + 1), "megatron glob: %s", d ? "" : err);
    hp_data_close(d);

    // ---- bad inputs, one line each
    expect_refused(at("nothing_*.bin"), HP_DATA_AUTO, V, "no file matches");
    write_llmc(at("v1_shard2.bin"), 20240801, 7, ids, 30, 0, 0);
    expect_refused(at("v1*.bin"), HP_DATA_AUTO, V, "share one format and width");
    expect_refused(at("train.u16"), HP_DATA_AUTO, V, "needs the dataset_format");
    expect_refused(at("train.u16"), HP_DATA_LLMC, V, "bad magic");
    write_llmc(at("badver.bin"), 20240520, 7, ids, N, 0, 0);
    expect_refused(at("badver.bin"), HP_DATA_AUTO, V, "bad version 7");
    write_llmc(at("short.bin"), 20240520, 1, ids, N, 0, 3);
    char want[200];
    snprintf(want, sizeof want, "size mismatch: 1024 + %d tokens x 2 bytes = %d bytes expected, the file has %d", N,
             1024 + 2 * N, 1024 + 2 * N - 3);
    expect_refused(at("short.bin"), HP_DATA_AUTO, V, want);
    write_llmc(at("count.bin"), 20240801, 7, ids, N, 1, 0);
    expect_refused(at("count.bin"), HP_DATA_AUTO, V, "size mismatch");
    // the largest id (699 at some position) against a smaller vocab: the first id >= 600 is named
    int first = 0;
    while (ids[first] < 600) first++;
    snprintf(want, sizeof want, "v7.bin: byte offset %d: token id %d >= vocab_size 600", 1024 + 4 * first, ids[first]);
    expect_refused(at("v7.bin"), HP_DATA_AUTO, 600, want);
    snprintf(want, sizeof want, "train.u16: byte offset %d: token id %d >= vocab_size 600", 2 * first, ids[first]);
    expect_refused(at("train.u16"), HP_DATA_UINT16, 600, want);
    expect_refused(at("meg32"), HP_DATA_AUTO, 600, "meg32.bin: byte offset");
    write_raw(at("odd.u16"), ids, 5, 1);
    expect_refused(at("odd.u16"), HP_DATA_UINT16, V, "size mismatch: 5 bytes");
    expect_refused(at("v1.bin"), HP_DATA_MEGATRON, V, "cannot open");
    // Megatron: version, dtype, size, pointer past the .bin, document indices
    write_megatron(at("mbad"), 8, ids, lens, 5, 0);
    poke(at("mbad.idx"), 9, 2, 8);
    expect_refused(at("mbad"), HP_DATA_AUTO, V, "bad version 2");
    write_megatron(at("mbad"), 6, ids, lens, 5, 0);
    expect_refused(at("mbad"), HP_DATA_AUTO, V, "dtype code 6");
    write_megatron(at("mbad"), 8, ids, lens, 5, 0);
    poke(at("mbad.idx"), 18, 6, 8);   // n 6: the file is 12 bytes short
    expect_refused(at("mbad"), HP_DATA_AUTO, V, "size mismatch");
    write_megatron(at("mbad"), 8, ids, lens, 5, 0);
    poke(at("mbad.idx"), 34 + 4 * 4, 21, 4);   // the last sequence one token longer than the .bin
    expect_refused(at("mbad"), HP_DATA_AUTO, V, "inconsistent idx: sequence 4");
    write_megatron(at("mbad"), 8, ids, lens, 5, 0);
    poke(at("mbad.idx"), 34 + 12 * 5 + 8, 5, 8);   // document 1 jumps to 5 before document 2 (4)
    expect_refused(at("mbad"), HP_DATA_AUTO, V, "inconsistent idx: document index 2");
    write_megatron(at("mbad"), 8, ids, lens, 5, 0);
    poke(at("mbad.idx"), 0, 'N', 1);
    expect_refused(at("mbad"), HP_DATA_MEGATRON, V, "bad magic");
}

int main(void) {
    char err[512];
    enum { S = 16, B = 4 };
    int a[S + 1], b[S + 1];

    // ---- synthetic
    hp_data *syn = hp_data_open(NULL, HP_DATA_AUTO, 256, err, sizeof err);
    CHECK(syn != NULL, "synthetic open: %s", err);
    CHECK(hp_data_windows(syn, S) == INT64_MAX, "synthetic windows");
    hp_data_sequence(syn, a, 1234, 1, 0, B, S);
    int golden[8] = {187, 134, 186, 86, 92, 252, 225, 106}; // hash(1234, 1, 0, i) % 256, from Python
    int ok = 1;
    for (int i = 0; i < 8; i++) ok &= a[i] == golden[i];
    CHECK(ok, "synthetic ids differ from the formula's golden values");
    ok = 1;
    for (int i = 0; i <= S; i++) ok &= a[i] == (int)(hp_hash64(1234, 1, 0, (uint64_t)i) % 256);
    CHECK(ok, "synthetic ids != hash(seed, step, g, i) mod V");
    hp_data_sequence(syn, b, 1234, 1, 0, B, S);
    CHECK(memcmp(a, b, sizeof a) == 0, "synthetic not deterministic");
    hp_data_sequence(syn, b, 1234, 2, 0, B, S);
    CHECK(memcmp(a, b, sizeof a) != 0, "step 2 repeats step 1");
    hp_data_sequence(syn, b, 1234, 1, 1, B, S);
    CHECK(memcmp(a, b, sizeof a) != 0, "sequence 1 repeats sequence 0");
    hp_data_sequence(syn, b, 1235, 1, 0, B, S);
    CHECK(memcmp(a, b, sizeof a) != 0, "another seed repeats the data");
    hp_data_close(syn);

    // range over a small odd vocab, and every id reached
    syn = hp_data_open(NULL, HP_DATA_AUTO, 37, err, sizeof err);
    int seen[37] = {0}, in_range = 1;
    for (int step = 1; step <= 20; step++)
        for (int g = 0; g < B; g++) {
            hp_data_sequence(syn, a, 9, step, g, B, S);
            for (int i = 0; i <= S; i++) {
                in_range &= a[i] >= 0 && a[i] < 37;
                if (a[i] >= 0 && a[i] < 37) seen[a[i]] = 1;
            }
        }
    int nseen = 0;
    for (int v = 0; v < 37; v++) nseen += seen[v];
    CHECK(in_range, "synthetic id outside [0, V)");
    CHECK(nseen == 37, "only %d of 37 ids seen in 1360 draws", nseen);
    hp_data_close(syn);

    CHECK(hp_data_open(NULL, HP_DATA_AUTO, 0, err, sizeof err) == NULL && strstr(err, "vocab_size"), "V = 0 accepted: '%s'", err);

    // ---- text: 10 windows of S+1 = 17 bytes plus a 5-byte tail that is never used
    enum { W = 10, LEN = W * (S + 1) + 5 };
    unsigned char bytes[LEN];
    for (int i = 0; i < LEN; i++) bytes[i] = (unsigned char)(i * 7 + 200); // includes bytes >= 128
    char path[64];
    temp_file(path, bytes, LEN);
    hp_data *txt = hp_data_open(path, HP_DATA_AUTO_BYTES, 256, err, sizeof err);
    CHECK(txt != NULL, "text open: %s", err);
    CHECK(hp_data_windows(txt, S) == W, "windows %lld != %d", (long long)hp_data_windows(txt, S), W);
    CHECK(hp_data_windows(txt, LEN - 1) == 1, "window of the whole file");
    CHECK(hp_data_windows(txt, LEN) == 0, "file shorter than S+1 must give 0 windows");
    int order_ok = 1, bytes_ok = 1;
    for (int step = 1; step <= 4; step++)
        for (int g = 0; g < B; g++) {
            hp_data_sequence(txt, a, 777, step, g, B, S);
            int w = ((step - 1) * B + g) % W; // wraps at step 3
            for (int i = 0; i <= S; i++) {
                bytes_ok &= a[i] == (int)bytes[w * (S + 1) + i];
                order_ok &= a[i] >= 0 && a[i] < 256;
            }
        }
    CHECK(bytes_ok, "text window bytes differ from ((step-1)*B+g) mod windows");
    CHECK(order_ok, "text ids outside [0, 256)");
    hp_data_sequence(txt, a, 1, 1, 0, B, S);
    hp_data_sequence(txt, b, 2, 1, 0, B, S);
    CHECK(memcmp(a, b, sizeof a) == 0, "text data must not depend on the seed");
    CHECK(a[0] == 200 && a[1] == 207, "first window starts at byte 0 (%d %d)", a[0], a[1]);
    hp_data_close(txt);

    CHECK(hp_data_open(path, HP_DATA_AUTO_BYTES, 255, err, sizeof err) == NULL && strstr(err, "256"),
          "text with V < 256 accepted: '%s'", err);
    unlink(path);

    // ---- bad files
    CHECK(hp_data_open("/nonexistent/hp_data.txt", HP_DATA_AUTO_BYTES, 256, err, sizeof err) == NULL &&
          strstr(err, "/nonexistent/hp_data.txt") && !strchr(err, '\n'),
          "missing file: '%s'", err);
    temp_file(path, NULL, 0);
    CHECK(hp_data_open(path, HP_DATA_AUTO_BYTES, 256, err, sizeof err) == NULL && strstr(err, "empty"), "empty file: '%s'", err);
    unlink(path);
    temp_file(path, bytes, 5);
    txt = hp_data_open(path, HP_DATA_AUTO_BYTES, 256, err, sizeof err);
    CHECK(txt != NULL && hp_data_windows(txt, S) == 0, "short file: open must work, windows 0");
    for (int i = 0; i <= S; i++) a[i] = -1;
    hp_data_sequence(txt, a, 1, 1, 0, B, S); // must not read past the 5 bytes
    CHECK(a[0] == 0 && a[S] == 0, "short file: sequence must be zeros, not garbage");
    hp_data_close(txt);
    unlink(path);

    // training.dataset_format's words, both ways
    hp_data_format f = HP_DATA_AUTO;
    int words_ok = 1;
    for (int i = HP_DATA_AUTO; i <= HP_DATA_BYTES; i++)
        words_ok &= hp_data_format_parse("k", hp_data_format_name((hp_data_format)i), &f, err, sizeof err) == 0 &&
                    f == (hp_data_format)i;
    CHECK(words_ok, "format names do not parse back");
    CHECK(hp_data_format_parse("--training.dataset_format", "parquet", &f, err, sizeof err) != 0 &&
          strstr(err, "--training.dataset_format expects auto, llmc, megatron, uint16, uint32, bytes or auto_bytes, got 'parquet'"),
          "unknown format: '%s'", err);

    strcpy(dir, "/tmp/hp_test_data_dir_XXXXXX");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 2; }
    test_formats();
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    if (system(rm) != 0) printf("note: could not remove %s\n", dir);
    return test_summary("test_data");
}
