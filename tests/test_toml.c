// test_toml.c - the job file's TOML reader (src/util/toml.c): what it reads, the exact
// "FILE:LINE: why" of each refused construct, and that what it writes reads back the same.
#include <stdlib.h>
#include <string.h>
#include "test_check.h"
#include "util/toml.h"

static int parse(const char *text, hp_toml *t, char *err, size_t n) {
    return hp_toml_parse(text, strlen(text), "job.toml", t, err, n);
}

static const hp_toml_value *get(const hp_toml *t, const char *key, int *line) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->entries[i].key, key)) { if (line) *line = t->entries[i].line; return &t->entries[i].value; }
    return NULL;
}

static void test_good(void) {
    const char *text =
        "# header comment\n"
        "top = 1\n"
        "[job]\n"
        "dump_folder = \"./out\"  # trailing\n"
        "description = 'C:\\path'\n"
        "\n"
        "[ training ]\n"
        "steps = 1_000\n"
        "seq_len = +32\n"
        "neg = -7\n"
        "lr = 3e-4\n"
        "max_norm = 1.0\n"
        "big = -2.5E+3\n"
        "on = true\n"
        "off = false\n"
        "esc = \"a\\tb\\\"c\\\\d\\u00e9\"\n"
        "[parallelism.deep.er]\n"
        "names = [\n"
        "  \"x\",  # one\n"
        "  'y',\n"
        "]\n"
        "ints = [1, 2,3]\n"
        "empty = [ ]\n"
        "floats = [0.5, 1e3]\r\n";
    hp_toml t;
    char err[256] = "";
    CHECK(parse(text, &t, err, sizeof err) == 0, "good file refused: %s", err);
    CHECK(t.n == 16, "16 entries, got %d", t.n);
    int line = 0;
    const hp_toml_value *v = get(&t, "top", &line);
    CHECK(v && v->type == HP_TOML_INT && v->i == 1 && line == 2, "top = 1 at line 2");
    v = get(&t, "job.dump_folder", &line);
    CHECK(v && v->type == HP_TOML_STRING && !strcmp(v->s, "./out") && line == 4, "job.dump_folder");
    v = get(&t, "job.description", NULL);
    CHECK(v && v->type == HP_TOML_STRING && !strcmp(v->s, "C:\\path"), "literal string keeps its backslash");
    v = get(&t, "training.steps", NULL);
    CHECK(v && v->type == HP_TOML_INT && v->i == 1000 && !strcmp(v->text, "1000"), "1_000 = 1000");
    v = get(&t, "training.seq_len", NULL);
    CHECK(v && v->type == HP_TOML_INT && v->i == 32, "+32");
    v = get(&t, "training.neg", NULL);
    CHECK(v && v->i == -7, "-7");
    v = get(&t, "training.lr", NULL);
    CHECK(v && v->type == HP_TOML_FLOAT && v->f == 3e-4 && !strcmp(v->text, "3e-4"), "3e-4 is a float, text kept");
    v = get(&t, "training.max_norm", NULL);
    CHECK(v && v->type == HP_TOML_FLOAT && v->f == 1.0, "1.0");
    v = get(&t, "training.big", NULL);
    CHECK(v && v->type == HP_TOML_FLOAT && v->f == -2500.0, "-2.5E+3");
    v = get(&t, "training.on", NULL);
    CHECK(v && v->type == HP_TOML_BOOL && v->b == 1, "true");
    v = get(&t, "training.off", NULL);
    CHECK(v && v->type == HP_TOML_BOOL && v->b == 0, "false");
    v = get(&t, "training.esc", NULL);
    CHECK(v && v->type == HP_TOML_STRING && !strcmp(v->s, "a\tb\"c\\d\xc3\xa9"), "escapes decoded");
    v = get(&t, "parallelism.deep.er.names", &line);
    CHECK(v && v->type == HP_TOML_ARRAY && v->elem == HP_TOML_STRING && v->n == 2 && !strcmp(v->items[1].s, "y") &&
          line == 18, "multi-line array with a trailing comma");
    v = get(&t, "parallelism.deep.er.ints", &line);
    CHECK(v && v->n == 3 && v->items[2].i == 3 && line == 22, "int array, line 22 after the multi-line one");
    v = get(&t, "parallelism.deep.er.empty", NULL);
    CHECK(v && v->type == HP_TOML_ARRAY && v->n == 0, "empty array");

    // written back, it reads the same
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    hp_toml_write(f, &t);
    fclose(f);
    hp_toml back;
    CHECK(hp_toml_parse(out, len, "back", &back, err, sizeof err) == 0, "written back, refused: %s", err);
    CHECK(hp_toml_equal(&t, &back), "written back, another list:\n%s", out);
    hp_toml_free(&back);
    free(out);
    hp_toml_free(&t);
}

