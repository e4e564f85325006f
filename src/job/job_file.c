// job_file.c - the job file (docs/job_file.md): a TOML file's keys applied through the flag
// table's own path (job_keys.c), the effective config written back as a job file, the schema
// printed, and the notes of a read.
// defines: hp_job_load, hp_job_apply_file, hp_job_write_config, hp_job_save_config,
//          hp_job_print_schema, hp_job_print_notes, hp_job_config_pin, hp_job_config_changed
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "job_table.h"
#include "util/toml.h"

static void absolute(char *out, size_t cap, const char *p);

// 1 when a key row of the table lies in section sec ("training"), wildcard rows included.
static int section_known(const char *sec, size_t n) {
    for (int k = 0; k < hp_job_n_flags; k++) {
        const char *name = hp_job_flags[k].name + 2;
        if (hp_job_flag_is_key(&hp_job_flags[k]) && !strncmp(name, sec, n) && name[n] == '.') return 1;
    }
    return 0;
}

static int type_ok(hp_job_value_type want, const hp_toml_value *v) {
    switch (want) {
    case V_INT:    return v->type == HP_TOML_INT;
    case V_FLOAT:  return v->type == HP_TOML_INT || v->type == HP_TOML_FLOAT;   // not the reverse
    case V_STRING:
    case V_PATH:   return v->type == HP_TOML_STRING;
    case V_BOOL:   return v->type == HP_TOML_BOOL;
    case V_LIST:   return v->type == HP_TOML_ARRAY;
    case V_ANY:    return v->type != HP_TOML_ARRAY;
    }
    return 0;
}

static const char *type_words(hp_job_value_type t) {
    switch (t) {
    case V_INT:    return "an integer";
    case V_FLOAT:  return "a number";
    case V_STRING: return "a string";
    case V_PATH:   return "a string (a path)";
    case V_BOOL:   return "true or false";
    case V_LIST:   return "an array";
    case V_ANY:    return "a number, a string or true/false";
    }
    return "?";
}

static const char *scalar_text(const hp_toml_value *v) {
    switch (v->type) {
    case HP_TOML_INT:
    case HP_TOML_FLOAT:  return v->text;
    case HP_TOML_BOOL:   return v->b ? "true" : "false";
    case HP_TOML_STRING: return v->s;
    case HP_TOML_ARRAY:  return "";
    }
    return "";
}

// The value as the command line would spell it: lists as a,b.
static char *value_text(const hp_toml_value *v) {
    if (v->type != HP_TOML_ARRAY) return hp_job_keep(scalar_text(v));
    size_t n = 1;
    for (int i = 0; i < v->n; i++) n += strlen(scalar_text(&v->items[i])) + 1;
    char *s = malloc(n);
    if (!s) { fprintf(stderr, "hp: out of memory\n"); exit(HP_EXIT_FAIL); }
    s[0] = '\0';
    for (int i = 0; i < v->n; i++) {
        if (i) strcat(s, ",");
        strcat(s, scalar_text(&v->items[i]));
    }
    char *kept = hp_job_keep(s);
    free(s);
    return kept;
}

int hp_job_apply_file(hp_job *job, const char *path) {
    hp_toml t;
    char err[1024];
    if (hp_toml_load(path, &t, err, sizeof err) != 0) {
        fprintf(stderr, "hp: %s\n", err);
        return HP_EXIT_CONFIG;
    }
    int e = 0;
    for (int i = 0; i < t.n && !e; i++) {
        const hp_toml_entry *en = &t.entries[i];
        char name[300], where[4200];
        snprintf(name, sizeof name, "--%s", en->key);
        snprintf(where, sizeof where, "%s:%d", path, en->line);
        int negated = 0;
        const int row = hp_job_flag_find(name, &negated);
        const char *dot = strrchr(en->key, '.');
        if (row < 0 || negated || !hp_job_flag_is_key(&hp_job_flags[row])) {
            if (!dot) fprintf(stderr, "hp: %s: key '%s' outside any [section] (see hp run --help-config)\n", where, en->key);
            else if (!section_known(en->key, (size_t)(dot - en->key)))
                fprintf(stderr, "hp: %s: unknown section [%.*s] (key %s; see hp run --help-config)\n", where,
                        (int)(dot - en->key), en->key, en->key);
            else fprintf(stderr, "hp: %s: unknown key '%s' (see hp run --help-config)\n", where, en->key);
            e = HP_EXIT_CONFIG;
            break;
        }
        const hp_job_flag_def *f = &hp_job_flags[row];
        if (f->id == F_CONFIG) {
            fprintf(stderr, "hp: %s: job.config_file: a job file cannot name another (give --config on the "
                    "command line)\n", where);
            e = HP_EXIT_CONFIG;
            break;
        }
        if (!type_ok(f->type, &en->value)) {
            fprintf(stderr, "hp: %s: %s expects %s, got %s %s\n", where, en->key, type_words(f->type),
                    strchr("aeiou", hp_toml_type_name(en->value.type)[0]) ? "an" : "a",
                    hp_toml_type_name(en->value.type));
            e = HP_EXIT_CONFIG;
            break;
        }
        const int canon = hp_job_flag_canonical(row);
        if (f->id != F_TT_ONLY && f->id != F_IGNORED && job->key_text[canon]) {
            // a key and its older name (the TOML reader catches the same name twice)
            fprintf(stderr, "hp: %s: %s is %s, given already (%s)\n", where, en->key, hp_job_flags[canon].name + 2,
                    job->key_label[canon]);
            e = HP_EXIT_CONFIG;
            break;
        }
        char label[4600];
        snprintf(label, sizeof label, "%s: %s", where, en->key);
        e = hp_job_apply_key(job, row, hp_job_keep(label), value_text(&en->value), 1);
    }
    hp_toml_free(&t);
    return e;
}

