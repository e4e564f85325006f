// run_prompt.c - the prompt's ids and the text of generated ids (run_prompt.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "run_prompt.h"

// "1,2,3" -> ids, each in [0, V); one line and HP_EXIT_CONFIG on a bad one.
static int parse_ids(tool_prompt *p, const char *s, const char *who, int loud) {
    const size_t cap = strlen(s) / 2 + 1;
    if (!(p->ids = malloc(cap * sizeof(int)))) return HP_EXIT_FAIL;
    const char *c = s;
    while (*c) {
        char *end;
        const long v = strtol(c, &end, 10);
        if (end == c || (*end && *end != ',')) {
            if (loud) fprintf(stderr, "%s: --prompt-ids expects comma-separated ids (1,2,3), got '%s'\n", who, s);
            return HP_EXIT_CONFIG;
        }
        if (v < 0 || v >= p->vocab) {
            if (loud) fprintf(stderr, "%s: --prompt-ids: id %ld at position %d is not in [0, %d) (the model's vocab)\n",
                              who, v, p->n, p->vocab);
            return HP_EXIT_CONFIG;
        }
        p->ids[p->n++] = (int)v;
        c = *end ? end + 1 : end;
    }
    if (p->n == 0) {
        if (loud) fprintf(stderr, "%s: --prompt-ids is empty\n", who);
        return HP_EXIT_CONFIG;
    }
    return 0;
}

static int encode_text(tool_prompt *p, const char *text, const char *who, int loud) {
    const size_t len = strlen(text);
    if (!p->tk) {   // a 256-token model: a token is a byte
        if (!(p->ids = malloc((len ? len : 1) * sizeof(int)))) return HP_EXIT_FAIL;
        for (size_t i = 0; i < len; i++) p->ids[i] = (unsigned char)text[i];
        p->n = (int)len;
    } else {
        char err[512];
        int *ids = NULL, n = 0;
        if (hp_tokenizer_encode(p->tk, text, len, &ids, &n, err, sizeof err) != 0) {
            if (loud) fprintf(stderr, "%s: --prompt: %s\n", who, err);
            return HP_EXIT_CONFIG;
        }
        const int bos = hp_tokenizer_bos(p->tk);
        if (!(p->ids = malloc(((size_t)n + 1) * sizeof(int)))) { free(ids); return HP_EXIT_FAIL; }
        if (bos >= 0) p->ids[p->n++] = bos;
        memcpy(p->ids + p->n, ids, (size_t)n * sizeof(int));
        p->n += n;
        free(ids);
    }
    if (p->n == 0) {
        if (loud) fprintf(stderr, "%s: --prompt is empty (a byte model needs at least one byte)\n", who);
        return HP_EXIT_CONFIG;
    }
    return 0;
}

int tool_prompt_prepare(tool_prompt *p, const char *tokenizer_path, const char *text, const char *ids_text,
                        int vocab, const char *who, int loud) {
    memset(p, 0, sizeof *p);
    p->eos = -1;
    p->vocab = vocab;
    if (tokenizer_path) {
        char err[512];
        if (!(p->tk = hp_tokenizer_load(tokenizer_path, err, sizeof err))) {
            if (loud) fprintf(stderr, "%s: --tokenizer (model.hf_assets_path): %s\n", who, err);
            return HP_EXIT_CONFIG;
        }
        if (hp_tokenizer_vocab_size(p->tk) > vocab) {
            if (loud) fprintf(stderr, "%s: the tokenizer %s has %d pieces, more than the model's vocab of %d\n", who,
                              hp_tokenizer_file(p->tk), hp_tokenizer_vocab_size(p->tk), vocab);
            return HP_EXIT_CONFIG;
        }
        p->eos = hp_tokenizer_eos(p->tk);
    }
    if (!!text == !!ids_text) {
        if (loud) fprintf(stderr, "%s: give one prompt: --prompt TEXT or --prompt-ids 1,2,3\n", who);
        return HP_EXIT_CONFIG;
    }
    if (ids_text) return parse_ids(p, ids_text, who, loud);
    if (!p->tk && vocab != 256) {
        if (loud) fprintf(stderr, "%s: --prompt text needs a tokenizer (--tokenizer PATH or "
                          "model.hf_assets_path): a vocab of %d is not bytes (or give --prompt-ids)\n", who, vocab);
        return HP_EXIT_CONFIG;
    }
    return encode_text(p, text, who, loud);
}

void tool_prompt_free(tool_prompt *p) {
    hp_tokenizer_free(p->tk);
    free(p->ids);
    memset(p, 0, sizeof *p);
}

char *tool_prompt_decode(const tool_prompt *p, const int *ids, int n, size_t *len) {
    char *t = NULL;
    if (p->tk) {
        t = hp_tokenizer_decode(p->tk, ids, n);
        *len = t ? strlen(t) : 0;
    } else if (p->vocab == 256 && (t = malloc((size_t)n + 1))) {
        for (int i = 0; i < n; i++) t[i] = (char)ids[i];
        t[n] = '\0';
        *len = (size_t)n;
    }
    return t;
}

// The bytes t[0..n) as UTF-8 into out (room for 3 n + 1), each maximal ill-formed part (a
// stray byte, a sequence cut short) replaced by one U+FFFD: Unicode's recommended practice,
// what Python's decode(errors="replace") does.
static void utf8_valid(char *out, const unsigned char *t, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char c = t[i];
        const size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                         : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        // the second byte's range: no overlong forms, no surrogates, nothing past U+10FFFF
        const unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
        const unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        size_t j = 1;
        while (len > 1 && j < len && i + j < n &&
               (j == 1 ? t[i + 1] >= lo && t[i + 1] <= hi : (t[i + j] & 0xC0) == 0x80))
            j++;
        if (len && j == len) {
            memcpy(out + k, t + i, len);
            k += len;
        } else {
            memcpy(out + k, "\xEF\xBF\xBD", 3);
            k += 3;
        }
        i += len ? j : 1;
    }
    out[k] = '\0';
}

char *tool_prompt_text(const tool_prompt *p, const int *ids, int n) {
    size_t len = 0;
    char *raw = tool_prompt_decode(p, ids, n, &len);
    char *out;
    if (raw) {
        if ((out = malloc(3 * len + 1))) utf8_valid(out, (const unsigned char *)raw, len);
        free(raw);
        return out;
    }
    if (!(out = malloc(12 * (size_t)n + 1))) return NULL;
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) k += (size_t)sprintf(out + k, "%s%d", i ? " " : "", ids[i]);
    return out;
}
