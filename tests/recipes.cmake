# recipes.cmake - the completeness matrix (shared/spec/recipes.md) as CTests, generated from the
# library's table (src/verify/recipes.c; no list here to drift): after every build of hp, its
# POST_BUILD step `hp matrix --ctest` writes recipes_ctest.cmake, one test per recipe variant
# running `hp run <flags> --verify --quiet` (label = its level L0/L1/L2) and one per negative case
# (label L0: exit 2 and one stderr line matching the rule, through tests/expect_exit.sh), and the
# failpoint_* tests of the failpoint registry (src/util/failpoint.c; tests/failpoints.cmake); ctest
# includes it through the directory property TEST_INCLUDE_FILES (as gtest_discover_tests does).
# Here: the bad input files, a determinism + report test of `hp matrix` (L1), the unit tests of
# the table, the reports and the verify records, the command line of hp matrix, and the two
# generated Markdown tables (README.md, examples/README.md), which fail on drift.
#   ctest -L L0            every change        ctest -R recipe_M6      one recipe
set(HP_RECIPES_BAD_FILES ${CMAKE_CURRENT_BINARY_DIR}/recipes_bad_files)
set(HP_RECIPES_EXPECT ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh)
set(HP_RECIPES_CTEST ${CMAKE_CURRENT_BINARY_DIR}/recipes_ctest.cmake)
add_custom_command(TARGET hp POST_BUILD
                   COMMAND $<TARGET_FILE:hp> matrix --ctest ${HP_RECIPES_CTEST}
                   COMMENT "hp matrix --ctest: the recipe CTests from the library's table" VERBATIM)
# what the generated script names (the sanitizer build's test environment too)
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/recipes_ctest_prelude.cmake CONTENT
"set(HP_RECIPES_HP [==[$<TARGET_FILE:hp>]==])
set(HP_RECIPES_EXPECT [==[${HP_RECIPES_EXPECT}]==])
set(HP_RECIPES_BAD_FILES [==[${HP_RECIPES_BAD_FILES}]==])
set(HP_RECIPES_FP_RUN [==[${CMAKE_CURRENT_LIST_DIR}/run_failpoint.sh]==])
set(HP_RECIPES_FP_OUT [==[${CMAKE_CURRENT_BINARY_DIR}/failpoints]==])
set(HP_RECIPES_ENV [==[${HP_SANITIZE_TEST_ENV}]==])
if(EXISTS [==[${HP_RECIPES_CTEST}]==])
  include([==[${HP_RECIPES_CTEST}]==])
else()
  message(WARNING \"no recipe CTests yet: build hp first (its POST_BUILD step writes ${HP_RECIPES_CTEST})\")
endif()
")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${CMAKE_CURRENT_BINARY_DIR}/recipes_ctest_prelude.cmake)

# the bad input files of the neg-load-* cases
add_test(NAME recipes_bad_files COMMAND $<TARGET_FILE:hp> matrix --write-bad-files ${HP_RECIPES_BAD_FILES})
set_tests_properties(recipes_bad_files PROPERTIES LABELS L0 TIMEOUT 30 FIXTURES_SETUP recipes_bad_files)

# the table, the JSON round trip the determinism check relies on, the reports
add_executable(test_recipes ${CMAKE_CURRENT_LIST_DIR}/test_recipes.c
               ${CMAKE_SOURCE_DIR}/tools/hp/matrix/report.c ${CMAKE_SOURCE_DIR}/tools/hp/matrix/report_md.c
               ${CMAKE_SOURCE_DIR}/tools/hp/matrix/report_json.c ${CMAKE_SOURCE_DIR}/tools/hp/matrix/report_svg.c
               ${CMAKE_SOURCE_DIR}/tools/hp/cli/cli.c ${CMAKE_SOURCE_DIR}/tools/hp/cli/cli_help.c)
target_include_directories(test_recipes PRIVATE ${CMAKE_SOURCE_DIR}/tools/hp ${CMAKE_SOURCE_DIR}/src ${CJSON_INCLUDE_DIR})
target_link_libraries(test_recipes PRIVATE hyperpar)
add_test(NAME recipes_table COMMAND test_recipes)
set_tests_properties(recipes_table PROPERTIES LABELS L0 TIMEOUT 60)

# the verify API: a record's JSON round trip, the rerun / same_as / resume checks failing on a change
add_executable(test_recipes_verify ${CMAKE_CURRENT_LIST_DIR}/test_recipes_verify.c)
target_link_libraries(test_recipes_verify PRIVATE hyperpar)
add_test(NAME recipes_verify_record COMMAND test_recipes_verify ${CMAKE_CURRENT_BINARY_DIR}/recipes_verify_record)
set_tests_properties(recipes_verify_record PROPERTIES LABELS L0 TIMEOUT 30)

# determinism: the same recipe twice gives bit-identical losses (two recipes at once: --jobs 2), and the report (with the BLAS,
# core and threads per rank the promise holds for) (no negative case:
# each runs once per CI, as its recipe_neg-* test or in `make matrix`)
set(HP_MATRIX_SMOKE ${CMAKE_CURRENT_BINARY_DIR}/matrix_smoke)
add_test(NAME recipes_matrix_determinism
         COMMAND sh -c "rm -rf \"$1\" && \"$0\" matrix --only M4-s2,B2 --repeat 2 --jobs 2 --report \"$1\" && grep -q '</svg>' \"$1/report.svg\" && grep -q '\"deterministic\":[[:space:]]*true' \"$1/report.json\" && grep -Eq '\"blas_conditions\":[[:space:]]*\"[^\"]*, core [A-Za-z0-9_]+, [0-9]+ BLAS threads? per rank' \"$1/report.json\""
                 $<TARGET_FILE:hp> ${HP_MATRIX_SMOKE})
set_tests_properties(recipes_matrix_determinism PROPERTIES LABELS L1 TIMEOUT 180 PROCESSORS 2)

# the command line of hp matrix: bad usage exits 2 with one line
foreach(case
    "matrix_bad_level|--level expects all, L0, L1 or L2 .*got 'L5'|--level;L5"
    "matrix_bad_only|--only: unknown recipe or negative case 'M99'|--only;M4-s2,M99"
    "matrix_bad_repeat|--repeat expects an integer in [[]1, 100[]], got '0'|--repeat;0"
    "matrix_bad_jobs|--jobs expects an integer in [[]1, 64[]], got '0'|--jobs;0"
    "matrix_bad_flag|unknown flag '--levels'|--levels;L0")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 regex)
  list(SUBLIST parts 2 -1 args)
  add_test(NAME recipes_${name} COMMAND sh ${HP_RECIPES_EXPECT} 2 "${regex}" -- $<TARGET_FILE:hp> matrix ${args})
  set_tests_properties(recipes_${name} PROPERTIES LABELS L0 TIMEOUT 30 ENVIRONMENT "HP_EXPECT_ONE_LINE=1")
endforeach()

# docs/recipes.md's recipe table and examples/README.md's examples table are generated from the
# library's table and must not drift
add_test(NAME readme_recipes_table
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_readme_table.sh $<TARGET_FILE:hp> ${CMAKE_SOURCE_DIR}/docs/recipes.md)
set_tests_properties(readme_recipes_table PROPERTIES LABELS L0 TIMEOUT 30)
add_test(NAME examples_recipes_table
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_readme_table.sh $<TARGET_FILE:hp>
                 ${CMAKE_SOURCE_DIR}/examples/README.md examples --examples-markdown)
set_tests_properties(examples_recipes_table PROPERTIES LABELS L0 TIMEOUT 30)