int hp_job_load(hp_job *job, const char *path) {
    hp_job_defaults(job);
    job->config_file = hp_job_keep(path);
    const int e = hp_job_apply_file(job, job->config_file);
    return e ? e : hp_job_resolve(job);
}

// ---------------------------------------------------------------------------------------------
// the ranks a run launches read the job file again: the same file, checked by its hash

// FNV-1a 64 of the file's bytes as 16 hex digits into hex[17]; 0, or -1 when it cannot be read.
static int file_hash(const char *path, char hex[17]) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    uint64_t h = 1469598103934665603ULL;
    unsigned char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) h = (h ^ buf[i]) * 1099511628211ULL;
    fclose(f);
    snprintf(hex, 17, "%016llx", (unsigned long long)h);
    return 0;
}

void hp_job_config_pin(const hp_job *job, int argc, char **argv) {
    if (!job->config_file) return;
    char hex[17], abs_path[4200];
    if (file_hash(job->config_file, hex) == 0) setenv("HP_CONFIG_HASH", hex, 1);
    absolute(abs_path, sizeof abs_path, job->config_file);
    for (int i = 1; i < argc; i++) {   // the word that holds the path: FILE, or --config=FILE
        const char *eq = strchr(argv[i], '=');
        if (argv[i] == job->config_file) argv[i] = hp_job_keep(abs_path);
        else if (eq && eq + 1 == job->config_file) {
            char word[4400];
            snprintf(word, sizeof word, "%.*s=%s", (int)(eq - argv[i]), argv[i], abs_path);
            argv[i] = hp_job_keep(word);
        }
    }
}

int hp_job_config_changed(const hp_job *job) {
    const char *want = getenv("HP_CONFIG_HASH");
    char hex[17];
    if (!job->config_file || !want || !*want) return 0;
    return file_hash(job->config_file, hex) != 0 || strcmp(hex, want) != 0;
}

// ---------------------------------------------------------------------------------------------
// the effective config

// An absolute path for p (relative to the working folder; not resolved: it may not exist yet).
static void absolute(char *out, size_t cap, const char *p) {
    char cwd[4096];
    if (p[0] == '/' || !getcwd(cwd, sizeof cwd)) { snprintf(out, cap, "%s", p); return; }
    while (p[0] == '.' && p[1] == '/') p += 2;
    if (snprintf(out, cap, "%s%s%s", cwd, *p && strcmp(p, ".") ? "/" : "", strcmp(p, ".") ? p : "") >= (int)cap)
        snprintf(out, cap, "%s", p);   // too long to make absolute: as given
}

// 1 when text is a TOML number, boolean or string as written (so it can go out verbatim).
static int toml_scalar(const char *text, hp_toml_type *type) {
    char line[512];
    if (snprintf(line, sizeof line, "x = %s\n", text) >= (int)sizeof line) return 0;
    hp_toml t;
    char err[256];
    if (hp_toml_parse(line, strlen(line), "", &t, err, sizeof err) != 0) return 0;
    const int ok = t.n == 1 && t.entries[0].value.type != HP_TOML_ARRAY;
    if (ok) *type = t.entries[0].value.type;
    hp_toml_free(&t);
    return ok;
}

