// regress_main.c - the main() that replaces libFuzzer's in the normal build: feeds every file of
// the given folders (and files) through the target's LLVMFuzzerTestOneInput once, in name order.
// A crash, a sanitizer report (under HP_SANITIZE) or an abort() of the target fails the test; so
// does a folder that cannot be read, or no input at all (a corpus that went missing).
//
//   fuzz_regress_safetensors tests/fuzz/corpus/safetensors tests/fuzz/regress/safetensors
//   -> "fuzz_regress: 7 inputs ran clean (tests/fuzz/corpus/safetensors: 6, ...: 1)"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "util/file_io.h"
#include "fuzz_target.h"

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// One input file through the target; 0, or -1 when it cannot be read.
static int run_file(const char *path) {
    unsigned char *data;
    size_t len;
    const char *why;
    if (hp_file_read(path, &data, &len, &why) != 0) {
        fprintf(stderr, "fuzz_regress: cannot read '%s': %s\n", path, why);
        return -1;
    }
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

// Every regular file of dir (names starting with '.' and README* are not inputs); the count,
// or -1. A folder that does not exist counts 0 inputs: regress/<target>/ appears with a first crash.
static int run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || !strncmp(e->d_name, "README", 6)) continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(len);
        if (!p) { rc = -1; break; }
        snprintf(p, len, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) { free(p); continue; }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **m = realloc(names, (size_t)cap * sizeof *m);
            if (!m) { free(p); rc = -1; break; }
            names = m;
        }
        names[n++] = p;
    }
    closedir(d);
    if (names) qsort(names, (size_t)n, sizeof *names, cmp_names);
    for (int i = 0; i < n; i++) {
        if (rc == 0 && run_file(names[i]) != 0) rc = -1;
        free(names[i]);
    }
    free(names);
    return rc ? -1 : n;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...  (feeds each file through the fuzz target once)\n", argv[0]);
        return 2;
    }
    int total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        // a folder (or one not there yet) holds inputs; anything else is one input
        int n = stat(argv[i], &st) != 0 || S_ISDIR(st.st_mode) ? run_dir(argv[i]) : (run_file(argv[i]) ? -1 : 1);
        if (n < 0) return 1;
        fprintf(stderr, "fuzz_regress: %s: %d input(s)\n", argv[i], n);
        total += n;
    }
    if (total == 0) {
        fprintf(stderr, "fuzz_regress: no input files found: the corpus is missing\n");
        return 1;
    }
    printf("fuzz_regress: %d inputs ran clean\n", total);
    return 0;
}
