// toml.h - the subset of TOML that a job file needs (docs/job_file.md), read into a flat list.
// defines: hp_toml, hp_toml_entry, hp_toml_value, hp_toml_parse, hp_toml_load, hp_toml_write,
//          hp_toml_equal, hp_toml_free
//
// Debian 12 has no C TOML library, so this is our own; it depends on libc only (fuzzed alone,
// tests/fuzz/fuzz_toml.c). Read: `[a]` and dotted `[a.b.c]` headers, bare keys, `#` comments,
// decimal integers (sign, `_` between digits), floats (`1.0`, `3e-4`, `-2.5E+3`), true / false,
// "basic" strings with escapes and 'literal' strings, flat arrays of one type (over several
// lines, a trailing comma allowed). Refused, with "FILE:LINE: why": inline tables, arrays of
// tables `[[a]]`, dotted or quoted keys, dates and times, multi-line strings, inf and nan,
// hexadecimal / octal / binary integers, nested arrays, a key or a table defined twice.
//
//   hp_toml t;
//   char err[256];
//   if (hp_toml_load("job.toml", &t, err, sizeof err) != 0) fprintf(stderr, "hp: %s\n", err);
//   for (int i = 0; i < t.n; i++) printf("%s (line %d)\n", t.entries[i].key, t.entries[i].line);
//   hp_toml_free(&t);
#ifndef HP_UTIL_TOML_H
#define HP_UTIL_TOML_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { HP_TOML_INT, HP_TOML_FLOAT, HP_TOML_BOOL, HP_TOML_STRING, HP_TOML_ARRAY } hp_toml_type;

typedef struct hp_toml_value {
    hp_toml_type type;
    int64_t i;                    // INT
    double  f;                    // FLOAT
    int     b;                    // BOOL: 0 / 1
    char   *s;                    // STRING: the decoded text (no NUL inside: \u0000 is refused)
    char   *text;                 // INT, FLOAT: the literal as written, less its '_' (exact for
                                  //   a float parsed again at another precision)
    hp_toml_type elem;            // ARRAY: the type of every item (INT when empty)
    int     n;                    // ARRAY: item count
    struct hp_toml_value *items;  // ARRAY: n scalars
} hp_toml_value;

typedef struct hp_toml_entry {
    char         *key;            // "section.sub.key" (the table's name, '.', the key); "key" at top
    hp_toml_value value;
    int           line;           // 1-based line of the key
} hp_toml_entry;

typedef struct hp_toml {
    hp_toml_entry *entries;       // in file order
    int n, cap;
} hp_toml;

// Parses text[0..len) (no NUL needed; a NUL byte inside is refused). file names the input in
// the error line "FILE:LINE: why". Returns 0, or -1 with that line in err and *out empty.
int  hp_toml_parse(const char *text, size_t len, const char *file, hp_toml *out, char *err, size_t errlen);
// The same for a file; a file that cannot be read is "FILE: why".
int  hp_toml_load(const char *path, hp_toml *out, char *err, size_t errlen);
void hp_toml_free(hp_toml *t);

// Writes the list back as TOML that parses to the same list: a header for each run of entries
// of one table, strings escaped, floats at round-trip precision (%.17g, always with '.' or 'e').
void hp_toml_write(FILE *out, const hp_toml *t);
// One value as TOML text into buf (a string quoted and escaped); returns the length it needs.
size_t hp_toml_format_value(char *buf, size_t cap, const hp_toml_value *v);
// A string as a TOML basic string ("...", escaped) into buf; returns the length it needs.
size_t hp_toml_quote(char *buf, size_t cap, const char *s);
// 1 when two lists hold the same keys, types and values in the same order (floats bit for bit;
// lines are not compared).
int  hp_toml_equal(const hp_toml *a, const hp_toml *b);
const char *hp_toml_type_name(hp_toml_type t);   // "integer", "float", "boolean", "string", "array"

#endif
