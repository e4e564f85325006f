// data_formats.c - the on-disk token formats of docs/data.md, checked from their bytes:
// llm.c shards (LLMC dev/data/data_common.py: a 1024-byte header of 256 LE int32), Megatron's
// .idx + .bin (MEG megatron/core/datasets/indexed_dataset.py) and headerless LE tokens
// (nanoGPT's uint16 train.bin, uint32 alike, or bytes). Every read is bounds-checked against the
// length given and every field is read byte by byte (the .idx arrays start at byte 34, unaligned).
// defines: hp_tok_bytes, hp_tok_name, hp_data_sniff, hp_data_parse_llmc, hp_data_parse_megatron,
//          hp_data_parse_raw, hp_data_scan_vocab, hp_data_shard_read, hp_data_shard_free
#include "data_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    LLMC_HEADER = 1024,               // 256 int32
    LLMC_MAGIC_U16 = 20240520,        // version 1, uint16 tokens
    LLMC_MAGIC_U32 = 20240801,        // version 7, uint32 tokens
    MEG_HEADER = 34,                  // magic 9 + version 8 + dtype 1 + n 8 + m 8
};
static const unsigned char meg_magic[9] = { 'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0 };

static uint64_t le_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static uint32_t le_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int hp_tok_bytes(hp_tok_type t) {
    switch (t) {
    case HP_TOK_U8: case HP_TOK_I8: return 1;
    case HP_TOK_I16: case HP_TOK_U16: return 2;
    case HP_TOK_I32: case HP_TOK_U32: return 4;
    case HP_TOK_I64: return 8;
    }
    return 1;
}

const char *hp_tok_name(hp_tok_type t) {
    static const char *const names[] = { "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32" };
    return (unsigned)t <= HP_TOK_U32 ? names[t] : "?";
}

// One token at p as a signed 64-bit value (uint32 and below fit; int64 as stored).
static int64_t tok_at(const unsigned char *p, hp_tok_type t) {
    switch (t) {
    case HP_TOK_U8:  return p[0];
    case HP_TOK_I8:  return (int8_t)p[0];
    case HP_TOK_U16: return (int64_t)((uint32_t)p[0] | (uint32_t)p[1] << 8);
    case HP_TOK_I16: return (int16_t)(uint16_t)((uint32_t)p[0] | (uint32_t)p[1] << 8);
    case HP_TOK_U32: return (int64_t)le_u32(p);
    case HP_TOK_I32: return (int32_t)le_u32(p);
    case HP_TOK_I64: return (int64_t)le_u64(p);
    }
    return 0;
}

hp_data_format hp_data_sniff(const unsigned char *head, size_t len) {
    if (len >= sizeof meg_magic && !memcmp(head, meg_magic, sizeof meg_magic)) return HP_DATA_MEGATRON;
    if (len >= 4) {
        const uint32_t magic = le_u32(head);
        if (magic == LLMC_MAGIC_U16 || magic == LLMC_MAGIC_U32) return HP_DATA_LLMC;
    }
    return HP_DATA_AUTO;
}

static int set_name(hp_data_shard *sh, const char *name, char *err, size_t errlen) {
    const size_t n = strlen(name);
    sh->name = malloc(n + 1);
    if (!sh->name) { snprintf(err, errlen, "%s: out of memory", name); return -1; }
    memcpy(sh->name, name, n + 1);
    return 0;
}

int hp_data_parse_llmc(hp_data_shard *sh, const unsigned char *buf, int64_t len, const char *name,
                       char *err, size_t errlen) {
    memset(sh, 0, sizeof *sh);
    if (len < 12) {
        snprintf(err, errlen, "%s: %" PRId64 " bytes, shorter than an llm.c shard's 1024-byte header", name, len);
        return -1;
    }
    const uint32_t magic = le_u32(buf), version = le_u32(buf + 4);
    const int32_t count = (int32_t)le_u32(buf + 8);
    if (magic != LLMC_MAGIC_U16 && magic != LLMC_MAGIC_U32) {
        snprintf(err, errlen, "%s: bad magic %" PRIu32 ": an llm.c shard starts with %d (uint16 tokens) or %d (uint32)",
                 name, magic, LLMC_MAGIC_U16, LLMC_MAGIC_U32);
        return -1;
    }
    const int want = magic == LLMC_MAGIC_U16 ? 1 : 7;
    if (version != (uint32_t)want) {
        snprintf(err, errlen, "%s: bad version %" PRIu32 ": llm.c magic %" PRIu32 " goes with version %d", name,
                 version, magic, want);
        return -1;
    }
    if (count < 0) {
        snprintf(err, errlen, "%s: the llm.c header's token count is negative (%d)", name, (int)count);
        return -1;
    }
    const int width = want == 1 ? 2 : 4;
    const int64_t expect = LLMC_HEADER + (int64_t)count * width;
    if (len != expect) {
        snprintf(err, errlen, "%s: size mismatch: 1024 + %d tokens x %d bytes = %" PRId64 " bytes expected, the file has %" PRId64,
                 name, (int)count, width, expect, len);
        return -1;
    }
    sh->format = HP_DATA_LLMC;
    sh->type = want == 1 ? HP_TOK_U16 : HP_TOK_U32;
    sh->version = want;
    sh->file = buf;
    sh->file_bytes = len;
    sh->first = LLMC_HEADER;
    sh->n_tokens = count;
    return set_name(sh, name, err, errlen);
}

int hp_data_parse_megatron(hp_data_shard *sh, const unsigned char *idx, int64_t idx_len, const char *idx_name,
                           const unsigned char *bin, int64_t bin_len, const char *bin_name, char *err, size_t errlen) {
    memset(sh, 0, sizeof *sh);
    if (idx_len < (int64_t)sizeof meg_magic || memcmp(idx, meg_magic, sizeof meg_magic)) {
        snprintf(err, errlen, "%s: bad magic: a Megatron .idx starts with \"MMIDIDX\\0\\0\"", idx_name);
        return -1;
    }
    if (idx_len < MEG_HEADER) {
        snprintf(err, errlen, "%s: size mismatch: %" PRId64 " bytes, shorter than the 34-byte Megatron .idx header",
                 idx_name, idx_len);
        return -1;
    }
    const uint64_t version = le_u64(idx + 9);
    if (version != 1) {
        snprintf(err, errlen, "%s: bad version %" PRIu64 ": Megatron .idx version 1 is the one known", idx_name, version);
        return -1;
    }
    static const int code_type[9] = { -1, HP_TOK_U8, HP_TOK_I8, HP_TOK_I16, HP_TOK_I32, HP_TOK_I64, -1, -1, HP_TOK_U16 };
    const unsigned code = idx[17];
    if (code > 8 || code_type[code] < 0) {
        snprintf(err, errlen, "%s: Megatron dtype code %u is not a token type (1 uint8, 2 int8, 3 int16, 4 int32, "
                 "5 int64, 8 uint16; 6 float64 and 7 float32 are refused)", idx_name, code);
        return -1;
    }
    const hp_tok_type type = (hp_tok_type)code_type[code];
    const int width = hp_tok_bytes(type);
    const uint64_t n = le_u64(idx + 18), m = le_u64(idx + 26);
    // 34 + 4n + 8n + 8m bytes exactly; n and m bounded first so that the sum cannot overflow
    const uint64_t room = (uint64_t)idx_len;
    if (n > room / 12 || m > room / 8 || (uint64_t)MEG_HEADER + 12 * n + 8 * m != room) {
        snprintf(err, errlen, "%s: size mismatch: 34 + 12 x %" PRIu64 " sequences + 8 x %" PRIu64
                 " documents = %.0f bytes expected, the file has %" PRId64, idx_name, n, m,
                 (double)MEG_HEADER + 12.0 * (double)n + 8.0 * (double)m, idx_len);
        return -1;
    }
    const unsigned char *lengths = idx + MEG_HEADER, *pointers = lengths + 4 * n, *docs = pointers + 8 * n;
    int64_t *start = malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!start) { snprintf(err, errlen, "%s: out of memory for %" PRIu64 " sequences", idx_name, n); return -1; }
    start[0] = 0;
    for (uint64_t i = 0; i < n; i++) {
        const int32_t l = (int32_t)le_u32(lengths + 4 * i);
        const int64_t p = (int64_t)le_u64(pointers + 8 * i);
        // p + l*width <= bin_len, written so that nothing overflows (l < 2^31, width <= 8)
        if (l < 0 || p < 0 || p > bin_len || (int64_t)l * width > bin_len - p) {
            snprintf(err, errlen, "%s: inconsistent idx: sequence %" PRIu64 ": pointer %" PRId64 " + length %d x %d bytes "
                     "lies outside %s (%" PRId64 " bytes)", idx_name, i, p, (int)l, width, bin_name, bin_len);
            free(start);
            return -1;
        }
        start[i + 1] = start[i] + l;
    }
    // document indices: from 0, never falling, to n
    uint64_t prev = 0;
    for (uint64_t j = 0; j < m; j++) {
        const uint64_t d = le_u64(docs + 8 * j);
        if ((j == 0 && d != 0) || d < prev || d > n || (j == m - 1 && d != n)) {
            snprintf(err, errlen, "%s: inconsistent idx: document index %" PRIu64 " is %" PRIu64 " (after %" PRIu64
                     "); they must rise from 0 to the sequence count %" PRIu64, idx_name, j, d, prev, n);
            free(start);
            return -1;
        }
        prev = d;
    }
    if (m == 0 && n > 0) {
        snprintf(err, errlen, "%s: inconsistent idx: %" PRIu64 " sequences but no document indices", idx_name, n);
        free(start);
        return -1;
    }
    sh->format = HP_DATA_MEGATRON;
    sh->type = type;
    sh->version = 1;
    sh->file = bin;
    sh->file_bytes = bin_len;
    sh->idx = idx;
    sh->idx_bytes = idx_len;
    sh->n_tokens = start[n];
    sh->n_seq = (int64_t)n;
    sh->seq_start = start;
    if (set_name(sh, bin_name, err, errlen) != 0) { free(start); sh->seq_start = NULL; return -1; }
    return 0;
}

