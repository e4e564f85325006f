# fuzz.cmake - the libFuzzer executables build-fuzz/fuzz_NAME, one per target of targets.cmake,
# with clang -fsanitize=fuzzer,address,undefined -g -O1 (no -ffast-math: the same IEEE code as
# the tool). Included by CMakeLists.txt only with -DHP_FUZZ=ON and clang; `make fuzz` configures
# build-fuzz that way and builds just the target hp_fuzz, not the rest of the project.
#   ./build-fuzz/fuzz_safetensors -runs=1000000 build-fuzz/corpus/safetensors tests/fuzz/corpus/safetensors
get_property(HP_FUZZ_NAMES GLOBAL PROPERTY HP_FUZZ_NAMES)
# -UNDEBUG: any assert() of the code under test counts as a crash here
set(HP_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                  -fno-omit-frame-pointer -g -O1 -UNDEBUG)
add_custom_target(hp_fuzz)
foreach(name ${HP_FUZZ_NAMES})
  get_property(srcs GLOBAL PROPERTY HP_FUZZ_SOURCES_${name})
  get_property(defs GLOBAL PROPERTY HP_FUZZ_DEFINITIONS_${name})
  add_executable(fuzz_${name} tests/fuzz/fuzz_${name}.c ${srcs})
  target_include_directories(fuzz_${name} PRIVATE include src tools/hp tests/fuzz ${CJSON_INCLUDE_DIR})
  target_compile_definitions(fuzz_${name} PRIVATE ${defs})
  target_compile_options(fuzz_${name} PRIVATE ${HP_FUZZ_FLAGS})
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_${name} PRIVATE ${CJSON_LIBRARY} m)
  add_dependencies(hp_fuzz fuzz_${name})
endforeach()
