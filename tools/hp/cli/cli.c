// cli.c - the parser of the flags every `hp` subcommand shares: a command line into the job
// (hp_job, include/hyperpar/job.h). Their table (src/job/job_table.c) is also the job file's
// schema (docs/job_file.md): every TorchTitan job key is a row `--section.key`, and the flags that
// set one are its aliases; src/job/job_keys.c checks and sets each value. The help is cli_help.c.
// defines: tool_cli_parse, tool_cli_run_flag
//
// Flags are `--name value` or `--name=value`; names must match exactly (no prefixes; '-' and '_'
// alike), values must parse fully ("--tp 2x" is an error, not 2). Boolean keys: `--s.key`,
// `--s.no_key`, `--s.key=true|false`. A job file (--config) is applied first, then the command
// line; a key set twice on the command line is an error. Anything that does not start with '-'
// is a positional argument and lands in rest[]. A bad flag prints one line and returns
// HP_EXIT_CONFIG; the caller exits with it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "job/job_table.h"

static int push_rest(tool_cli *cli, char *s) {
    if (cli->n_rest >= (int)(sizeof cli->rest / sizeof cli->rest[0])) {
        fprintf(stderr, "hp: too many arguments (at most %d positional or subcommand flags)\n",
                (int)(sizeof cli->rest / sizeof cli->rest[0]));
        return HP_EXIT_CONFIG;
    }
    cli->rest[cli->n_rest++] = s;
    return 0;
}

static char *keep_joined(const char *name, const char *value) {
    size_t nn = strlen(name), nv = strlen(value);
    char *s = malloc(nn + nv + 2);
    if (s) {
        memcpy(s, name, nn);
        s[nn] = '=';
        memcpy(s + nn + 1, value, nv + 1);
    }
    return hp_job_keep_owned(s);
}

int tool_cli_run_flag(const char *arg, int *takes_value) {
    char name[256];
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    if (n >= sizeof name) return -1;
    memcpy(name, arg, n);
    name[n] = '\0';
    int negated;
    const int k = hp_job_flag_find(name, &negated);
    if (k < 0) return -1;
    *takes_value = hp_job_flags[k].takes_value && !eq && !negated;
    return (hp_job_flags[k].scope & FOR_RUN) != 0;
}

