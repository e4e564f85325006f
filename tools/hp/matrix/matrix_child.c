// matrix_child.c - the child processes of `hp matrix` (matrix_child.h): one run under a time
// limit in its own process group, its argument lists, what its logs say.
// defines: tool_matrix_interrupted, tool_now_s, tool_child_run, tool_child_split_args, tool_child_free_args,
//          tool_remove_tree, tool_file_line, tool_count_lines, tool_pool_run
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "matrix_child.h"

volatile sig_atomic_t tool_matrix_interrupted = 0;

double tool_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int tool_remove_tree(const char *path, int depth) {
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    if (S_ISDIR(st.st_mode) && depth < 4) {
        DIR *d = opendir(path);
        if (!d) return -1;
        struct dirent *ent;
        while ((ent = readdir(d))) {
            if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
            char sub[1400];
            snprintf(sub, sizeof sub, "%s/%s", path, ent->d_name);
            tool_remove_tree(sub, depth + 1);
        }
        closedir(d);
        return rmdir(path);
    }
    return unlink(path);
}


int tool_child_run(char *const *argv, const char *out_path, const char *err_path, double timeout_s,
                     double *seconds) {
    const double t0 = tool_now_s();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "hp matrix: cannot fork: %s\n", strerror(errno));
        *seconds = 0;
        return 127;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = strcmp(out_path, err_path) ? open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : fo;
        if (fo < 0 || fe < 0) _exit(127);
        dup2(fo, 1);
        dup2(fe, 2);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        execv(argv[0], argv);
        fprintf(stderr, "hp matrix: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);   // also here: no race with the child's own call
    int status = 0, timed_out = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) { status = 127 << 8; break; }
        if (tool_matrix_interrupted || tool_now_s() - t0 > timeout_s) {
            // the whole group: hp, its mpirun and the ranks
            timed_out = 1;
            kill(-pid, SIGTERM);
            double t1 = tool_now_s();
            while (waitpid(pid, &status, WNOHANG) == 0 && tool_now_s() - t1 < 5) {
                struct timespec ts = { 0, 20 * 1000 * 1000 };
                nanosleep(&ts, NULL);
            }
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    // ranks that outlived their hp (they should not): end them with the group
    kill(-pid, SIGKILL);
    *seconds = tool_now_s() - t0;
    if (timed_out) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 127;
}

int tool_child_split_args(const char *s, const char *dir, char **argv, int first, int cap) {
    int n = first;
    while (*s && n < cap - 1) {
        while (*s == ' ') s++;
        if (!*s) break;
        const char *e = strchr(s, ' ');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char tok[1024];
        size_t k = 0;
        for (size_t i = 0; i < len && k < sizeof tok - 1;) {
            if (dir && len - i >= 5 && !strncmp(s + i, "{DIR}", 5)) {
                for (const char *d = dir; *d && k < sizeof tok - 1; d++) tok[k++] = *d;
                i += 5;
            } else {
                tok[k++] = s[i++];
            }
        }
        tok[k] = '\0';
        argv[n++] = strdup(tok);
        s += len;
    }
    argv[n] = NULL;
    return n;
}

void tool_child_free_args(char **argv, int first, int n) {
    for (int i = first; i < n; i++) free(argv[i]);
}

void tool_file_line(const char *path, const char *needle, int last, char *out, int cap) {
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        int alnum = 0;
        for (size_t i = 0; i < n && !alnum; i++) alnum = isalnum((unsigned char)line[i]);
        if (!alnum) continue;   // empty lines and mpirun's "-----" rulers say nothing
        if (needle && !strstr(line, needle)) continue;
        snprintf(out, (size_t)cap, "%s", line);
        if (!last) break;
    }
    fclose(f);
}

int tool_count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, c, prev = '\n';
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n') n++;
        prev = c;
    }
    if (prev != '\n') n++;
    fclose(f);
    return n;
}

typedef struct {
    pid_t pid;
    int fd, i;
    size_t got;
} pool_worker;

static int pool_start(pool_worker *w, int i, size_t size, char *result, tool_pool_item *item, void *ctx) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    // neither end reaches what an item runs (mpirun, hp): a grandchild left holding the write
    // end, or the read ends of the other workers, would outlive the worker
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        item(i, result, ctx);
        for (size_t off = 0; off < size;) {
            ssize_t k = write(fds[1], result + off, size - off);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) _exit(1);
            off += (size_t)k;
        }
        _exit(0);   // not exit: the parent's atexit handlers and stdio are the parent's
    }
    close(fds[1]);
    w->pid = pid;
    w->fd = fds[0];
    w->i = i;
    w->got = 0;
    return 0;
}

int tool_pool_run(int n, int jobs, size_t size, void *results, tool_pool_item *item,
                  tool_pool_note *before, tool_pool_note *after, void *ctx) {
    char *res = results;
    int started = 0;
    if (jobs <= 1) {
        for (; started < n && !tool_matrix_interrupted; started++) {
            if (before) before(started, 1, ctx);
            item(started, res + (size_t)started * size, ctx);
            after(started, 1, ctx);
        }
        return started;
    }
    pool_worker *w = calloc((size_t)jobs, sizeof *w);
    struct pollfd *pf = calloc((size_t)jobs, sizeof *pf);
    if (!w || !pf) {
        free(w);
        free(pf);
        return tool_pool_run(n, 1, size, results, item, before, after, ctx);
    }
    nfds_t active = 0;
    int forwarded = 0;
    for (;;) {
        while (active < (nfds_t)jobs && started < n && !tool_matrix_interrupted) {
            if (before) before(started, 1, ctx);
            if (pool_start(&w[active], started, size, res + (size_t)started * size, item, ctx) != 0) {
                // no worker to be had: this one runs here
                item(started, res + (size_t)started * size, ctx);
                after(started++, 1, ctx);
                continue;
            }
            active++;
            started++;
        }
        if (!active) break;
        if (tool_matrix_interrupted && !forwarded) {
            for (nfds_t k = 0; k < active; k++) kill(w[k].pid, (int)tool_matrix_interrupted);
            forwarded = 1;
        }
        for (nfds_t k = 0; k < active; k++) pf[k] = (struct pollfd){ .fd = w[k].fd, .events = POLLIN };
        if (poll(pf, active, 1000) <= 0) continue;   // EINTR: see the flag above
        for (nfds_t k = active; k-- > 0;) {
            if (!pf[k].revents) continue;
            char *dst = res + (size_t)w[k].i * size;
            ssize_t got = read(w[k].fd, dst + w[k].got, size - w[k].got);
            if (got < 0 && errno == EINTR) continue;
            if (got > 0) w[k].got += (size_t)got;
            if (got > 0 && w[k].got < size) continue;
            close(w[k].fd);   // the whole result, or the worker is gone
            int status;
            while (waitpid(w[k].pid, &status, 0) < 0 && errno == EINTR) {}
            const int complete = w[k].got == size;
            after(w[k].i, complete, ctx);
            w[k] = w[--active];
        }
    }
    free(w);
    free(pf);
    return started;
}
