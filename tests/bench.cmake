# bench.cmake - the kernels' parallel-for (bit-identical results at any thread count) and
# `hp bench` smoke runs on the tiny model: the FLOP count of its JSON is the formula's, the
# FMA peak and the three ratios are consistent, the BLAS core is named and right, and
# --memory's per-rank persistent bytes add up to the full model plus padding; --recipes' bytes
# match docs/traffic.md's prediction for every recipe; bench/scaling.py prints its table. No timing is
# asserted: performance is reported by hp bench / bench/run.sh as ratios, never tested.
add_executable(test_parallel tests/test_parallel.c)
target_include_directories(test_parallel PRIVATE src)
target_link_libraries(test_parallel PRIVATE hyperpar)
add_test(NAME parallel COMMAND test_parallel)
set_tests_properties(parallel PROPERTIES LABELS L0 TIMEOUT 60)

find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME bench_step COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_bench.py
           step $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/bench_step.json)
  set_tests_properties(bench_step PROPERTIES LABELS L0 TIMEOUT 60)
  # the BLAS core on the first line of hp bench / hp run, never a generic one on an AVX2 or
  # AVX-512 CPU, the user's OPENBLAS_CORETYPE kept; the launcher hp was built with, not PATH's
  add_test(NAME bench_blas_core COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_bench.py
           blas $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/bench_blas.json)
  set_tests_properties(bench_blas_core PROPERTIES LABELS L0 TIMEOUT 120)
  add_test(NAME launch_built_mpiexec COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_bench.py
           launch $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/bench_launch.json)
  set_tests_properties(launch_built_mpiexec PROPERTIES LABELS L0 TIMEOUT 120)
  add_test(NAME bench_memory COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_bench.py
           memory $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/bench_memory.json)
  set_tests_properties(bench_memory PROPERTIES LABELS L1 TIMEOUT 120)
  add_test(NAME bench_recipes COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_bench.py
           recipes $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/bench_recipes.json)
  set_tests_properties(bench_recipes PROPERTIES LABELS L1 TIMEOUT 120)
  # bench/scaling.py prints its table (one round on tiny; the timings themselves are not tested)
  add_test(NAME bench_scaling COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_bench.py
           scaling $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/bench_scaling.json)
  set_tests_properties(bench_scaling PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2)
  # bench/run.sh with torch 2 missing (a bogus TORCH2_PYTHON): the table of hp and Debian's
  # torch 1.13, and one line saying the torch 2 rows are skipped (77 without Debian's torch)
  add_test(NAME bench_run_torch2_skip COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/run_bench_torch2_skip.sh
           $<TARGET_FILE_DIR:hp> ${CMAKE_CURRENT_BINARY_DIR}/bench_run_torch2_skip)
  set_tests_properties(bench_run_torch2_skip PROPERTIES LABELS L1 TIMEOUT 300 SKIP_RETURN_CODE 77)
else()
  message(STATUS "bench.cmake: python3 not found, skipping the hp bench smoke tests")
endif()
