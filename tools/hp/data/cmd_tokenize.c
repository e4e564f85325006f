// cmd_tokenize.c - `hp tokenize TEXT... --out DIR`: your own text as training data. Trains a
// SentencePiece BPE tokenizer with byte fallback (Llama's kind, hp_tokenizer_train) on every
// file of TEXT, then encodes each file as one document, <s> first, and writes the token stream
// as llm.c shards (docs/data.md): DIR/tokenizer.model, DIR/train_000000.bin ..., and the last
// --val-fraction of the tokens as DIR/val_000000.bin ... No MPI.
//
//   hp tokenize docs/ README.md --out data/docs --vocab-size 4096
//   hp run --model-config cfg.json --data 'data/docs/train_*.bin' --tokenizer data/docs ...
//
// The tokens go to a temporary file DIR/.tokenize-PID.tmp (4 bytes each) while the documents are
// encoded, so memory holds one document's tokens at a time; then the split point is known and
// the shards are copied out of it.
// defines: tool_cmd_tokenize
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "hyperpar/tokenizer.h"
#include "util/file_io.h"

enum { VOCAB_MIN = 260, VOCAB_MAX = 1 << 20, VOCAB_DEFAULT = 4096, MAX_DEPTH = 64 };
#define SHARD_TOKENS 100000000LL   // at most this many tokens in one shard
#define LLMC_MAGIC_U16 20240520    // version 1: uint16 tokens
#define LLMC_MAGIC_U32 20240801    // version 7: uint32 tokens

static const char *const tokenize_usage =
    "usage: hp tokenize TEXT... --out DIR [--vocab-size N] [--val-fraction F]\n"
    "\n"
    "Trains a SentencePiece tokenizer on your text and writes it as token shards hp run reads.\n"
    "TEXT are files or folders (walked recursively, names in bytewise order; only regular files\n"
    "are read, anything else is counted as skipped). Every file is one document. The tokenizer:\n"
    "BPE with byte fallback (any byte encodes), <unk> <s> </s> = 0 1 2, no normalization, Llama's\n"
    "dummy prefix, digits split, trained deterministically on every line of every file.\n"
    "  --out DIR          writes DIR/tokenizer.model, DIR/train_000000.bin ... and\n"
    "                     DIR/val_000000.bin ...: llm.c shards (magic 20240520, uint16 tokens; a\n"
    "                     vocab past 65536: 20240801, uint32), at most 100M tokens each; each\n"
    "                     document is <s> then its tokens, in file order (required)\n"
    "  --vocab-size N     the tokenizer's pieces, 260 .. 1048576 (256 byte pieces, the 3\n"
    "                     specials, at least one merge; default 4096); the model's vocab_size must\n"
    "                     be at least N (--model-config with \"vocab_size\": N)\n"
    "  --val-fraction F   the last F of the token stream (split by tokens, so a document may\n"
    "                     straddle the two) goes to val_*.bin, 0 <= F < 1 (default 0.05; 0: no\n"
    "                     validation shard)\n"
    "Prints one line: files, bytes, tokens, bytes per token, vocab, train/val tokens, seconds.\n"
    "\n";

