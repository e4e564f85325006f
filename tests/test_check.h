// test_check.h - the pass/fail counting every single-process unit test shares. CHECK(cond,
// fmt, ...) counts the check and, when it fails, prints one line naming the file, the line and
// the message; test_summary(name) prints "name: P passed, F failed" and returns the exit code
// (0 only when nothing failed), so `return test_summary("test_x");` ends main.
// test_skip(name, fmt, ...) prints "name: skipped: <why>" and returns TEST_SKIP_CODE, the code
// CTest's SKIP_RETURN_CODE names (tests/*.cmake): a test that needs what the machine lacks (an
// ISA, a backend's op) is counted as skipped, never as passed.
// defines: CHECK, check_passed, check_failed, test_summary, TEST_SKIP_CODE, test_skip
#ifndef TEST_CHECK_H
#define TEST_CHECK_H
#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                     \
    do {                                                     \
        if (cond) check_passed++;                            \
        else {                                               \
            check_failed++;                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);      \
            printf(__VA_ARGS__);                             \
            printf("\n");                                    \
        }                                                    \
    } while (0)

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed != 0;
}

#define TEST_SKIP_CODE 77

#define test_skip(name, ...)                                 \
    (printf("%s: skipped: ", (name)), printf(__VA_ARGS__), printf("\n"), TEST_SKIP_CODE)

#endif
