// test_data.c - training data: synthetic ids are the counter hash mod V (deterministic, in
// range, different per step/sequence), text windows walk the file in order and wrap, and bad
// inputs give NULL / zero windows with one line.
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

int main(void) {
    char err[512];
    enum { S = 16, B = 4 };
    int a[S + 1], b[S + 1];

    // ---- synthetic
    hp_data *syn = hp_data_open(NULL, 256, err, sizeof err);
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
    syn = hp_data_open(NULL, 37, err, sizeof err);
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

    CHECK(hp_data_open(NULL, 0, err, sizeof err) == NULL && strstr(err, "vocab_size"), "V = 0 accepted: '%s'", err);

    // ---- text: 10 windows of S+1 = 17 bytes plus a 5-byte tail that is never used
    enum { W = 10, LEN = W * (S + 1) + 5 };
    unsigned char bytes[LEN];
    for (int i = 0; i < LEN; i++) bytes[i] = (unsigned char)(i * 7 + 200); // includes bytes >= 128
    char path[64];
    temp_file(path, bytes, LEN);
    hp_data *txt = hp_data_open(path, 256, err, sizeof err);
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

    CHECK(hp_data_open(path, 255, err, sizeof err) == NULL && strstr(err, "256"),
          "text with V < 256 accepted: '%s'", err);
    unlink(path);

    // ---- bad files
    CHECK(hp_data_open("/nonexistent/hp_data.txt", 256, err, sizeof err) == NULL &&
          strstr(err, "/nonexistent/hp_data.txt") && !strchr(err, '\n'),
          "missing file: '%s'", err);
    temp_file(path, NULL, 0);
    CHECK(hp_data_open(path, 256, err, sizeof err) == NULL && strstr(err, "empty"), "empty file: '%s'", err);
    unlink(path);
    temp_file(path, bytes, 5);
    txt = hp_data_open(path, 256, err, sizeof err);
    CHECK(txt != NULL && hp_data_windows(txt, S) == 0, "short file: open must work, windows 0");
    for (int i = 0; i <= S; i++) a[i] = -1;
    hp_data_sequence(txt, a, 1, 1, 0, B, S); // must not read past the 5 bytes
    CHECK(a[0] == 0 && a[S] == 0, "short file: sequence must be zeros, not garbage");
    hp_data_close(txt);
    unlink(path);

    return test_summary("test_data");
}
