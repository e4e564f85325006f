// toml.c - the job file's TOML subset (toml.h): a one-pass reader into a flat list, and the writer
// that puts such a list back. Errors are "FILE:LINE: why", one line, naming the construct.
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "util/toml.h"

typedef struct parser {
    const char *s;          // the text, s[0..len)
    size_t      len, pos;
    int         line;
    const char *file;
    char       *err;
    size_t      errlen;
    int         failed;
    char       *table;      // the current [table] ("" at top)
    char      **tables;     // explicit headers so far, with their lines
    int        *table_lines;
    int         n_tables, cap_tables;
    hp_toml    *out;
} parser;

static int fail(parser *p, const char *fmt, ...) {
    if (p->failed) return -1;
    p->failed = 1;
    int n = snprintf(p->err, p->errlen, "%s:%d: ", p->file, p->line);
    if (n < 0) n = 0;
    if ((size_t)n < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int peek(const parser *p, size_t ahead) {
    return p->pos + ahead < p->len ? (unsigned char)p->s[p->pos + ahead] : -1;
}

static int is_bare(int c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static void skip_ws(parser *p) {
    while (peek(p, 0) == ' ' || peek(p, 0) == '\t') p->pos++;
}

static int at_newline(const parser *p) {
    return peek(p, 0) == '\n' || (peek(p, 0) == '\r' && peek(p, 1) == '\n');
}

static void eat_newline(parser *p) {
    p->pos += peek(p, 0) == '\r' ? 2 : 1;
    p->line++;
}

static void skip_comment(parser *p) {
    if (peek(p, 0) != '#') return;
    while (p->pos < p->len && !at_newline(p)) p->pos++;
}

// After a header or a value: spaces, an optional comment, then a newline or the end.
static int end_of_line(parser *p, const char *after) {
    skip_ws(p);
    skip_comment(p);
    if (p->pos >= p->len) return 0;
    if (at_newline(p)) { eat_newline(p); return 0; }
    if (peek(p, 0) == '\r') return fail(p, "a carriage return without a line feed");
    return fail(p, "unexpected '%c' after %s (one key = value per line)", p->s[p->pos], after);
}

static char *dup_range(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

// A bare key at pos (A-Za-z0-9_-); quoted keys and dotted keys are outside the subset.
static char *bare_key(parser *p, const char *what) {
    size_t b = p->pos;
    while (is_bare(peek(p, 0))) p->pos++;
    if (p->pos == b) {
        const int c = peek(p, 0);
        if (c == '"' || c == '\'') fail(p, "quoted keys are not supported (bare keys: A-Z a-z 0-9 _ -)");
        else if (c < 0 || c == '\n' || c == '\r') fail(p, "%s is missing", what);
        else fail(p, "unexpected '%c': expected %s", c, what);
        return NULL;
    }
    char *k = dup_range(p->s + b, p->pos - b);
    if (!k) fail(p, "out of memory");
    return k;
}

// ---------------------------------------------------------------------------------------------
// values

static void put_utf8(char *d, size_t *n, unsigned long cp) {
    if (cp < 0x80) d[(*n)++] = (char)cp;
    else if (cp < 0x800) {
        d[(*n)++] = (char)(0xC0 | (cp >> 6));
        d[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        d[(*n)++] = (char)(0xE0 | (cp >> 12));
        d[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        d[(*n)++] = (char)(0xF0 | (cp >> 18));
        d[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        d[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hex_digit(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// "..." (escapes) or '...' (as written), on one line. The decoded text is never longer than the
// quoted one (an escape of k characters yields at most k bytes of UTF-8).
static int parse_string(parser *p, hp_toml_value *v) {
    const int quote = peek(p, 0);
    if (peek(p, 1) == quote && peek(p, 2) == quote)
        return fail(p, "multi-line strings (%c%c%c) are not supported", quote, quote, quote);
    p->pos++;
    size_t b = p->pos;
    while (p->pos < p->len && peek(p, 0) != quote && !at_newline(p)) p->pos += (quote == '"' && peek(p, 0) == '\\') ? 2 : 1;
    if (p->pos >= p->len || peek(p, 0) != quote) return fail(p, "unterminated string (strings end on their line)");
    const size_t n_raw = p->pos - b;
    p->pos++;
    char *d = malloc(n_raw + 1);
    if (!d) return fail(p, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < n_raw; i++) {
        const unsigned char c = (unsigned char)p->s[b + i];
        if ((c < 0x20 && c != '\t') || c == 0x7F) {
            free(d);
            return fail(p, "control character 0x%02x in a string (write it as an escape)", c);
        }
        if (quote == '\'' || c != '\\') { d[n++] = (char)c; continue; }
        const int e = (unsigned char)p->s[b + ++i];   // the scan above keeps i inside
        const char *simple = strchr("btnfr\"\\", e);
        if (e && simple) { d[n++] = "\b\t\n\f\r\"\\"[simple - "btnfr\"\\"]; continue; }
        if (e != 'u' && e != 'U') {
            free(d);
            return fail(p, "invalid escape '\\%c' in a string", e >= 0x20 && e < 0x7F ? e : '?');
        }
        const size_t digits = e == 'u' ? 4 : 8;
        unsigned long cp = 0;
        for (size_t k = 1; k <= digits; k++) {
            const int h = i + k < n_raw ? hex_digit((unsigned char)p->s[b + i + k]) : -1;
            if (h < 0) {
                free(d);
                return fail(p, "'\\%c' needs %zu hexadecimal digits", e, digits);
            }
            cp = cp * 16 + (unsigned long)h;
        }
        i += digits;
        if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            free(d);
            return fail(p, "escape U+%04lX is not a character hp takes (NUL, a surrogate or past U+10FFFF)", cp);
        }
        put_utf8(d, &n, cp);
    }
    d[n] = '\0';
    v->type = HP_TOML_STRING;
    v->s = d;
    return 0;
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

// Digits with single '_' between them from t[*i]; appends them (without '_') to d. Returns the
// count of digits, or -1 for a misplaced '_'.
static int digits(const char *t, size_t n, size_t *i, char *d, size_t *dn) {
    int count = 0;
    while (*i < n && (is_digit(t[*i]) || t[*i] == '_')) {
        if (t[*i] == '_' && (count == 0 || *i + 1 >= n || !is_digit(t[*i + 1]))) return -1;
        if (t[*i] != '_') { d[(*dn)++] = t[*i]; count++; }
        (*i)++;
    }
    return count;
}

// A number, true/false, or what the subset refuses (dates, inf, nan, hex ...): one token.
static int parse_scalar_word(parser *p, hp_toml_value *v) {
    size_t b = p->pos;
    while (p->pos < p->len && (is_bare(peek(p, 0)) || strchr("+.:", peek(p, 0)))) p->pos++;
    const char *t = p->s + b;
    const size_t n = p->pos - b;
    if (n == 0) {
        const int c = peek(p, 0);
        if (c < 0 || c == '\n' || c == '\r' || c == '#') return fail(p, "a value is missing after '='");
        return fail(p, "unexpected '%c': expected a value", c);
    }
    if ((n == 4 && !memcmp(t, "true", 4)) || (n == 5 && !memcmp(t, "false", 5))) {
        v->type = HP_TOML_BOOL;
        v->b = n == 4;
        return 0;
    }
    const size_t s0 = (t[0] == '+' || t[0] == '-') ? 1 : 0;
    if (n - s0 == 3 && (!memcmp(t + s0, "inf", 3) || !memcmp(t + s0, "nan", 3)))
        return fail(p, "inf and nan are not supported");
    // a date or time: 1979-05-27, 07:32:00, 1979-05-27T07:32:00Z
    if ((n >= 5 && is_digit(t[0]) && is_digit(t[3]) && t[4] == '-') || (n >= 3 && is_digit(t[0]) && t[2] == ':'))
        return fail(p, "dates and times are not supported");
    if (n - s0 >= 2 && t[s0] == '0' && strchr("xob", t[s0 + 1]))
        return fail(p, "only decimal integers are supported, got '%.*s'", (int)(n < 40 ? n : 40), t);
    char *d = malloc(n + 1);
    if (!d) return fail(p, "out of memory");
    size_t i = s0, dn = 0;
    if (s0) d[dn++] = t[0];
    const size_t int_at = dn;
    int nd = digits(t, n, &i, d, &dn), is_float = 0, bad = nd <= 0;
    if (!bad && nd > 1 && d[int_at] == '0') {
        free(d);
        return fail(p, "leading zeros are not allowed, got '%.*s'", (int)(n < 40 ? n : 40), t);
    }
    if (!bad && i < n && t[i] == '.') {
        d[dn++] = t[i++];
        is_float = 1;
        bad = digits(t, n, &i, d, &dn) <= 0;
    }
    if (!bad && i < n && (t[i] == 'e' || t[i] == 'E')) {
        d[dn++] = t[i++];
        is_float = 1;
        if (i < n && (t[i] == '+' || t[i] == '-')) d[dn++] = t[i++];
        bad = digits(t, n, &i, d, &dn) <= 0;
    }
    d[dn] = '\0';
    if (bad || i != n) {
        free(d);
        return fail(p, "'%.*s' is not a value (a number, true, false, \"string\" or [array])", (int)(n < 40 ? n : 40), t);
    }
    char *end;
    errno = 0;
    if (is_float) {
        v->type = HP_TOML_FLOAT;
        v->f = strtod(d, &end);
        if (errno == ERANGE && (v->f > 1.0 || v->f < -1.0)) {
            free(d);
            return fail(p, "float '%.*s' is out of range", (int)(n < 40 ? n : 40), t);
        }
    } else {
        v->type = HP_TOML_INT;
        v->i = strtoll(d, &end, 10);
        if (errno == ERANGE) {
            free(d);
            return fail(p, "integer '%.*s' is out of range (64 bits)", (int)(n < 40 ? n : 40), t);
        }
    }
    v->text = d;
    return 0;
}

static void value_free(hp_toml_value *v) {
    free(v->s);
    free(v->text);
    for (int i = 0; i < v->n; i++) value_free(&v->items[i]);
    free(v->items);
    memset(v, 0, sizeof *v);
}

static int parse_scalar(parser *p, hp_toml_value *v) {
    const int c = peek(p, 0);
    if (c == '"' || c == '\'') return parse_string(p, v);
    if (c == '{') return fail(p, "inline tables { ... } are not supported (write a [section])");
    if (c == '[') return fail(p, "nested arrays are not supported");
    return parse_scalar_word(p, v);
}

// Spaces, newlines and comments inside an array.
static void skip_array_space(parser *p) {
    for (;;) {
        skip_ws(p);
        skip_comment(p);
        if (at_newline(p)) eat_newline(p);
        else return;
    }
}

static int parse_array(parser *p, hp_toml_value *v) {
    p->pos++;   // '['
    v->type = HP_TOML_ARRAY;
    v->elem = HP_TOML_INT;
    int cap = 0;
    for (;;) {
        skip_array_space(p);
        if (peek(p, 0) == ']') { p->pos++; return 0; }
        if (p->pos >= p->len) return fail(p, "unterminated array (no ']')");
        hp_toml_value item;
        memset(&item, 0, sizeof item);
        if (parse_scalar(p, &item) != 0) return -1;
        if (v->n > 0 && item.type != v->elem) {
            const hp_toml_type want = v->elem, got = item.type;
            value_free(&item);
            return fail(p, "an array holds one type: a %s after %ss", hp_toml_type_name(got),
                        hp_toml_type_name(want));
        }
        if (v->n == cap) {
            cap = cap ? 2 * cap : 4;
            hp_toml_value *grown = realloc(v->items, (size_t)cap * sizeof *grown);
            if (!grown) { value_free(&item); return fail(p, "out of memory"); }
            v->items = grown;
        }
        v->elem = item.type;
        v->items[v->n++] = item;
        skip_array_space(p);
        if (peek(p, 0) == ',') { p->pos++; continue; }
        if (peek(p, 0) == ']') { p->pos++; return 0; }
        if (p->pos >= p->len) return fail(p, "unterminated array (no ']')");
        return fail(p, "unexpected '%c' in an array: expected ',' or ']'", p->s[p->pos]);
    }
}

// ---------------------------------------------------------------------------------------------
// keys and tables

// 1 when name is prefix, or starts with prefix followed by '.'
static int under(const char *name, const char *prefix) {
    const size_t n = strlen(prefix);
    return !strncmp(name, prefix, n) && (name[n] == '\0' || name[n] == '.');
}

static int add_entry(parser *p, char *key, int line, hp_toml_value *v) {
    hp_toml *t = p->out;
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->entries[i].key, key)) return fail(p, "duplicate key '%s' (first at line %d)", key, t->entries[i].line);
    for (int i = 0; i < p->n_tables; i++)
        if (under(p->tables[i], key))
            return fail(p, "'%s' is both a key and a table (line %d)", key, p->table_lines[i]);
    if (t->n == t->cap) {
        const int cap = t->cap ? 2 * t->cap : 16;
        hp_toml_entry *grown = realloc(t->entries, (size_t)cap * sizeof *grown);
        if (!grown) return fail(p, "out of memory");
        t->entries = grown;
        t->cap = cap;
    }
    t->entries[t->n].key = key;
    t->entries[t->n].line = line;
    t->entries[t->n].value = *v;
    t->n++;
    return 0;
}

static int parse_header(parser *p) {
    if (peek(p, 1) == '[') return fail(p, "arrays of tables [[...]] are not supported");
    p->pos++;
    size_t cap = 64, n = 0;
    char *name = malloc(cap);
    if (!name) return fail(p, "out of memory");
    for (;;) {
        skip_ws(p);
        char *part = bare_key(p, "a table name");
        if (!part) { free(name); return -1; }
        const size_t pn = strlen(part);
        if (n + pn + 2 > cap) {
            cap = 2 * (n + pn + 2);
            char *grown = realloc(name, cap);
            if (!grown) { free(part); free(name); return fail(p, "out of memory"); }
            name = grown;
        }
        if (n) name[n++] = '.';
        memcpy(name + n, part, pn + 1);
        n += pn;
        free(part);
        skip_ws(p);
        if (peek(p, 0) == '.') { p->pos++; continue; }
        if (peek(p, 0) == ']') { p->pos++; break; }
        free(name);
        return fail(p, "unterminated table header (no ']')");
    }
    for (int i = 0; i < p->n_tables; i++)
        if (!strcmp(p->tables[i], name)) {
            const int first = p->table_lines[i];
            free(name);
            return fail(p, "duplicate table [%s] (first at line %d)", p->tables[i], first);
        }
    for (int i = 0; i < p->out->n; i++)
        if (under(name, p->out->entries[i].key)) {
            const int first = p->out->entries[i].line;
            free(name);
            return fail(p, "'%s' is both a key (line %d) and a table", p->out->entries[i].key, first);
        }
    if (p->n_tables == p->cap_tables) {
        const int c = p->cap_tables ? 2 * p->cap_tables : 8;
        char **t = realloc(p->tables, (size_t)c * sizeof *t);
        if (t) p->tables = t;
        int *l = realloc(p->table_lines, (size_t)c * sizeof *l);
        if (l) p->table_lines = l;
        if (!t || !l) { free(name); return fail(p, "out of memory"); }
        p->cap_tables = c;
    }
    p->tables[p->n_tables] = name;
    p->table_lines[p->n_tables++] = p->line;
    p->table = name;
    return end_of_line(p, "a table header");
}

static int parse_key_value(parser *p) {
    const int line = p->line;
    char *k = bare_key(p, "a key");
    if (!k) return -1;
    skip_ws(p);
    if (peek(p, 0) == '.') { free(k); return fail(p, "dotted keys are not supported (write a [section] header)"); }
    if (peek(p, 0) != '=') {
        fail(p, "expected '=' after the key '%s'", k);
        free(k);
        return -1;
    }
    p->pos++;
    skip_ws(p);
    hp_toml_value v;
    memset(&v, 0, sizeof v);
    const int e = peek(p, 0) == '[' ? parse_array(p, &v) : parse_scalar(p, &v);
    const size_t tn = strlen(p->table), kn = strlen(k);
    char *full = malloc(tn + kn + 2);
    if (e != 0 || !full) {
        value_free(&v);
        free(k);
        free(full);
        return e ? -1 : fail(p, "out of memory");
    }
    snprintf(full, tn + kn + 2, "%s%s%s", p->table, tn ? "." : "", k);
    free(k);
    if (add_entry(p, full, line, &v) != 0) { value_free(&v); free(full); return -1; }
    return end_of_line(p, "the value");
}

int hp_toml_parse(const char *text, size_t len, const char *file, hp_toml *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    parser p = { .s = text, .len = len, .line = 1, .file = file ? file : "<toml>", .err = err,
                 .errlen = errlen, .table = "", .out = out };
    if (errlen) err[0] = '\0';
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (nul) {
        for (const char *c = text; c < nul; c++) p.line += *c == '\n';
        fail(&p, "a NUL byte (not a text file)");
    }
    while (!p.failed && p.pos < p.len) {
        skip_ws(&p);
        const int c = peek(&p, 0);
        if (c < 0) break;
        if (c == '#') { skip_comment(&p); continue; }
        if (at_newline(&p)) { eat_newline(&p); continue; }
        if (c == '[') parse_header(&p);
        else parse_key_value(&p);
    }
    for (int i = 0; i < p.n_tables; i++) free(p.tables[i]);
    free(p.tables);
    free(p.table_lines);
    if (p.failed) { hp_toml_free(out); return -1; }
    return 0;
}

int hp_toml_load(const char *path, hp_toml *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        if (cap >= ((size_t)1 << 24)) {   // 16 MiB: not a job file
            fclose(f);
            free(buf);
            snprintf(err, errlen, "%s: larger than 16 MiB: not a job file", path);
            return -1;
        }
        char *grown = realloc(buf, cap *= 2);
        if (!grown) { free(buf); buf = NULL; }
        else buf = grown;
    }
    const int read_err = ferror(f);
    fclose(f);
    if (!buf || read_err) {
        free(buf);
        snprintf(err, errlen, "%s: %s", path, buf ? "read error (a folder?)" : "out of memory");
        return -1;
    }
    const int e = hp_toml_parse(buf, n, path, out, err, errlen);
    free(buf);
    return e;
}

void hp_toml_free(hp_toml *t) {
    for (int i = 0; i < t->n; i++) {
        free(t->entries[i].key);
        value_free(&t->entries[i].value);
    }
    free(t->entries);
    memset(t, 0, sizeof *t);
}

// ---------------------------------------------------------------------------------------------
// writing

const char *hp_toml_type_name(hp_toml_type t) {
    switch (t) {
    case HP_TOML_INT:    return "integer";
    case HP_TOML_FLOAT:  return "float";
    case HP_TOML_BOOL:   return "boolean";
    case HP_TOML_STRING: return "string";
    case HP_TOML_ARRAY:  return "array";
    }
    return "?";
}

// Appends to buf[0..cap) at *n, counting what does not fit.
static void put(char *buf, size_t cap, size_t *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(*n < cap ? buf + *n : NULL, *n < cap ? cap - *n : 0, fmt, ap);
    va_end(ap);
    if (k > 0) *n += (size_t)k;
}

size_t hp_toml_quote(char *buf, size_t cap, const char *s) {
    size_t n = 0;
    put(buf, cap, &n, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') put(buf, cap, &n, "\\%c", *c);
        else if (*c == '\n') put(buf, cap, &n, "\\n");
        else if (*c == '\t') put(buf, cap, &n, "\\t");
        else if (*c < 0x20 || *c == 0x7F) put(buf, cap, &n, "\\u%04X", *c);
        else put(buf, cap, &n, "%c", *c);
    }
    put(buf, cap, &n, "\"");
    return n;
}

static size_t format_scalar(char *buf, size_t cap, const hp_toml_value *v) {
    size_t n = 0;
    switch (v->type) {
    case HP_TOML_INT:  put(buf, cap, &n, "%lld", (long long)v->i); break;
    case HP_TOML_BOOL: put(buf, cap, &n, "%s", v->b ? "true" : "false"); break;
    case HP_TOML_FLOAT: {
        char f[40];
        snprintf(f, sizeof f, "%.17g", v->f);
        put(buf, cap, &n, "%s%s", f, strpbrk(f, ".e") ? "" : ".0");   // 1 -> 1.0: still a float
        break;
    }
    case HP_TOML_STRING: n = hp_toml_quote(buf, cap, v->s); break;
    case HP_TOML_ARRAY: break;
    }
    return n;
}

size_t hp_toml_format_value(char *buf, size_t cap, const hp_toml_value *v) {
    if (cap) buf[0] = '\0';
    if (v->type != HP_TOML_ARRAY) return format_scalar(buf, cap, v);
    size_t n = 0;
    put(buf, cap, &n, "[");
    for (int i = 0; i < v->n; i++) {
        if (i) put(buf, cap, &n, ", ");
        n += format_scalar(n < cap ? buf + n : NULL, n < cap ? cap - n : 0, &v->items[i]);
    }
    put(buf, cap, &n, "]");
    return n;
}

void hp_toml_write(FILE *out, const hp_toml *t) {
    const char *section = "";
    size_t section_len = 0;
    for (int i = 0; i < t->n; i++) {
        const char *key = t->entries[i].key, *dot = strrchr(key, '.');
        const size_t sl = dot ? (size_t)(dot - key) : 0;
        if (i == 0 ? sl > 0 : (sl != section_len || strncmp(key, section, sl)))
            fprintf(out, "%s[%.*s]\n", i ? "\n" : "", (int)sl, key);
        section = key;
        section_len = sl;
        const size_t need = hp_toml_format_value(NULL, 0, &t->entries[i].value) + 1;
        char *v = malloc(need);
        if (!v) continue;
        hp_toml_format_value(v, need, &t->entries[i].value);
        fprintf(out, "%s = %s\n", dot ? dot + 1 : key, v);
        free(v);
    }
}

static int value_equal(const hp_toml_value *a, const hp_toml_value *b) {
    if (a->type != b->type) return 0;
    switch (a->type) {
    case HP_TOML_INT:    return a->i == b->i;
    case HP_TOML_FLOAT:  return !memcmp(&a->f, &b->f, sizeof a->f);
    case HP_TOML_BOOL:   return a->b == b->b;
    case HP_TOML_STRING: return !strcmp(a->s, b->s);
    case HP_TOML_ARRAY:
        if (a->n != b->n || (a->n && a->elem != b->elem)) return 0;
        for (int i = 0; i < a->n; i++)
            if (!value_equal(&a->items[i], &b->items[i])) return 0;
        return 1;
    }
    return 0;
}

int hp_toml_equal(const hp_toml *a, const hp_toml *b) {
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->entries[i].key, b->entries[i].key) || !value_equal(&a->entries[i].value, &b->entries[i].value))
            return 0;
    return 1;
}