// The value key row k has in this run, as text (NULL: none to write).
static const char *effective(const hp_job *job, int k, char *buf, size_t cap) {
    const hp_job_flag_def *f = &hp_job_flags[k];
    switch (f->id) {
    case F_SP:
        return (job->dims.sp < 0 ? job->dims.tp > 1 : job->dims.sp) ? "true" : "false";
    case F_AC:             return job->ac_mode;
    case F_AC_OPTION:      return job->ac_option;
    case F_CKPT_ENABLE:    return job->ckpt_enable ? "true" : "false";
    case F_INIT_MODEL_ONLY: return job->init_model_only ? "true" : "false";
    case F_MODEL:          return job->hf_config ? "" : job->flavor;   // hf_config and flavor: one
    case F_MODEL_NAME:     return job->model_name;
    // the formats as read: --data's auto_bytes, the validation set's "" (the training data's)
    case F_DATA_FORMAT:    return hp_data_format_name(job->run.data_format);
    case F_VAL_FORMAT:     return job->val_format == HP_JOB_VAL_FORMAT_UNSET ? "" : hp_data_format_name(job->val_format);
    // the batch resolved: TorchTitan's local batch and pp microbatch size are in these
    case F_LOCAL_BATCH:
    case F_PP_MB_SIZE:     return "-1";
    case F_BATCH:          snprintf(buf, cap, "%d", job->run.batch); return buf;
    case F_MICROBATCHES:
    case F_PP_MICROBATCHES:
        snprintf(buf, cap, "%d", (job->dims.pp > 1) == (f->id == F_PP_MICROBATCHES) ? job->run.microbatches : 1);
        return buf;
    case F_CKPT_FOLDER:    // where the checkpoints go, whatever the dump folder of a rerun
        if (job->ckpt_dir) return job->ckpt_dir;
        if (!job->dump_folder || job->ckpt_folder[0] == '/') return job->ckpt_folder;
        snprintf(buf, cap, "%s/%s", job->dump_folder, job->ckpt_folder);
        return buf;
    default:
        return job->key_text[k] ? job->key_text[k] : f->hp_def;
    }
}

static void write_value(FILE *out, hp_job_value_type type, const char *v) {
    char buf[8400];
    hp_toml_type t;
    switch (type) {
    case V_PATH:
        if (*v) absolute(buf, 4200, v);
        else buf[0] = '\0';
        hp_toml_quote(buf + 4200, sizeof buf - 4200, buf);
        fputs(buf + 4200, out);
        return;
    case V_STRING:
        hp_toml_quote(buf, sizeof buf, v);
        fputs(buf, out);
        return;
    case V_BOOL:
        fputs(v, out);
        return;
    case V_INT:
    case V_FLOAT:   // verbatim when TOML reads it so (exact); else the number it is, at round trip
        if (toml_scalar(v, &t) && (t == HP_TOML_INT || t == HP_TOML_FLOAT)) fputs(v, out);
        else if (type == V_INT) fprintf(out, "%lld", strtoll(v, NULL, 10));
        else {
            snprintf(buf, sizeof buf, "%.17g", strtod(v, NULL));
            fprintf(out, "%s%s", buf, strpbrk(buf, ".e") ? "" : ".0");
        }
        return;
    case V_LIST:
        fputc('[', out);
        for (const char *p = v; *p;) {
            const char *c = strchr(p, ',');
            const size_t n = c ? (size_t)(c - p) : strlen(p);
            snprintf(buf, 4200, "%.*s", (int)n, p);
            hp_toml_quote(buf + 4200, sizeof buf - 4200, buf);
            fprintf(out, "%s%s", p == v ? "" : ", ", buf + 4200);
            p += n + (c != NULL);
        }
        fputc(']', out);
        return;
    case V_ANY:
        if (toml_scalar(v, &t) && t != HP_TOML_STRING) fputs(v, out);
        else { hp_toml_quote(buf, sizeof buf, v); fputs(buf, out); }
        return;
    }
}

static int written_key(const hp_job_flag_def *f) {
    return hp_job_flag_is_key(f) && f->id != F_CONFIG && f->id != F_TT_ONLY && f->id != F_IGNORED &&
           !strchr(f->name, '*');
}