// Each bad input: the exact one-line error, naming the line.
static void test_bad(void) {
    static const struct { const char *text, *err; } cases[] = {
        { "[a]\nx = {y = 1}\n", "job.toml:2: inline tables { ... } are not supported (write a [section])" },
        { "[[a]]\n", "job.toml:1: arrays of tables [[...]] are not supported" },
        { "[a]\nb.c = 1\n", "job.toml:2: dotted keys are not supported (write a [section] header)" },
        { "\"q\" = 1\n", "job.toml:1: quoted keys are not supported (bare keys: A-Z a-z 0-9 _ -)" },
        { "d = 1979-05-27\n", "job.toml:1: dates and times are not supported" },
        { "t = 07:32:00\n", "job.toml:1: dates and times are not supported" },
        { "s = \"\"\"\nx\"\"\"\n", "job.toml:1: multi-line strings (\"\"\") are not supported" },
        { "s = '''x'''\n", "job.toml:1: multi-line strings (''') are not supported" },
        { "x = inf\n", "job.toml:1: inf and nan are not supported" },
        { "\n\nx = -nan\n", "job.toml:3: inf and nan are not supported" },
        { "[a]\nx = 1\nx = 2\n", "job.toml:3: duplicate key 'a.x' (first at line 2)" },
        { "[a]\n[b]\n[a]\n", "job.toml:3: duplicate table [a] (first at line 1)" },
        { "[a]\nb = 1\n[a.b]\n", "job.toml:3: 'a.b' is both a key (line 2) and a table" },
        { "x = 0x1F\n", "job.toml:1: only decimal integers are supported, got '0x1F'" },
        { "x = 012\n", "job.toml:1: leading zeros are not allowed, got '012'" },
        { "x = 1__0\n", "job.toml:1: '1__0' is not a value (a number, true, false, \"string\" or [array])" },
        { "x = 1.\n", "job.toml:1: '1.' is not a value (a number, true, false, \"string\" or [array])" },
        { "x = 99999999999999999999\n", "job.toml:1: integer '99999999999999999999' is out of range (64 bits)" },
        { "x = 1e999\n", "job.toml:1: float '1e999' is out of range" },
        { "x = [1, 2.0]\n", "job.toml:1: an array holds one type: a float after integers" },
        { "x = [[1]]\n", "job.toml:1: nested arrays are not supported" },
        { "x = [1,\n2\n", "job.toml:3: unterminated array (no ']')" },
        { "x = \"abc\n", "job.toml:1: unterminated string (strings end on their line)" },
        { "x = \"a\\qb\"\n", "job.toml:1: invalid escape '\\q' in a string" },
        { "x = \"\\u0000\"\n", "job.toml:1: escape U+0000 is not a character hp takes (NUL, a surrogate or past U+10FFFF)" },
        { "x = 1 2\n", "job.toml:1: unexpected '2' after the value (one key = value per line)" },
        { "x =\n", "job.toml:1: a value is missing after '='" },
        { "x 1\n", "job.toml:1: expected '=' after the key 'x'" },
        { "[a\n", "job.toml:1: unterminated table header (no ']')" },
        { "x = yes\n", "job.toml:1: 'yes' is not a value (a number, true, false, \"string\" or [array])" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hp_toml t;
        char err[256] = "";
        const int rc = parse(cases[i].text, &t, err, sizeof err);
        CHECK(rc == -1 && !strcmp(err, cases[i].err), "case %zu: rc %d, err '%s', want '%s'", i, rc, err, cases[i].err);
        CHECK(t.n == 0 && t.entries == NULL, "case %zu: a refused file leaves an empty list", i);
    }
    // a NUL byte, and a file that cannot be read
    hp_toml t;
    char err[256] = "";
    CHECK(hp_toml_parse("a = 1\nb\0", 8, "job.toml", &t, err, sizeof err) == -1 &&
          !strcmp(err, "job.toml:2: a NUL byte (not a text file)"), "NUL byte: '%s'", err);
    CHECK(hp_toml_load("/no/such/job.toml", &t, err, sizeof err) == -1 &&
          !strncmp(err, "/no/such/job.toml: cannot read", 30), "missing file: '%s'", err);
}

// Floats written back at round-trip precision, ints at their limits.
static void test_roundtrip(void) {
    const char *text = "f = [0.1, 1e-320, -0.0, 123456789.123456789, 5.0]\n"
                       "i = [-9223372036854775808, 9223372036854775807]\n"
                       "s = \"\\u0001 \\\" \\\\ \\n\"\n";
    hp_toml t, back;
    char err[256] = "";
    CHECK(parse(text, &t, err, sizeof err) == 0, "numbers refused: %s", err);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    hp_toml_write(f, &t);
    fclose(f);
    CHECK(hp_toml_parse(out, len, "back", &back, err, sizeof err) == 0 && hp_toml_equal(&t, &back),
          "numbers written back differ: %s\n%s", err, out);
    CHECK(strstr(out, "5.0") != NULL, "5.0 stays a float: %s", out);
    hp_toml_free(&back);
    hp_toml_free(&t);
    free(out);
}

int main(void) {
    test_good();
    test_bad();
    test_roundtrip();
    return test_summary("test_toml");
}