// One pass over the command line. Pass 0 only finds --config (and --help): the job file's keys
// are applied before the command line's. Pass 1 applies the rest.
static int parse_pass(tool_cli *cli, int pass, int argc, char **argv, int first, const char *const *extra,
                      const char *usage, const char *cmd, int scope) {
    int only_positional = 0;
    for (int i = first; i < argc; i++) {
        char *arg = argv[i];
        if (only_positional || arg[0] != '-' || !strcmp(arg, "-")) {
            int e = pass ? push_rest(cli, arg) : 0;
            if (e) return e;
            continue;
        }
        if (!strcmp(arg, "--")) { only_positional = 1; continue; }
        char name[256];
        const char *eq = strchr(arg, '=');   // "--name=value"
        const size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), arg);
        int negated = 0;
        const int row = hp_job_flag_find(name, &negated);
        const hp_job_flag_def *f = row >= 0 ? &hp_job_flags[row] : NULL;
        int is_extra = 0;
        for (int k = 0; !f && extra && extra[k]; k++)
            if (!strcmp(extra[k], name)) { is_extra = 1; break; }
        if (!f && !is_extra) {
            fprintf(stderr, "hp: unknown flag '%s' (see hp %s --help)\n", name, cmd);
            return HP_EXIT_CONFIG;
        }
        if (f && !(f->scope & scope)) {
            fprintf(stderr, "hp: %s is a flag of hp %s, not of hp %s (see hp %s --help)\n", name,
                    f->scope == FOR_PLAN ? "plan" : "run", cmd, cmd);
            return HP_EXIT_CONFIG;
        }
        const int is_key = f && hp_job_flag_is_key(f);
        const int takes_value = is_extra || (f->takes_value && !negated);
        const char *value = NULL;
        if (takes_value) {
            if (eq) value = eq + 1;
            else if (i + 1 < argc) value = argv[++i];
            else {
                fprintf(stderr, "hp: %s expects a value\n", name);
                return HP_EXIT_CONFIG;
            }
        } else if (eq && !(is_key && !negated)) {
            fprintf(stderr, "hp: %s takes no value, got '%s'\n", name, arg);
            return HP_EXIT_CONFIG;
        } else if (is_key) {   // a boolean key: --s.key, --s.key=true|false, --s.no_key
            value = negated ? "false" : eq ? eq + 1 : "true";
        } else if (f && f->fixed) {
            value = f->fixed;
        }
        if (pass == 0) {
            if (f && f->id == F_HELP) {
                if (usage) fputs(usage, stdout);
                tool_cli_print_common_help(stdout);
                return -1;
            }
            if (f && f->id == F_HELP_CONFIG) { hp_job_print_schema(stdout); return -1; }
            if (f && f->id == F_CONFIG) {
                if (cli->config_file) {
                    fprintf(stderr, "hp: job.config_file given twice on the command line (%s)\n", name);
                    return HP_EXIT_CONFIG;
                }
                cli->config_file = value;
            }
            continue;
        }
        if (is_extra) {
            int e = push_rest(cli, keep_joined(name, value));
            if (e) return e;
            continue;
        }
        if (f->id == F_CONFIG) continue;
        const int key_row = is_key ? hp_job_flag_canonical(row) : hp_job_flag_key_row(f->id);
        if (key_row < 0) {   // a plain flag
            int e = hp_job_apply_value(cli, f->id, name, value);
            if (e) return e;
            continue;
        }
        if (hp_job_flags[key_row].id != F_TT_ONLY && hp_job_flags[key_row].id != F_IGNORED) {
            if (cli->key_cmdline[key_row]) {
                fprintf(stderr, "hp: %s given twice on the command line (%s, then %s)\n", hp_job_flags[key_row].name + 2,
                        cli->key_label[key_row], name);
                return HP_EXIT_CONFIG;
            }
            cli->key_cmdline[key_row] = 1;
        }
        const char *label = strchr(f->name, '*') ? hp_job_keep(name) : f->name;   // "x.*": the name given
        int e = hp_job_apply_key(cli, key_row, label, value, 0);
        if (e) return e;
        hp_model_config probe;
        if (!strcmp(f->name, "--model") && hp_model_config_by_name(value, &probe) == 0) {
            cli->model_name = "hp";   // --model NAME: an hp model (model.name "hp")
        } else if (!strcmp(f->name, "--checkpoint-dir")) {   // --checkpoint-dir D: checkpoint.enable, folder D
            cli->ckpt_enable = 1;
            cli->key_text[hp_job_flag_key_row(F_CKPT_ENABLE)] = "true";
        } else if (!strcmp(f->name, "--resume")) {    // --resume D: the full state of D
            cli->init_model_only = 0;
            cli->key_text[hp_job_flag_key_row(F_INIT_MODEL_ONLY)] = "false";
        } else if (!strcmp(f->name, "--checkpoint-every") || !strcmp(f->name, "--checkpoint-keep")) {
            cli->ckpt_alias_given = 1;
        }
    }
    return 0;
}

int tool_cli_parse(tool_cli *cli, int argc, char **argv, int first, const char *const *extra,
                 const char *usage) {
    hp_job_defaults(cli);
    const char *cmd = (first >= 1 && first - 1 < argc && argv[first - 1][0] != '-') ? argv[first - 1] : "<cmd>";
    const int scope = !strcmp(cmd, "plan") ? FOR_PLAN : !strcmp(cmd, "run") ? FOR_RUN
                    : !strcmp(cmd, "bench") ? FOR_BENCH : FOR_ALL;
    // precedence: command line > job file > defaults (TorchTitan's config manager)
    int e = parse_pass(cli, 0, argc, argv, first, extra, usage, cmd, scope);
    if (e) return e;
    if (cli->config_file && (e = hp_job_apply_file(cli, cli->config_file))) return e;
    if ((e = parse_pass(cli, 1, argc, argv, first, extra, usage, cmd, scope))) return e;
    return hp_job_resolve(cli);
}
