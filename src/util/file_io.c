// file_io.c - whole-file reads, JSON files and the folders they go in (see file_io.h).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/file_io.h"

int hp_file_read(const char *path, unsigned char **out, size_t *len, const char **why) {
    // Regular files only: /dev/zero would be read until memory runs out and a FIFO would block
    // forever (a path given to --model-config, --load or --data must never hang the tool).
    // O_NONBLOCK lets open() return on a FIFO without a writer; reads of a regular file ignore it.
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) { *why = strerror(errno); return -1; }
    struct stat st;
    if (fstat(fd, &st) != 0) { *why = strerror(errno); close(fd); return -1; }
    if (!S_ISREG(st.st_mode)) {
        *why = S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file (a device, FIFO or socket)";
        close(fd);
        return -1;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) { *why = strerror(errno); close(fd); return -1; }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        unsigned char *bigger = realloc(buf, 2 * cap + 1);
        if (!bigger) { free(buf); buf = NULL; break; }
        buf = bigger;
        cap *= 2;
    }
    const int bad = ferror(f);
    fclose(f);
    if (!buf) { *why = "out of memory reading the file"; return -1; }
    if (bad) { free(buf); *why = "read error"; return -1; }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

int hp_json_save(const cJSON *j, const char *path) {
    char *text = cJSON_Print(j);
    FILE *f = text ? fopen(path, "w") : NULL;
    int rc = -1;
    if (f) {
        rc = fprintf(f, "%s\n", text) < 0 ? -1 : 0;
        if (fclose(f) != 0) rc = -1;
    }
    free(text);
    return rc;
}

cJSON *hp_json_load(const char *path) {
    unsigned char *text;
    size_t len;
    const char *why;
    if (hp_file_read(path, &text, &len, &why) != 0) return NULL;
    cJSON *j = cJSON_Parse((const char *)text);
    free(text);
    return j;
}

// mkdir -p of the folder that holds path. 0, or -1.
int hp_make_parent_dir(const char *path) {
    char dir[1024];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return -1;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(dir, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

const char *hp_json_shown(const char *s, char *buf, size_t n, size_t max) {
    size_t i = 0;
    for (; s && s[i] && i + 1 < n && i < max; i++) buf[i] = (unsigned char)s[i] < 32 || s[i] == 127 ? '?' : s[i];
    if (n) buf[i] = '\0';
    return buf;
}