int hp_data_parse_raw(hp_data_shard *sh, hp_data_format format, const unsigned char *buf, int64_t len,
                      const char *name, char *err, size_t errlen) {
    memset(sh, 0, sizeof *sh);
    const hp_tok_type type = format == HP_DATA_UINT16 ? HP_TOK_U16 : format == HP_DATA_UINT32 ? HP_TOK_U32 : HP_TOK_U8;
    const int width = hp_tok_bytes(type);
    if (len % width) {
        snprintf(err, errlen, "%s: size mismatch: %" PRId64 " bytes is not a whole number of %d-byte %s tokens "
                 "(%" PRId64 " or %" PRId64 " bytes expected)", name, len, width, hp_tok_name(type),
                 len - len % width, len - len % width + width);
        return -1;
    }
    sh->format = format == HP_DATA_UINT16 || format == HP_DATA_UINT32 ? format : HP_DATA_BYTES;
    sh->type = type;
    sh->file = buf;
    sh->file_bytes = len;
    sh->n_tokens = len / width;
    return set_name(sh, name, err, errlen);
}

// The byte offset in the token file of token t of sequence i (Megatron) or of the shard.
static int64_t byte_of(const hp_data_shard *sh, int64_t i, int64_t t) {
    const int w = hp_tok_bytes(sh->type);
    if (!sh->seq_start) return sh->first + t * w;
    const int64_t p = (int64_t)le_u64(sh->idx + MEG_HEADER + 4 * sh->n_seq + 8 * i);
    return p + (t - sh->seq_start[i]) * w;
}

