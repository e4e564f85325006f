# targets.cmake - the list of fuzz targets, one hp_fuzz_target() line each (fuzz_target.h says
# how to add one). Read by regress.cmake (every build: a CTest per target replays its corpus and
# regression files) and fuzz.cmake (-DHP_FUZZ=ON with clang: the libFuzzer executables).
#   hp_fuzz_target(NAME SOURCES <the code under test> [DEFINITIONS <-D...>] [REGRESS_LINK <lib>])
#     target code tests/fuzz/fuzz_NAME.c, seeds tests/fuzz/corpus/NAME/, crashers tests/fuzz/regress/NAME/
# The code under test is compiled into each target directly (no MPI, no OpenBLAS): only cJSON and libm.
# REGRESS_LINK: a library the replay executable links last in the normal build, for code whose
# dependencies keep growing (cli.c): a new one then breaks only the fuzz build, which says which.
function(hp_fuzz_target name)
  cmake_parse_arguments(FT "" "" "SOURCES;DEFINITIONS;REGRESS_LINK" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY HP_FUZZ_NAMES ${name})
  set_property(GLOBAL PROPERTY HP_FUZZ_SOURCES_${name} ${FT_SOURCES})
  set_property(GLOBAL PROPERTY HP_FUZZ_DEFINITIONS_${name} ${FT_DEFINITIONS})
  set_property(GLOBAL PROPERTY HP_FUZZ_REGRESS_LINK_${name} ${FT_REGRESS_LINK})
endfunction()

# the flag parser also runs the range checks once cli.h declares them (hp_cli_check)
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/tools/hp/cli/cli.h HP_FUZZ_CLI_CHECK REGEX "hp_cli_check[ ]*\\(")
set(HP_FUZZ_CLI_DEFS "")
if(HP_FUZZ_CLI_CHECK)
  set(HP_FUZZ_CLI_DEFS HP_FUZZ_HAVE_CLI_CHECK)
endif()

hp_fuzz_target(safetensors       SOURCES src/util/safetensors.c src/util/file_io.c)
hp_fuzz_target(run_json          SOURCES src/verify/verify_json.c src/util/file_io.c src/util/memtrack.c)
hp_fuzz_target(bench_memory_json SOURCES tools/hp/bench/bench_json.c)
hp_fuzz_target(bench_run_json    SOURCES tools/hp/bench/bench_json.c)
hp_fuzz_target(hf_config         SOURCES src/model_io/hf_config.c src/util/file_io.c)
hp_fuzz_target(hf_index          SOURCES src/model_io/hf_index.c src/util/file_io.c)
# src/dims/ is pure functions (no MPI) and grows (pp_layout.c): all of it, by glob
file(GLOB HP_FUZZ_DIMS_SOURCES RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS src/dims/*.c)
hp_fuzz_target(cli               SOURCES tools/hp/cli/cli.c tools/hp/cli/cli_help.c
                                         src/job/job_keys.c src/job/job_file.c src/job/job_table.c
                                         src/util/toml.c src/model/config.c ${HP_FUZZ_DIMS_SOURCES}
                                         src/kernels/float8.c
                                         src/model_io/hf_config.c src/util/file_io.c
                                 DEFINITIONS ${HP_FUZZ_CLI_DEFS} REGRESS_LINK hyperpar)
# the token-file readers (training-job.md §4): llm.c, Megatron .idx, raw, and hp_data_open on a file
hp_fuzz_target(data_header       SOURCES src/data/data.c src/data/data_formats.c src/util/rng.c src/model/config.c)
hp_fuzz_target(toml              SOURCES src/util/toml.c)
# GGUF files (hp import): the header, metadata, tensor infos and the dequantisation of what is accepted
hp_fuzz_target(gguf              SOURCES src/model_io/gguf_read.c src/model_io/gguf_dequant.c src/util/file_io.c)
