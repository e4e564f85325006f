// file_io.h - whole-file reads and JSON files, shared by the library (data, safetensors,
// dump) and the tool (run, matrix, bench reports). Internal: not part of the public API.
// defines: hp_file_read, hp_json_save, hp_json_load, hp_make_parent_dir, hp_json_shown
#ifndef HP_UTIL_FILE_IO_H
#define HP_UTIL_FILE_IO_H
#include <stddef.h>
#include <cjson/cJSON.h>

// Reads a whole file into a fresh buffer with a NUL appended (*len excludes it). Returns 0,
// or -1 with *why set to a short reason ("No such file or directory", "read error", ...).
// Only regular files: a device, FIFO or socket is refused at once (never read forever or waited on).
int hp_file_read(const char *path, unsigned char **out, size_t *len, const char **why);
// Writes j pretty-printed (and a newline) to path. Returns 0, or -1 (errno tells why).
int hp_json_save(const cJSON *j, const char *path);
// Reads and parses a JSON file; NULL when it cannot be read or does not parse.
cJSON *hp_json_load(const char *path);

// mkdir -p of the folder that holds path ("D/metrics.jsonl" -> D). 0, or -1 (errno tells why).
int hp_make_parent_dir(const char *path);

// A string read from a file, for an error line: at most max bytes of s (and n - 1) into buf,
// a control byte shown as '?', so that the line stays one line. Returns buf.
const char *hp_json_shown(const char *s, char *buf, size_t n, size_t max);

#endif
