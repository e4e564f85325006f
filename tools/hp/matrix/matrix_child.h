// matrix_child.h - the child processes of `hp matrix`: each recipe, negative case and failpoint
// runs as `hp ...` in a child in its own process group, so a time-out (or Ctrl-C of the matrix)
// ends the child, its mpirun and every rank; nothing is left running.
// defines: tool_matrix_interrupted, tool_now_s, tool_child_run, tool_child_split_args, tool_child_free_args,
//          tool_remove_tree, tool_file_line, tool_count_lines, tool_pool_run
//
//   char *argv[64] = { exe, "run" };
//   int n = tool_child_split_args("--tp 2 --load {DIR}/m.safetensors", "/tmp/bad", argv, 2, 64);
//   double secs;
//   int code = tool_child_run(argv, "run.log", "run.log", 60, &secs);   // -1: timed out, killed
//   tool_child_free_args(argv, 2, n);
#ifndef HP_TOOL_MATRIX_CHILD_H
#define HP_TOOL_MATRIX_CHILD_H
#include <signal.h>

// Set (to the signal) by the matrix's SIGINT/SIGTERM handler: a running child is then killed.
extern volatile sig_atomic_t tool_matrix_interrupted;
double tool_now_s(void);   // a monotonic clock, in seconds

// Runs argv[0] with stdout to out_path and stderr to err_path (the same file when equal), in
// its own process group; waits at most timeout_s. Returns the exit code, 128+signal when it was
// killed by a signal, or -1 when it timed out (or the matrix was interrupted) and was killed.
int  tool_child_run(char *const *argv, const char *out_path, const char *err_path, double timeout_s,
                  double *seconds);
// Splits s at spaces into argv[first..] (NULL-terminated); tokens are strdup'ed with every
// "{DIR}" replaced by dir (NULL: kept). Returns the new count.
int  tool_child_split_args(const char *s, const char *dir, char **argv, int first, int cap);
void tool_child_free_args(char **argv, int first, int n);   // frees argv[first..n-1]
// Removes a folder this command made (plain files and folders, a few levels deep).
int  tool_remove_tree(const char *path, int depth);
// The first line of a file that contains `needle` (NULL: any line), or the last such line when
// `last`; lines without a letter or digit do not count; "" when there is none.
void tool_file_line(const char *path, const char *needle, int last, char *out, int cap);
int  tool_count_lines(const char *path);   // lines of a file (a last one without '\n' counts)

// `hp matrix --jobs N`: runs item(i, results + i * size, ctx) for every i in [0, n), in up to
// `jobs` forked workers at once; each worker sends its result (plain data: no pointer into its
// own heap) back through a pipe. jobs 1 runs the items in this process, one after another.
// In this process, before(i, ctx) runs as item i starts (may be NULL) and after(i, complete,
// ctx) as it ends, in the order they end; complete is 0 when a worker died before its whole
// result arrived. Once tool_matrix_interrupted, no item starts and the running workers get the
// signal (each ends its child). Returns how many items ran.
typedef void tool_pool_item(int i, void *result, void *ctx);
typedef void tool_pool_note(int i, int complete, void *ctx);
int  tool_pool_run(int n, int jobs, size_t size, void *results, tool_pool_item *item,
                   tool_pool_note *before, tool_pool_note *after, void *ctx);

#endif
