# regress.cmake - in every build (gcc included): per fuzz target a small executable,
# fuzz_regress_NAME = tests/fuzz/fuzz_NAME.c + regress_main.c + the code under test, and a CTest
# (label L0) feeding it every seed of tests/fuzz/corpus/NAME/ and every input that once crashed,
# tests/fuzz/regress/NAME/; plus fuzz_write_seeds, the writer of the safetensors seeds.
include(${CMAKE_CURRENT_LIST_DIR}/targets.cmake)

# The replays run under ASan + UBSan in every build where the compiler has them, so a regression
# file fails the test the way it failed the fuzzer (gcc leaves float-cast-overflow out of
# -fsanitize=undefined: it is named). The rest of the build is untouched.
include(CheckCCompilerFlag)
set(HP_FUZZ_REGRESS_SAN -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=address,undefined,float-cast-overflow")
check_c_compiler_flag("-fno-sanitize-recover=all" HP_FUZZ_REGRESS_HAS_SAN)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT HP_FUZZ_REGRESS_HAS_SAN)
  set(HP_FUZZ_REGRESS_SAN "")
  message(STATUS "tests/fuzz: no ASan/UBSan in this compiler; the fuzz regressions replay without them")
endif()

get_property(HP_FUZZ_NAMES GLOBAL PROPERTY HP_FUZZ_NAMES)
foreach(name ${HP_FUZZ_NAMES})
  get_property(srcs GLOBAL PROPERTY HP_FUZZ_SOURCES_${name})
  get_property(defs GLOBAL PROPERTY HP_FUZZ_DEFINITIONS_${name})
  set(all tests/fuzz/fuzz_${name}.c tests/fuzz/regress_main.c src/util/file_io.c ${srcs})
  list(REMOVE_DUPLICATES all)
  add_executable(fuzz_regress_${name} ${all})
  target_include_directories(fuzz_regress_${name} PRIVATE include src tools/hp tests/fuzz ${CJSON_INCLUDE_DIR})
  target_compile_definitions(fuzz_regress_${name} PRIVATE ${defs})
  get_property(link GLOBAL PROPERTY HP_FUZZ_REGRESS_LINK_${name})
  # REGRESS_LINK last: only what the listed sources lack comes from it
  target_link_libraries(fuzz_regress_${name} PRIVATE ${CJSON_LIBRARY} m ${link})
  if(HP_FUZZ_REGRESS_SAN)
    target_compile_options(fuzz_regress_${name} PRIVATE ${HP_FUZZ_REGRESS_SAN} -fno-omit-frame-pointer)
    target_link_options(fuzz_regress_${name} PRIVATE ${HP_FUZZ_REGRESS_SAN})
  endif()
  add_test(NAME fuzz_regress_${name}
           COMMAND fuzz_regress_${name} ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/corpus/${name}
                                        ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/regress/${name})
  set_tests_properties(fuzz_regress_${name} PROPERTIES LABELS L0 TIMEOUT 60
                       ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1")
endforeach()

# the writer of the safetensors seeds (write_seeds.c); `make fuzz` runs it into build-fuzz/corpus
add_executable(fuzz_write_seeds tests/fuzz/write_seeds.c src/util/safetensors.c src/util/file_io.c)
target_include_directories(fuzz_write_seeds PRIVATE include src ${CJSON_INCLUDE_DIR})
target_link_libraries(fuzz_write_seeds PRIVATE ${CJSON_LIBRARY} m)

# hp_file_read (every reader's way in) refuses what is not a regular file at once: /dev/zero was
# read until memory ran out and a FIFO blocked forever. The replay runner reads through it.
add_test(NAME fuzz_file_read_refuses_devices
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/expect_exit.sh 1 "not a regular file" --
                 $<TARGET_FILE:fuzz_regress_safetensors> /dev/zero)
set_tests_properties(fuzz_file_read_refuses_devices PROPERTIES LABELS L0 TIMEOUT 20)