typedef struct {
    char **paths;
    int n, cap;
    int skipped;          // entries that are not regular files (devices, sockets, links to folders)
    int64_t bytes;        // the regular files' sizes, as stat gives them
} file_list;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int add_file(file_list *fl, const char *path, int64_t size) {
    if (fl->n == fl->cap) {
        const int cap = fl->cap ? 2 * fl->cap : 64;
        char **p = realloc(fl->paths, (size_t)cap * sizeof *p);
        if (!p) return -1;
        fl->paths = p;
        fl->cap = cap;
    }
    const size_t len = strlen(path);
    if (!(fl->paths[fl->n] = malloc(len + 1))) return -1;
    memcpy(fl->paths[fl->n++], path, len + 1);
    fl->bytes += size;
    return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// Adds path: a regular file, or a folder walked in bytewise order of its names (symbolic links
// to folders and the output folder itself are not entered). 0, or -1 after one line on stderr.
static int walk(file_list *fl, const char *path, const struct stat *skip_dir, int depth) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "hp tokenize: TEXT '%s': %s\n", path, strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode)) {
        if (add_file(fl, path, (int64_t)st.st_size) != 0) { fprintf(stderr, "hp tokenize: out of memory\n"); return -1; }
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) { fl->skipped++; return 0; }
    if (depth > 0) {
        struct stat lst;
        if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) { fl->skipped++; return 0; }
    }
    if (skip_dir && st.st_dev == skip_dir->st_dev && st.st_ino == skip_dir->st_ino) return 0;
    if (depth >= MAX_DEPTH) {
        fprintf(stderr, "hp tokenize: TEXT '%s': folders nested deeper than %d\n", path, MAX_DEPTH);
        return -1;
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "hp tokenize: TEXT '%s': cannot read the folder: %s\n", path, strerror(errno));
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            char **p = realloc(names, (size_t)cap * sizeof *p);
            if (!p) { rc = -1; break; }
            names = p;
        }
        if (!(names[n] = strdup(e->d_name))) { rc = -1; break; }
        n++;
    }
    closedir(d);
    if (rc != 0) fprintf(stderr, "hp tokenize: out of memory\n");
    if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_names);
    const size_t plen = strlen(path);
    for (int i = 0; i < n && rc == 0; i++) {
        const size_t len = plen + 1 + strlen(names[i]) + 1;
        char *child = malloc(len);
        if (!child) { fprintf(stderr, "hp tokenize: out of memory\n"); rc = -1; break; }
        snprintf(child, len, "%s%s%s", path, plen && path[plen - 1] == '/' ? "" : "/", names[i]);
        rc = walk(fl, child, skip_dir, depth + 1);
        free(child);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

// One shard: the llm.c header (256 LE int32: magic, version, count), then count tokens read
// from tmp, each 2 (uint16) or 4 (uint32) bytes LE. 0, or -1 after one line.
static int write_shard(const char *path, FILE *tmp, int64_t count, int wide) {
    FILE *f = fopen(path, "wb");
    if (!f) { fprintf(stderr, "hp tokenize: cannot write %s: %s\n", path, strerror(errno)); return -1; }
    unsigned char head[1024] = { 0 };
    const uint32_t fields[3] = { wide ? LLMC_MAGIC_U32 : LLMC_MAGIC_U16, wide ? 7u : 1u, (uint32_t)count };
    for (int k = 0; k < 3; k++)
        for (int b = 0; b < 4; b++) head[4 * k + b] = (unsigned char)(fields[k] >> (8 * b));
    int bad = fwrite(head, 1, sizeof head, f) != sizeof head;
    enum { CHUNK = 1 << 16 };
    static unsigned char in[CHUNK * 4], out[CHUNK * 4];
    for (int64_t done = 0; done < count && !bad;) {
        const size_t m = (size_t)(count - done < CHUNK ? count - done : CHUNK);
        if (fread(in, 4, m, tmp) != m) { bad = 1; break; }
        const int w = wide ? 4 : 2;
        for (size_t i = 0; i < m; i++)
            for (int b = 0; b < w; b++) out[(size_t)w * i + (size_t)b] = in[4 * i + (size_t)b];
        bad = fwrite(out, (size_t)w, m, f) != m;
        done += (int64_t)m;
    }
    if (fclose(f) != 0) bad = 1;
    if (bad) { fprintf(stderr, "hp tokenize: cannot write %s\n", path); return -1; }
    return 0;
}

// The shards prefix_000000.bin ... of count tokens from tmp. Returns the number written, -1 on error.
static int write_shards(const char *dir, const char *prefix, FILE *tmp, int64_t count, int wide) {
    int k = 0;
    for (int64_t done = 0; done < count; k++) {
        const int64_t m = count - done < SHARD_TOKENS ? count - done : SHARD_TOKENS;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s_%06d.bin", dir, prefix, k);
        if (write_shard(path, tmp, m, wide) != 0) return -1;
        done += m;
    }
    return k;
}

// Removes DIR/train_NNNNNN.bin and DIR/val_NNNNNN.bin of an earlier run, so that a glob of the
// new shards does not pick up old ones.
static void remove_old_shards(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        int k = -1, end = 0;
        if ((sscanf(e->d_name, "train_%6d.bin%n", &k, &end) == 1 || sscanf(e->d_name, "val_%6d.bin%n", &k, &end) == 1) &&
            end > 0 && e->d_name[end] == 0 && strlen(e->d_name) == (size_t)end) {
            const char *digits = strchr(e->d_name, '_') + 1;
            if (strspn(digits, "0123456789") != 6) continue;
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

static int flag_value(int argc, char **argv, int *i, const char *name, const char **out) {
    const char *a = argv[*i];
    const size_t n = strlen(name);
    if (!strncmp(a, name, n) && a[n] == '=') { *out = a + n + 1; return 1; }
    if (strcmp(a, name)) return 0;
    if (*i + 1 >= argc) { fprintf(stderr, "hp tokenize: %s expects a value\n", name); return -1; }
    *out = argv[++*i];
    return 1;
}

int tool_cmd_tokenize(int argc, char **argv) {
    const char *out = NULL, *vocab_arg = NULL, *frac_arg = NULL;
    const char **texts = calloc((size_t)argc, sizeof *texts);
    if (!texts) { fprintf(stderr, "hp tokenize: out of memory\n"); return HP_EXIT_FAIL; }
    int n_texts = 0, rc = HP_EXIT_OK;
    for (int i = 2; i < argc && rc == HP_EXIT_OK; i++) {
        const char *a = argv[i];
        int r;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(tokenize_usage, stdout); free(texts); return HP_EXIT_OK; }
        if ((r = flag_value(argc, argv, &i, "--out", &out)) || (r = flag_value(argc, argv, &i, "--vocab-size", &vocab_arg)) ||
            (r = flag_value(argc, argv, &i, "--val-fraction", &frac_arg))) {
            if (r < 0) rc = HP_EXIT_CONFIG;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "hp tokenize: unknown flag '%s' (see hp tokenize --help)\n", a);
            rc = HP_EXIT_CONFIG;
            continue;
        }
        texts[n_texts++] = a;
    }
    long vocab = VOCAB_DEFAULT;
    double frac = 0.05;
    if (rc == HP_EXIT_OK && vocab_arg) {
        char *end;
        errno = 0;
        vocab = strtol(vocab_arg, &end, 10);
        if (end == vocab_arg || *end || errno) {
            fprintf(stderr, "hp tokenize: --vocab-size expects an integer, got '%s'\n", vocab_arg);
            rc = HP_EXIT_CONFIG;
        } else if (vocab < VOCAB_MIN || vocab > VOCAB_MAX) {
            fprintf(stderr, "hp tokenize: --vocab-size must be in [%d, %d] (256 byte pieces + <unk> <s> </s> + "
                    "at least one merge), got %ld\n", VOCAB_MIN, VOCAB_MAX, vocab);
            rc = HP_EXIT_CONFIG;
        }
    }
    if (rc == HP_EXIT_OK && frac_arg) {
        char *end;
        frac = strtod(frac_arg, &end);
        if (end == frac_arg || *end || !isfinite(frac) || frac < 0.0 || frac >= 1.0) {
            fprintf(stderr, "hp tokenize: --val-fraction must be a number in [0, 1), got '%s'\n", frac_arg);
            rc = HP_EXIT_CONFIG;
        }
    }
    if (rc == HP_EXIT_OK && n_texts == 0) {
        fprintf(stderr, "hp tokenize: needs TEXT, the files or folders to train on (hp tokenize TEXT... --out DIR)\n");
        rc = HP_EXIT_CONFIG;
    }
    if (rc == HP_EXIT_OK && !out) {
        fprintf(stderr, "hp tokenize: needs --out DIR, the folder for tokenizer.model and the shards\n");
        rc = HP_EXIT_CONFIG;
    }
    // the texts: every file, before anything is written
    file_list fl = { 0 };
    struct stat out_st;   // the output folder, when it exists already, is not read as text
    const struct stat *skip = rc == HP_EXIT_OK && stat(out, &out_st) == 0 ? &out_st : NULL;
    for (int i = 0; i < n_texts && rc == HP_EXIT_OK; i++)
        if (walk(&fl, texts[i], skip, 0) != 0) rc = HP_EXIT_CONFIG;
    if (rc == HP_EXIT_OK && fl.bytes == 0) {
        fprintf(stderr, "hp tokenize: the texts hold 0 bytes (%d files, %d skipped): nothing to train on\n", fl.n,
                fl.skipped);
        rc = HP_EXIT_CONFIG;
    }
    if (rc == HP_EXIT_OK && !hp_tokenizer_available()) {
        fprintf(stderr, "hp tokenize: hp was built without SentencePiece (install libsentencepiece-dev and rebuild)\n");
        rc = HP_EXIT_CONFIG;
    }
    if (rc == HP_EXIT_OK) rc = tool_cli_check_dir("--out", out);
    free(texts);

    char model[4200], tmp_path[4200], err[4400];
    FILE *tmp = NULL;
    hp_tokenizer *tk = NULL;
    int64_t tokens = 0, bytes_read = 0;
    double t_train = 0.0, t_encode = 0.0;
    const double t0 = now_s();
    if (rc == HP_EXIT_OK) {
        snprintf(model, sizeof model, "%s/tokenizer.model", out);
        if (hp_tokenizer_train((const char *const *)fl.paths, fl.n, (int)vocab, model, err, sizeof err) != 0) {
            // SentencePiece's BPE stops when no pair is left to merge: a vocabulary these texts
            // cannot fill is a bad --vocab-size (its line: "... Vocabulary size too high (N).
            // Please set it to a value <= M.")
            const char *high = strstr(err, "Please set it to a value <= ");
            const char *low = strstr(err, "Vocabulary size is smaller than required_chars. ");
            long need = 0, have = 0;
            if (low && sscanf(low + strlen("Vocabulary size is smaller than required_chars. "), "%ld vs %ld", &have,
                              &need) == 2) {
                // character_coverage 1.0: every character of the texts is a piece of its own
                fprintf(stderr, "hp tokenize: --vocab-size %ld is less than these texts need: %ld pieces (<unk> <s> "
                        "</s>, 256 bytes and one per distinct character)\n", vocab, need);
                rc = HP_EXIT_CONFIG;
            } else if (high) {
                fprintf(stderr, "hp tokenize: --vocab-size %ld is more than these texts give: at most %ld pieces\n",
                        vocab, strtol(high + strlen("Please set it to a value <= "), NULL, 10));
                rc = HP_EXIT_CONFIG;
            } else {
                fprintf(stderr, "hp tokenize: %s\n", err);
                rc = HP_EXIT_FAIL;
            }
        } else if (!(tk = hp_tokenizer_load(model, err, sizeof err))) {
            fprintf(stderr, "hp tokenize: %s\n", err);
            rc = HP_EXIT_FAIL;
        }
        t_train = now_s() - t0;
    }
    if (rc == HP_EXIT_OK) {
        snprintf(tmp_path, sizeof tmp_path, "%s/.tokenize-%d.tmp", out, (int)getpid());
        if (!(tmp = fopen(tmp_path, "w+b"))) {
            fprintf(stderr, "hp tokenize: cannot write %s: %s\n", tmp_path, strerror(errno));
            rc = HP_EXIT_FAIL;
        } else {
            unlink(tmp_path);   // gone when closed, whatever happens
        }
    }
    // encode: each file one document, <s> first; the tokens as LE uint32 into tmp
    const int bos = tk ? hp_tokenizer_bos(tk) : -1;
    for (int i = 0; i < fl.n && rc == HP_EXIT_OK; i++) {
        unsigned char *text = NULL;
        size_t len = 0;
        const char *why = NULL;
        if (hp_file_read(fl.paths[i], &text, &len, &why) != 0) {
            fprintf(stderr, "hp tokenize: %s: %s\n", fl.paths[i], why);
            rc = HP_EXIT_FAIL;
            break;
        }
        int *ids = NULL, n = 0;
        if (hp_tokenizer_encode(tk, (const char *)text, len, &ids, &n, err, sizeof err) != 0) {
            fprintf(stderr, "hp tokenize: %s: %s\n", fl.paths[i], err);
            rc = HP_EXIT_FAIL;
        }
        free(text);
        bytes_read += (int64_t)len;
        unsigned char buf[4 * 1024];
        size_t k = 0;
        for (int j = -1; j < n && rc == HP_EXIT_OK; j++) {
            const uint32_t id = (uint32_t)(j < 0 ? bos : ids[j]);
            for (int b = 0; b < 4; b++) buf[k++] = (unsigned char)(id >> (8 * b));
            if (k == sizeof buf || j == n - 1) {
                if (fwrite(buf, 1, k, tmp) != k) { fprintf(stderr, "hp tokenize: cannot write %s\n", tmp_path); rc = HP_EXIT_FAIL; }
                k = 0;
            }
        }
        tokens += (int64_t)n + 1;
        free(ids);
    }
    // the split: the last round(F x tokens) tokens are the validation set
    const int64_t n_val = (int64_t)llround(frac * (double)tokens), n_train = tokens - n_val;
    int train_shards = 0, val_shards = 0;
    const int wide = vocab > 65536;
    if (rc == HP_EXIT_OK) {
        t_encode = now_s() - t0 - t_train;
        remove_old_shards(out);
        if (fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0 ||
            (train_shards = write_shards(out, "train", tmp, n_train, wide)) < 0 ||
            (val_shards = write_shards(out, "val", tmp, n_val, wide)) < 0)
            rc = HP_EXIT_FAIL;
    }
    if (rc == HP_EXIT_OK) {
        printf("hp tokenize: %d files (%d skipped), %" PRId64 " bytes -> %" PRId64 " tokens (%.3f bytes/token, "
               "<s> included), vocab %d | train %" PRId64 " tokens in %d shard%s, val %" PRId64 " in %d | "
               "%.2f s (training %.2f, encoding %.2f) -> %s\n",
               fl.n, fl.skipped, bytes_read, tokens, tokens ? (double)bytes_read / (double)tokens : 0.0,
               hp_tokenizer_vocab_size(tk), n_train, train_shards, train_shards == 1 ? "" : "s", n_val, val_shards,
               now_s() - t0, t_train, t_encode, out);
    }
    if (tmp) fclose(tmp);
    hp_tokenizer_free(tk);
    for (int i = 0; i < fl.n; i++) free(fl.paths[i]);
    free(fl.paths);
    return rc;
}
