// fuzz_toml.c - the job file's TOML reader (src/util/toml.c) on any bytes.
// Invariants (abort when broken): a parse returns 0 or -1, and -1 leaves one line in err that
// starts with the file name and a line number; whatever parses, written back by hp_toml_write,
// parses again to the same list (keys, types and values; floats bit for bit).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_target.h"
#include "util/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hp_toml t;
    char err[512];
    const int rc = hp_toml_parse((const char *)data, size, "f.toml", &t, err, sizeof err);
    if (rc != 0 && rc != -1) abort();
    if (rc != 0) {
        if (strncmp(err, "f.toml:", 7) || strchr(err, '\n')) abort();
        return 0;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) { hp_toml_free(&t); return 0; }
    hp_toml_write(f, &t);
    fclose(f);
    hp_toml back;
    if (hp_toml_parse(text, len, "back.toml", &back, err, sizeof err) != 0) {
        fprintf(stderr, "written back, it does not parse: %s\n%s", err, text);
        abort();
    }
    if (!hp_toml_equal(&t, &back)) {
        fprintf(stderr, "written back, it parses to another list:\n%s", text);
        abort();
    }
    hp_toml_free(&back);
    hp_toml_free(&t);
    free(text);
    return 0;
}