static int bad_token(const hp_data_shard *sh, int64_t offset, int64_t id, int vocab_size, char *err, size_t errlen) {
    if (id < 0)
        snprintf(err, errlen, "%s: byte offset %" PRId64 ": token id %" PRId64 " is negative", sh->name, offset, id);
    else
        snprintf(err, errlen, "%s: byte offset %" PRId64 ": token id %" PRId64 " >= vocab_size %d", sh->name, offset, id,
                 vocab_size);
    return -1;
}

int hp_data_scan_vocab(const hp_data_shard *sh, int vocab_size, char *err, size_t errlen) {
    const int w = hp_tok_bytes(sh->type);
    if (!sh->seq_start) {
        const unsigned char *p = sh->file + sh->first;
        if (sh->type == HP_TOK_U16) {   // the common case, a tight loop
            for (int64_t t = 0; t < sh->n_tokens; t++, p += 2) {
                const int64_t id = (int64_t)((uint32_t)p[0] | (uint32_t)p[1] << 8);
                if (id >= vocab_size) return bad_token(sh, sh->first + 2 * t, id, vocab_size, err, errlen);
            }
            return 0;
        }
        for (int64_t t = 0; t < sh->n_tokens; t++, p += w) {
            const int64_t id = tok_at(p, sh->type);
            if (id < 0 || id >= vocab_size) return bad_token(sh, sh->first + t * w, id, vocab_size, err, errlen);
        }
        return 0;
    }
    for (int64_t i = 0; i < sh->n_seq; i++) {
        const int64_t at = byte_of(sh, i, sh->seq_start[i]);
        for (int64_t t = 0; t < sh->seq_start[i + 1] - sh->seq_start[i]; t++) {
            const int64_t id = tok_at(sh->file + at + t * w, sh->type);
            if (id < 0 || id >= vocab_size) return bad_token(sh, at + t * w, id, vocab_size, err, errlen);
        }
    }
    return 0;
}

void hp_data_shard_read(const hp_data_shard *sh, int *ids, int64_t t0, int64_t n) {
    const int w = hp_tok_bytes(sh->type);
    if (!sh->seq_start) {
        const unsigned char *p = sh->file + sh->first + t0 * w;
        for (int64_t k = 0; k < n; k++) ids[k] = (int)tok_at(p + k * w, sh->type);
        return;
    }
    // the last sequence starting at or before t0 (empty sequences share a start: skip them)
    int64_t lo = 0, hi = sh->n_seq - 1;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (sh->seq_start[mid] <= t0) lo = mid; else hi = mid - 1;
    }
    int64_t i = lo, t = t0;
    for (int64_t k = 0; k < n; k++, t++) {
        while (t >= sh->seq_start[i + 1]) i++;
        ids[k] = (int)tok_at(sh->file + byte_of(sh, i, t), sh->type);
    }
}

void hp_data_shard_free(hp_data_shard *sh) {
    free(sh->name);
    free(sh->seq_start);
    sh->name = NULL;
    sh->seq_start = NULL;
}
