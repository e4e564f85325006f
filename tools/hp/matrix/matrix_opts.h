// matrix_opts.h - the command line of `hp matrix`: which recipes, negative cases and failpoints
// to run, how often, where the report goes, or which generated file to print.
// defines: tool_matrix_opts, tool_matrix_parse_opts, tool_matrix_selected
//
//   tool_matrix_opts o;
//   int e = tool_matrix_parse_opts(argc, argv, &o);   // -1: --help printed; else 0 or exit 2
//   if (tool_matrix_selected(&o, "M4-s2", HP_LEVEL_L0)) ...
#ifndef HP_TOOL_MATRIX_OPTS_H
#define HP_TOOL_MATRIX_OPTS_H
#include "hyperpar/recipes.h"

typedef struct tool_matrix_opts {
    int  levels[HP_LEVEL_COUNT];
    char selection[128];
    const char *only;        // comma list or NULL
    const char *report_dir;
    int  repeat;
    int  jobs;                   // --jobs: recipes, cases and faults run at once (default 1)
    double timeout_s;
    int  no_negative, list;      // list: 1 --list, 2 --markdown, 3 --examples-markdown, 4 --features-markdown
    const char *ctest_file;      // --ctest FILE
    int  faults, faults_only;    // --faults / --faults-only
    int  no_faults;              // --no-faults: not even with the whole matrix
    const char *bad_files_dir;
} tool_matrix_opts;

// Parses argv[2..] (after "hp matrix"). Returns 0, -1 after printing --help, or HP_EXIT_CONFIG
// after one line naming the bad flag (an unknown --only id included).
int tool_matrix_parse_opts(int argc, char **argv, tool_matrix_opts *o);
// 1 when the recipe or negative case `id` (of `level`) is selected: in --only, else by --level.
int tool_matrix_selected(const tool_matrix_opts *o, const char *id, int level);

#endif
