// fuzz_target.h - the one function every fuzz target defines, run two ways:
//   * by libFuzzer (clang, `make fuzz` / `make fuzz-ci`): build-fuzz/fuzz_<name> explores inputs;
//   * by regress_main.c (any compiler, CTest fuzz_regress_<name>, label L0): every file of
//     tests/fuzz/corpus/<name>/ (the seeds) and tests/fuzz/regress/<name>/ (inputs that once
//     crashed) is fed through the same function on every test run.
// A target must return 0 and never crash, leak, exit or hang on ANY bytes; where the code under
// test promises more (an invariant), the target checks it and calls abort() when it fails, so
// the fuzzer reports it like a crash.
//
// Adding a target (e.g. a model config.json reader):
//   1. tests/fuzz/fuzz_config_json.c defines LLVMFuzzerTestOneInput (fuzz_json.h parses bytes
//      the way hp_json_load does);
//   2. one line in tests/fuzz/targets.cmake: hp_fuzz_target(config_json SOURCES src/model/x.c);
//   3. seed files in tests/fuzz/corpus/config_json/ (a few valid inputs).
#ifndef HP_FUZZ_TARGET_H
#define HP_FUZZ_TARGET_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
