// test_tokenizer.c TEXT DIR - the SentencePiece tokenizer (include/hyperpar/tokenizer.h): a BPE
// model of 512 pieces with byte fallback trained on TEXT into DIR. Two trainings on the same
// text give byte-identical tokenizer.model files; <unk> <s> </s> are 0 1 2; the 256 byte pieces
// are there; encode -> decode gives back every test text byte for byte (ASCII, spaces at the
// start and in runs, newlines and tabs, non-ASCII UTF-8, characters never seen in training:
// byte fallback); ids lie in [0, 512); the pieces' bytes of an encoding add up to the text's
// length + 1 (the dummy prefix "▁" SentencePiece puts before the text, as Llama's does) for a
// non-empty text, 0 for the empty one; U+2581 in a text (SentencePiece's space mark) comes back
// as a space, the one exception; an out-of-range id decodes as nothing; a missing file, an
// empty file and a file that is not a model give NULL with one line naming the file.
// Skipped (exit 77) when hp is built without SentencePiece.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hyperpar/tokenizer.h"
#include "test_check.h"

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    *len = n;
    return b;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// encode -> decode of text[0..len): byte for byte, ids in range, the bytes identity
static void round_trip(const hp_tokenizer *tk, const char *what, const char *text, size_t len) {
    char err[256];
    int *ids = NULL, n = 0;
    CHECK(hp_tokenizer_encode(tk, text, len, &ids, &n, err, sizeof err) == 0, "%s: encode: %s", what, err);
    const int V = hp_tokenizer_vocab_size(tk);
    int bad = 0;
    long long bytes = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= V) bad++;
        bytes += hp_tokenizer_token_bytes(tk, ids[i]);
    }
    CHECK(bad == 0, "%s: %d ids outside [0, %d)", what, bad, V);
    const long long want = len ? (long long)len + 1 : 0;
    CHECK(bytes == want, "%s: the pieces stand for %lld bytes, the text has %zu (+1 for the dummy prefix)",
          what, bytes, len);
    char *back = hp_tokenizer_decode(tk, ids, n);
    CHECK(back && strlen(back) == len && !memcmp(back, text, len), "%s: decode(encode(text)) is not the text "
          "(%zu bytes back, %zu in)", what, back ? strlen(back) : 0, len);
    free(back);
    free(ids);
}

