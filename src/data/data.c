// data.c - the token data of a run (docs/data.md): synthetic ids from the counter hash of
// rng.h, or a dataset of shards (files) memory-mapped and checked once at open, read as windows
// of S+1 tokens in order. Every rank calls hp_data_sequence for the global sequences it owns; the
// result depends only on (seed, step, g), never on which rank asks or in what order.
// defines: hp_data_open, hp_data_close, hp_data_windows, hp_data_check_batch, hp_data_sequence,
//          hp_data_window, hp_data_found_format, hp_data_token_bytes, hp_data_n_files, hp_data_file
#include "hyperpar/data.h"
#include "data_internal.h"
#include "hyperpar/rng.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {   // a read-only mapping of a whole file
    unsigned char *base;
    int64_t        len;
} mapping;

struct hp_data {
    int            vocab_size;  // V
    char          *path;        // as given (NULL: synthetic)
    hp_data_format format;      // the one found (every shard has it)
    int            n_shards;
    int            cap;         // shards and mappings allocated (a failed open frees them all)
    hp_data_shard *shards;      // (cap,), the first n_shards opened
    mapping       *maps;        // (2 * cap,): each shard's token file and .idx (Megatron)
};

// ---------------------------------------------------------------------------------------------
// files

// Maps path read-only. Regular files only (a FIFO or device would block or never end); an empty
// file maps to (NULL, 0). Returns 0, or -1 with one line in err.
static int map_file(const char *path, mapping *mp, char *err, size_t errlen) {
    mp->base = NULL;
    mp->len = 0;
    const int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) { snprintf(err, errlen, "%s: cannot open data file: %s", path, strerror(errno)); return -1; }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: cannot open data file: not a regular file", path);
        close(fd);
        return -1;
    }
    mp->len = (int64_t)sb.st_size;
    if (mp->len > 0) {
        void *p = mmap(NULL, (size_t)mp->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            snprintf(err, errlen, "%s: cannot map data file: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        mp->base = p;
    }
    close(fd);
    return 0;
}

static void unmap(mapping *mp) {
    if (mp->base) munmap(mp->base, (size_t)mp->len);
    mp->base = NULL;
    mp->len = 0;
}

static int is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int ends_with(const char *s, const char *tail) {
    const size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

// The Megatron PREFIX of path: path without ".idx" or ".bin", else path itself.
static void megatron_prefix(const char *path, char *prefix, size_t cap) {
    snprintf(prefix, cap, "%s", path);
    const size_t n = strlen(prefix);
    if (ends_with(prefix, ".idx") || ends_with(prefix, ".bin")) prefix[n - 4] = '\0';
}

// The first bytes of a .idx next to path (PREFIX.idx) carry Megatron's magic.
static int megatron_idx_beside(const char *path) {
    char prefix[4096], idx[4112];
    megatron_prefix(path, prefix, sizeof prefix);
    snprintf(idx, sizeof idx, "%s.idx", prefix);
    if (!is_file(idx)) return 0;
    FILE *f = fopen(idx, "rb");
    if (!f) return 0;
    unsigned char head[9];
    const size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    return hp_data_sniff(head, got) == HP_DATA_MEGATRON;
}

// Opens one shard of the dataset in format (AUTO / AUTO_BYTES: detected) into d's slot k.
static int open_shard(hp_data *d, int k, const char *path, hp_data_format format, char *err, size_t errlen) {
    hp_data_shard *sh = &d->shards[k];
    mapping *tok = &d->maps[2 * k], *idx = &d->maps[2 * k + 1];
    if (format == HP_DATA_AUTO || format == HP_DATA_AUTO_BYTES) {
        // Megatron: PREFIX names no file but PREFIX.idx does, or the file is (or sits beside) an .idx
        if (!is_file(path) || ends_with(path, ".bin") || ends_with(path, ".idx")) {
            if (megatron_idx_beside(path)) format = HP_DATA_MEGATRON;
        }
    }
    if (format == HP_DATA_MEGATRON) {
        char prefix[4096], idx_path[4112], bin_path[4112];
        megatron_prefix(path, prefix, sizeof prefix);
        snprintf(idx_path, sizeof idx_path, "%s.idx", prefix);
        snprintf(bin_path, sizeof bin_path, "%s.bin", prefix);
        if (map_file(idx_path, idx, err, errlen) != 0 || map_file(bin_path, tok, err, errlen) != 0) return -1;
        return hp_data_parse_megatron(sh, idx->base, idx->len, idx_path, tok->base, tok->len, bin_path, err, errlen);
    }
    if (map_file(path, tok, err, errlen) != 0) return -1;
    if (format == HP_DATA_AUTO || format == HP_DATA_AUTO_BYTES) {
        const hp_data_format seen = hp_data_sniff(tok->base, (size_t)tok->len);
        if (seen == HP_DATA_MEGATRON) {   // an .idx under another name: its .bin is unknown
            snprintf(err, errlen, "%s: a Megatron .idx: give its PREFIX (PREFIX.idx and PREFIX.bin)", path);
            return -1;
        }
        if (seen == HP_DATA_LLMC) format = HP_DATA_LLMC;
        else if (format == HP_DATA_AUTO_BYTES) format = HP_DATA_BYTES;
        else {
            snprintf(err, errlen, "%s: no llm.c or Megatron header: a headerless file needs the dataset_format "
                     "uint16, uint32 or bytes (training. or validation.dataset_format)", path);
            return -1;
        }
    }
    if (format == HP_DATA_LLMC) return hp_data_parse_llmc(sh, tok->base, tok->len, path, err, errlen);
    if (tok->len == 0) { snprintf(err, errlen, "%s: data file is empty", path); return -1; }
    return hp_data_parse_raw(sh, format, tok->base, tok->len, path, err, errlen);
}

static int has_glob(const char *s) { return strpbrk(s, "*?[") != NULL; }

static int by_bytes(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// The files a glob matches, sorted bytewise (strcmp, not the locale's order).
// Returns the count (>= 1) with the sorted matches in g->gl_pathv (free with globfree), or -1
// with one line in err.
static int shard_paths(const char *path, glob_t *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    const int rc = glob(path, GLOB_NOSORT, NULL, g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g->gl_pathc == 0)) {
        snprintf(err, errlen, "%s: no file matches this pattern", path);
        globfree(g);
        return -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s: cannot expand this pattern (%s)", path, rc == GLOB_NOSPACE ? "out of memory" : "read error");
        globfree(g);
        return -1;
    }
    qsort(g->gl_pathv, g->gl_pathc, sizeof *g->gl_pathv, by_bytes);
    return (int)g->gl_pathc;
}

// ---------------------------------------------------------------------------------------------
// open / close

hp_data *hp_data_open(const char *path, hp_data_format format, int vocab_size, char *err, size_t errlen) {
    if (errlen) err[0] = '\0';
    if (vocab_size < 1) {
        snprintf(err, errlen, "data: vocab_size must be >= 1, got %d", vocab_size);
        return NULL;
    }
    if ((unsigned)format > HP_DATA_AUTO_BYTES) {
        snprintf(err, errlen, "data: unknown dataset_format %d", (int)format);
        return NULL;
    }
    if (path && format == HP_DATA_BYTES && vocab_size < 256) {
        snprintf(err, errlen, "%s: text data are bytes and need vocab_size >= 256, got %d", path, vocab_size);
        return NULL;
    }
    hp_data *d = calloc(1, sizeof *d);
    if (!d) { snprintf(err, errlen, "data: out of memory"); return NULL; }
    d->vocab_size = vocab_size;
    if (!path) return d;
    d->path = strdup(path);
    glob_t g;
    const int globbed = has_glob(path);
    int n = 1;
    if (globbed && (n = shard_paths(path, &g, err, errlen)) < 0) { hp_data_close(d); return NULL; }
    d->shards = calloc((size_t)n, sizeof *d->shards);
    d->maps = calloc(2 * (size_t)n, sizeof *d->maps);
    d->cap = n;
    if (!d->path || !d->shards || !d->maps) {
        snprintf(err, errlen, "data: out of memory");
        if (globbed) globfree(&g);
        hp_data_close(d);
        return NULL;
    }
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        const char *file = globbed ? g.gl_pathv[i] : path;
        if (globbed && (format == HP_DATA_AUTO || format == HP_DATA_AUTO_BYTES || format == HP_DATA_MEGATRON)) {
            // a Megatron glob matches PREFIX.bin and PREFIX.idx: one shard per prefix
            char prefix[4096], prev[4096];
            megatron_prefix(file, prefix, sizeof prefix);
            if (d->n_shards > 0 && d->shards[d->n_shards - 1].format == HP_DATA_MEGATRON) {
                megatron_prefix(d->shards[d->n_shards - 1].name, prev, sizeof prev);
                if (!strcmp(prefix, prev)) continue;
            }
        }
        const int k = d->n_shards;
        if (open_shard(d, k, file, format, err, errlen) != 0) { ok = 0; break; }
        d->n_shards++;
        const hp_data_shard *first = &d->shards[0], *sh = &d->shards[k];
        if (k > 0 && (sh->format != first->format || sh->type != first->type)) {
            snprintf(err, errlen, "%s: %s %s tokens, but %s is %s %s: the shards of a glob share one format and width",
                     sh->name, hp_data_format_name(sh->format), hp_tok_name(sh->type), first->name,
                     hp_data_format_name(first->format), hp_tok_name(first->type));
            ok = 0;
            break;
        }
        if (sh->format == HP_DATA_BYTES && vocab_size < 256) {
            snprintf(err, errlen, "%s: text data are bytes and need vocab_size >= 256, got %d", sh->name, vocab_size);
            ok = 0;
            break;
        }
        if (hp_data_scan_vocab(sh, vocab_size, err, errlen) != 0) { ok = 0; break; }
    }
    if (globbed) globfree(&g);
    if (!ok) { hp_data_close(d); return NULL; }
    d->format = d->shards[0].format;
    return d;
}

void hp_data_close(hp_data *data) {
    if (!data) return;
    for (int i = 0; data->shards && data->maps && i < data->cap; i++) {   // a shard that failed half-way too
        unmap(&data->maps[2 * i]);
        unmap(&data->maps[2 * i + 1]);
        hp_data_shard_free(&data->shards[i]);
    }
    free(data->shards);
    free(data->maps);
    free(data->path);
    free(data);
}

// ---------------------------------------------------------------------------------------------
// windows

int64_t hp_data_windows(const hp_data *data, int S) {
    if (!data || S < 0) return 0;
    if (!data->path) return INT64_MAX;
    int64_t nw = 0;
    for (int i = 0; i < data->n_shards; i++) nw += data->shards[i].n_tokens / ((int64_t)S + 1);
    return nw;
}

int hp_data_check_batch(const hp_data *data, int S, int B, char *err, size_t errlen) {
    const int64_t nw = hp_data_windows(data, S);
    if (nw >= B) return 0;
    snprintf(err, errlen, "%s: %" PRId64 " windows of seq_len+1 = %d tokens, fewer than the global batch %d",
             data && data->path ? data->path : "data", nw, S + 1, B);
    return -1;
}

void hp_data_window(const hp_data *data, int *ids, int64_t w, int S) {
    if (!data || !ids || S < 0) return;
    const int64_t nw = hp_data_windows(data, S);
    if (!data->path || nw <= 0) {   // the caller should have checked; never read past a file
        memset(ids, 0, sizeof(int) * ((size_t)S + 1));
        return;
    }
    w %= nw;
    if (w < 0) w += nw;
    // numbered shard by shard: find the shard holding window w
    for (int i = 0; i < data->n_shards; i++) {
        const int64_t here = data->shards[i].n_tokens / ((int64_t)S + 1);
        if (w < here) {
            hp_data_shard_read(&data->shards[i], ids, w * ((int64_t)S + 1), (int64_t)S + 1);
            return;
        }
        w -= here;
    }
}

void hp_data_sequence(const hp_data *data, int *ids, uint64_t seed, int step, int g, int B, int S) {
    if (!data || !ids || S < 0) return;
    if (!data->path) {
        uint64_t V = (uint64_t)data->vocab_size;
        for (int i = 0; i <= S; i++)
            ids[i] = (int)(hp_hash64(seed, (uint64_t)(int64_t)step, (uint64_t)(int64_t)g, (uint64_t)i) % V);
        return;
    }
    // steps are 1-based; the epoch wraps around, and a step before 1 still maps inside the data
    hp_data_window(data, ids, ((int64_t)step - 1) * (int64_t)B + (int64_t)g, S);
}

// ---------------------------------------------------------------------------------------------
// description

hp_data_format hp_data_found_format(const hp_data *data) {
    return data && data->path ? data->format : HP_DATA_AUTO;
}

int hp_data_token_bytes(const hp_data *data) {
    return data && data->n_shards ? hp_tok_bytes(data->shards[0].type) : 0;
}

int hp_data_n_files(const hp_data *data) { return data ? data->n_shards : 0; }

const char *hp_data_file(const hp_data *data, int i, int64_t *bytes, int64_t *tokens) {
    if (!data || i < 0 || i >= data->n_shards) return NULL;
    if (bytes) *bytes = data->shards[i].file_bytes;
    if (tokens) *tokens = data->shards[i].n_tokens;
    return data->shards[i].name;
}