void hp_job_write_config(const hp_job *job, FILE *out, int argc, char **argv) {
    fprintf(out, "# the effective job file of this run, written by hp %s (docs/job_file.md):\n"
                 "# every key, defaults too; `hp run --config` on it trains the same losses bit for bit\n"
                 "# (same build, machine and world).\n#", HP_VERSION);
    for (int i = 0; i < argc; i++) {
        const char *a = i == 0 ? "hp" : argv[i];
        const int plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == strlen(a);
        if (plain) fprintf(out, " %s", a);
        else {
            fputs(" '", out);
            for (; *a; a++) {
                if (*a == '\'') fputs("'\\''", out);
                else if (*a == '\n') fputs("\\n", out);
                else fputc(*a, out);
            }
            fputc('\'', out);
        }
    }
    fputc('\n', out);
    // sections in the order they first appear (rows of other features may come later in the table)
    for (int s = 0; s < hp_job_n_flags; s++) {
        const hp_job_flag_def *fs = &hp_job_flags[s];
        if (!written_key(fs)) continue;
        const size_t sl = (size_t)(strrchr(fs->name, '.') - fs->name);
        int seen = 0;
        for (int p = 0; p < s && !seen; p++)
            seen = written_key(&hp_job_flags[p]) && (size_t)(strrchr(hp_job_flags[p].name, '.') - hp_job_flags[p].name) == sl &&
                   !strncmp(hp_job_flags[p].name, fs->name, sl);
        if (seen) continue;
        fprintf(out, "\n[%.*s]\n", (int)(sl - 2), fs->name + 2);
        for (int k = s; k < hp_job_n_flags; k++) {
            const hp_job_flag_def *f = &hp_job_flags[k];
            if (!written_key(f) || (size_t)(strrchr(f->name, '.') - f->name) != sl || strncmp(f->name, fs->name, sl))
                continue;
            if (hp_job_flag_key_row(f->id) != k) continue;   // a second name of a key
            char buf[4200];
            const char *v = effective(job, k, buf, sizeof buf);
            if (!v) { fprintf(out, "# %s: hp's default\n", f->name + sl + 1); continue; }
            fprintf(out, "%s = ", f->name + sl + 1);
            write_value(out, f->type, v);
            fputc('\n', out);
        }
    }
}

int hp_job_save_config(const hp_job *job, int argc, char **argv) {
    if (!job->dump_folder) return 0;
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/config.toml", job->dump_folder);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f) {
        hp_job_write_config(job, f, argc, argv);
        if (fclose(f) == 0 && rename(tmp, path) == 0) return 0;
    }
    fprintf(stderr, "hp: job.dump_folder: cannot write '%s': %s\n", path, strerror(errno));
    unlink(tmp);
    return HP_EXIT_FAIL;
}

// ---------------------------------------------------------------------------------------------
// the schema and the notes

void hp_job_print_schema(FILE *out) {
    fputs("hp's job file: TorchTitan's TOML job schema (docs/job_file.md). Every key\n"
          "is also a flag --section.key VALUE (booleans: --s.key, --s.no_key, --s.key=false). Precedence:\n"
          "command line > --config FILE > defaults. TT = TorchTitan's default (-1 = unset; \"\" for a list: []).\n\n"
          "| key | type | hp default | TT default | flags |\n|---|---|---|---|---|\n", out);
    static const char *const types[] = { "any", "int", "float", "string", "path", "bool", "list" };
    for (int k = 0; k < hp_job_n_flags; k++) {
        const hp_job_flag_def *f = &hp_job_flags[k];
        if (!hp_job_flag_is_key(f) || f->id == F_TT_ONLY || f->id == F_IGNORED) continue;
        if (hp_job_flag_canonical(k) != k) continue;   // an older name: in its key's flags column
        const char *empty = f->type == V_LIST ? "[]" : "\"\"";
        fprintf(out, "| %s | %s | %s | %s | ", f->name + 2, types[f->type],
                !f->hp_def ? "" : *f->hp_def ? f->hp_def : empty, !f->tt_def ? "(hp)" : *f->tt_def ? f->tt_def : empty);
        int n = 0;
        for (int a = 0; a < hp_job_n_flags; a++)
            if (hp_job_flags[a].id == f->id && a != k)
                fprintf(out, "%s%s", n++ ? " " : "", hp_job_flags[a].name);
        fputs(" |\n", out);
    }
    for (int pass = 0; pass < 2; pass++) {
        fputs(pass ? "\nTorchTitan keys with no meaning here, accepted at any value with a note:\n"
                   : "\nTorchTitan keys hp does not implement: at TT's default (off) a note, else refused:\n", out);
        int col = 0;
        for (int k = 0; k < hp_job_n_flags; k++) {
            if (hp_job_flags[k].id != (pass ? F_IGNORED : F_TT_ONLY)) continue;
            const char *name = hp_job_flags[k].name + 2;
            if (col + (int)strlen(name) > 96) { fputc('\n', out); col = 0; }
            col += fprintf(out, "%s%s", col ? " " : "  ", name);
        }
        fputc('\n', out);
    }
}

void hp_job_print_notes(const hp_job *job, FILE *out) {
    if (job->note_tt[0])
        fprintf(out, "hp: note: TorchTitan keys hp does not implement, at their defaults (off): %s\n", job->note_tt);
    if (job->note_ignored[0])
        fprintf(out, "hp: note: TorchTitan keys with no meaning in hp, accepted and ignored: %s\n", job->note_ignored);
    if (job->note_resume[0]) fprintf(out, "hp: note: %s\n", job->note_resume);
    if (job->note_defaults[0])
        fprintf(out, "hp: note: %s leaves keys at hp defaults that differ from TorchTitan's (hp run "
                "--help-config): %s\n", job->config_file, job->note_defaults);
}
