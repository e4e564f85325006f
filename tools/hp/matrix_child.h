// matrix_child.h - the child processes of `hp matrix`: each recipe, negative case and failpoint
// runs as `hp ...` in a child in its own process group, so a time-out (or Ctrl-C of the matrix)
// ends the child, its mpirun and every rank; nothing is left running.
// defines: hp_matrix_interrupted, hp_now_s, hp_child_run, hp_child_split_args, hp_child_free_args,
//          hp_remove_tree, hp_file_line, hp_count_lines
//
//   char *argv[64] = { exe, "run" };
//   int n = hp_child_split_args("--tp 2 --load {DIR}/m.safetensors", "/tmp/bad", argv, 2, 64);
//   double secs;
//   int code = hp_child_run(argv, "run.log", "run.log", 60, &secs);   // -1: timed out, killed
//   hp_child_free_args(argv, 2, n);
#ifndef HP_TOOL_MATRIX_CHILD_H
#define HP_TOOL_MATRIX_CHILD_H
#include <signal.h>

// Set (to the signal) by the matrix's SIGINT/SIGTERM handler: a running child is then killed.
extern volatile sig_atomic_t hp_matrix_interrupted;
double hp_now_s(void);   // a monotonic clock, in seconds

// Runs argv[0] with stdout to out_path and stderr to err_path (the same file when equal), in
// its own process group; waits at most timeout_s. Returns the exit code, 128+signal when it was
// killed by a signal, or -1 when it timed out (or the matrix was interrupted) and was killed.
int  hp_child_run(char *const *argv, const char *out_path, const char *err_path, double timeout_s,
                  double *seconds);
// Splits s at spaces into argv[first..] (NULL-terminated); tokens are strdup'ed with every
// "{DIR}" replaced by dir (NULL: kept). Returns the new count.
int  hp_child_split_args(const char *s, const char *dir, char **argv, int first, int cap);
void hp_child_free_args(char **argv, int first, int n);   // frees argv[first..n-1]
// Removes a folder this command made (plain files and folders, a few levels deep).
int  hp_remove_tree(const char *path, int depth);
// The first line of a file that contains `needle` (NULL: any line), or the last such line when
// `last`; lines without a letter or digit do not count; "" when there is none.
void hp_file_line(const char *path, const char *needle, int last, char *out, int cap);
int  hp_count_lines(const char *path);   // lines of a file (a last one without '\n' counts)

#endif