int main(int argc, char **argv) {
    if (!hp_tokenizer_available()) {
        printf("test_tokenizer: skipped: hp was built without SentencePiece (apt-get install libsentencepiece-dev)\n");
        return TEST_SKIP_CODE;
    }
    if (argc != 3) { fprintf(stderr, "usage: test_tokenizer TEXT DIR\n"); return 2; }
    const char *text = argv[1], *dir = argv[2];
    char a[4096], b[4096], err[256];
    snprintf(a, sizeof a, "%s/a.model", dir);
    snprintf(b, sizeof b, "%s/b.model", dir);
    const char *inputs[] = { text };
    double t0 = now_s();
    CHECK(hp_tokenizer_train(inputs, 1, 512, a, err, sizeof err) == 0, "train: %s", err);
    const double train_s = now_s() - t0;
    CHECK(hp_tokenizer_train(inputs, 1, 512, b, err, sizeof err) == 0, "train again: %s", err);
    size_t la = 0, lb = 0;
    char *ma = slurp(a, &la), *mb = slurp(b, &lb);
    CHECK(ma && mb && la == lb && la > 0 && !memcmp(ma, mb, la), "two trainings on %s: tokenizer.model "
          "files differ (%zu and %zu bytes)", text, la, lb);
    free(ma); free(mb);

    hp_tokenizer *tk = hp_tokenizer_load(a, err, sizeof err);
    CHECK(tk != NULL, "load %s: %s", a, err);
    if (!tk) return test_summary("test_tokenizer");
    CHECK(!strcmp(hp_tokenizer_file(tk), a), "file: %s", hp_tokenizer_file(tk));
    CHECK(hp_tokenizer_vocab_size(tk) == 512, "vocab %d", hp_tokenizer_vocab_size(tk));
    CHECK(hp_tokenizer_unk(tk) == 0 && hp_tokenizer_bos(tk) == 1 && hp_tokenizer_eos(tk) == 2,
          "unk/bos/eos %d %d %d", hp_tokenizer_unk(tk), hp_tokenizer_bos(tk), hp_tokenizer_eos(tk));
    CHECK(hp_tokenizer_piece_type(tk, 0) == 2 && hp_tokenizer_piece_type(tk, 1) == 3 &&
          hp_tokenizer_piece_type(tk, 2) == 3, "types of 0 1 2: %d %d %d", hp_tokenizer_piece_type(tk, 0),
          hp_tokenizer_piece_type(tk, 1), hp_tokenizer_piece_type(tk, 2));
    CHECK(!strcmp(hp_tokenizer_piece(tk, 1), "<s>") && !strcmp(hp_tokenizer_piece(tk, 2), "</s>"),
          "pieces 1 2: %s %s", hp_tokenizer_piece(tk, 1), hp_tokenizer_piece(tk, 2));
    // the byte pieces <0x00> .. <0xFF> follow the specials, one byte each
    int bytes_ok = 1;
    for (int i = 0; i < 256; i++) {
        char want[16];
        snprintf(want, sizeof want, "<0x%02X>", i);
        if (strcmp(hp_tokenizer_piece(tk, 3 + i), want) || hp_tokenizer_piece_type(tk, 3 + i) != 6 ||
            hp_tokenizer_token_bytes(tk, 3 + i) != 1) bytes_ok = 0;
    }
    CHECK(bytes_ok, "ids 3..258 are not the byte pieces <0x00>..<0xFF> of one byte each");
    CHECK(hp_tokenizer_token_bytes(tk, 1) == 0 && hp_tokenizer_token_bytes(tk, 0) == 0, "control/unknown bytes");
    int normal = 0, spaced = 0;
    for (int i = 259; i < 512; i++) {
        normal += hp_tokenizer_piece_type(tk, i) == 1;
        const char *p = hp_tokenizer_piece(tk, i);
        if (!strncmp(p, "\xE2\x96\x81", 3) && hp_tokenizer_token_bytes(tk, i) == (int)strlen(p) - 2) spaced++;
    }
    CHECK(normal == 512 - 259, "%d normal pieces past the bytes, want %d", normal, 512 - 259);
    CHECK(spaced > 0, "no piece starting with U+2581 counts it as one byte");
    CHECK(hp_tokenizer_piece(tk, 512)[0] == 0 && hp_tokenizer_piece(tk, -1)[0] == 0, "out-of-range piece");

    // round trips: the training text itself, and texts it never held
    size_t len = 0;
    char *all = slurp(text, &len);
    CHECK(all && len > 0, "read %s", text);
    t0 = now_s();
    int *ids = NULL, n = 0;
    if (all) CHECK(hp_tokenizer_encode(tk, all, len, &ids, &n, err, sizeof err) == 0, "encode: %s", err);
    const double enc_s = now_s() - t0;
    printf("test_tokenizer: %s: %zu bytes -> %d tokens (%.3f bytes/token) at vocab 512; training %.2f s, "
           "encoding %.3f s\n", text, len, n, n ? (double)len / n : 0.0, train_s, enc_s);
    free(ids);
    if (all) round_trip(tk, "the training text", all, len);
    free(all);
    static const char *const texts[] = {
        "Hello world",
        " leading space, and   runs   of spaces  ",
        "  two leading spaces",
        "tabs\tand\nnewlines\n\n\r\nend\n",
        "digits 1234567890 3.14159",
        "caf\xC3\xA9 na\xC3\xAFve \xC3\x9C" "ber",                              // Latin-1 range
        "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",   // CJK, Cyrillic
        "emoji \xF0\x9F\x98\x80\xF0\x9F\x9A\x80 and U+2580 \xE2\x96\x80, U+2582 \xE2\x96\x82",
        "<s> </s> <unk> <0x41> are text here",
        "\x01\x02\x7F control bytes",
        "x",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) round_trip(tk, texts[i], texts[i], strlen(texts[i]));
    round_trip(tk, "the empty text", "", 0);

    // U+2581 itself is SentencePiece's space mark: in a text it comes back as a space (as with
    // Llama's tokenizer), the one character that does not round-trip
    {
        const char *mark = "a\xE2\x96\x81" "b";
        int *mi = NULL, mn = 0;
        CHECK(hp_tokenizer_encode(tk, mark, strlen(mark), &mi, &mn, err, sizeof err) == 0, "encode U+2581");
        char *s = hp_tokenizer_decode(tk, mi, mn);
        CHECK(s && !strcmp(s, "a b"), "U+2581 decodes as '%s', want 'a b'", s ? s : "(null)");
        free(s);
        free(mi);
    }

    // decode: an id out of range is nothing; <s> and </s> decode as nothing
    int *hi = NULL, nh = 0;
    CHECK(hp_tokenizer_encode(tk, "Hello", 5, &hi, &nh, err, sizeof err) == 0 && nh > 0, "encode Hello");
    if (hi && nh > 0) {
        int *mixed = malloc(((size_t)nh + 4) * sizeof *mixed);
        int m = 0;
        mixed[m++] = 1;
        mixed[m++] = -5;
        for (int i = 0; i < nh; i++) mixed[m++] = hi[i];
        mixed[m++] = 512;
        mixed[m++] = 2;
        char *s = hp_tokenizer_decode(tk, mixed, m);
        CHECK(s && !strcmp(s, "Hello"), "decode with ids out of range, <s> and </s>: '%s'", s ? s : "(null)");
        free(s);
        free(mixed);
    }
    free(hi);
    hp_tokenizer_free(tk);

    // the folder form: DIR/tokenizer.model
    char folder_model[4200];
    snprintf(folder_model, sizeof folder_model, "%s/tokenizer.model", dir);
    rename(a, folder_model);
    tk = hp_tokenizer_load(dir, err, sizeof err);
    CHECK(tk && !strcmp(hp_tokenizer_file(tk), folder_model), "load the folder %s: %s", dir, tk ? "" : err);
    hp_tokenizer_free(tk);

    // bad files: one line naming the file, never a crash
    char path[4200];
    snprintf(path, sizeof path, "%s/no-such.model", dir);
    CHECK(!hp_tokenizer_load(path, err, sizeof err) && strstr(err, path) && !strchr(err, '\n'), "missing: %s", err);
    static const struct { const char *name, *bytes; size_t n; } bad[] = {
        { "empty.model", "", 0 },
        { "text.model", "plain text, not a model\n", 24 },
        { "proto-ish.model", "\x0a\x05\x0a\x03" "abc" "\x12\xff\xff\xff\xff\x0f", 13 },
        { "zeros.model", "\x0a\x00\x00\x00\x00\x00\x00\x00", 8 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, bad[i].name);
        FILE *f = fopen(path, "wb");
        if (f) { fwrite(bad[i].bytes, 1, bad[i].n, f); fclose(f); }
        err[0] = 0;
        hp_tokenizer *t = hp_tokenizer_load(path, err, sizeof err);
        CHECK(!t && strstr(err, path) && strstr(err, "not a SentencePiece model") && !strchr(err, '\n'),
              "%s: %s", bad[i].name, err);
        hp_tokenizer_free(t);
    }
    return test_summary("test_tokenizer");
}
