# recipes.cmake - the completeness matrix (shared/spec/recipes.md) as CTests: one test per recipe
# variant running `hp run <flags> --verify --quiet` (label = its level L0/L1/L2), one per negative
# case (label L0: exit 2 and one stderr line matching the rule, through tests/expect_exit.sh), a
# determinism + report test of `hp matrix` (L1), and the unit test of the table and the reports.
#
# The lists below mirror tools/hp/recipes.c; `recipes_table_sync` fails when they drift apart
# (it diffs `hp matrix --list` against what these lines write into recipes_cmake.txt).
#   ctest -L L0            every change        ctest -R recipe_M6      one recipe
set(HP_RECIPES_LIST ${CMAKE_CURRENT_BINARY_DIR}/recipes_cmake.txt)
set(HP_RECIPES_BAD_FILES ${CMAKE_CURRENT_BINARY_DIR}/recipes_bad_files)
set(HP_RECIPES_EXPECT ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh)
file(WRITE ${HP_RECIPES_LIST} "")

# hp_recipe(ID LEVEL WORLD FLAGS...)
function(hp_recipe id level world)
  string(REPLACE ";" " " flags "${ARGN}")
  file(APPEND ${HP_RECIPES_LIST} "recipe\t${id}\t${level}\t${world}\t${flags}\n")
  add_test(NAME recipe_${id} COMMAND $<TARGET_FILE:hp> run ${ARGN} --verify --quiet)
  # multi-rank jobs take both cores: ctest -j2 runs one of them at a time
  set(procs 1)
  if(world GREATER 1)
    set(procs 2)
  endif()
  set_tests_properties(recipe_${id} PROPERTIES LABELS ${level} TIMEOUT 120 PROCESSORS ${procs})
endfunction()

# hp_recipe_resume(ID LEVEL WORLD FLAGS_A... TO FLAGS_B...): a checkpoint resume recipe of the
# matrix (`hp matrix --only K2`); its CTests are tests/checkpoint.cmake's ckpt_K*, which also
# compare the final parameters, so nothing is registered here
function(hp_recipe_resume id level world)
  set(a)
  set(b)
  set(to 0)
  foreach(arg ${ARGN})
    if(arg STREQUAL "TO")
      set(to 1)
    elseif(to)
      list(APPEND b "${arg}")
    else()
      list(APPEND a "${arg}")
    endif()
  endforeach()
  string(REPLACE ";" " " a "${a}")
  string(REPLACE ";" " " b "${b}")
  file(APPEND ${HP_RECIPES_LIST} "resume\t${id}\t${level}\t${world}\t${a}\t${b}\n")
endfunction()

# hp_recipe_negative(ID CODE REGEX ARGS...)   ARGS may name {DIR}/file: a generated bad file
function(hp_recipe_negative id code regex)
  string(REPLACE ";" " " args "${ARGN}")
  file(APPEND ${HP_RECIPES_LIST} "negative\t${id}\t${code}\t${regex}\t${args}\n")
  set(cmd)
  foreach(a ${ARGN})
    string(REPLACE "{DIR}" "${HP_RECIPES_BAD_FILES}" a "${a}")
    list(APPEND cmd "${a}")
  endforeach()
  add_test(NAME recipe_${id} COMMAND sh ${HP_RECIPES_EXPECT} ${code} "${regex}" -- $<TARGET_FILE:hp> ${cmd})
  set_tests_properties(recipe_${id} PROPERTIES LABELS L0 TIMEOUT 30 ENVIRONMENT "HP_EXPECT_ONE_LINE=1")
  if(args MATCHES "{DIR}")
    set_tests_properties(recipe_${id} PROPERTIES FIXTURES_REQUIRED recipes_bad_files)
  endif()
endfunction()

set(TM --model tiny)
set(MM --model tiny-moe)
hp_recipe(M1a          L0 1 ${TM} --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1)
hp_recipe(M1b          L0 2 ${TM} --dp-replicate 2 --dp-shard 1 --cp 1 --tp 1)
hp_recipe(M2-tp2       L0 2 ${TM} --dp-replicate 1 --dp-shard 1 --cp 1 --tp 2 --no-sp)
hp_recipe(M2-tp4       L0 4 ${TM} --dp-replicate 1 --dp-shard 1 --cp 1 --tp 4 --no-sp)
hp_recipe(M3-tp2       L1 2 ${TM} --dp-replicate 1 --dp-shard 1 --cp 1 --tp 2 --sp)
hp_recipe(M3-tp4       L1 4 ${TM} --dp-replicate 1 --dp-shard 1 --cp 1 --tp 4 --sp)
hp_recipe(M4-s2        L0 2 ${TM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1)
hp_recipe(M4-s4        L0 4 ${TM} --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1)
hp_recipe(M5-s1-ag     L1 2 ${TM} --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --cp-rotate allgather)
hp_recipe(M5-s1-ring   L1 2 ${TM} --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --cp-rotate ring)
hp_recipe(M5-s2-ag     L1 4 ${TM} --dp-replicate 1 --dp-shard 2 --cp 2 --tp 1 --cp-rotate allgather)
hp_recipe(M5-s2-ring   L1 4 ${TM} --dp-replicate 1 --dp-shard 2 --cp 2 --tp 1 --cp-rotate ring)
hp_recipe(B1           L1 4 ${TM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --no-sp)
hp_recipe(B2           L1 4 ${TM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp)
hp_recipe(B4-ag        L1 4 ${TM} --dp-replicate 1 --dp-shard 1 --cp 2 --tp 2 --sp --cp-rotate allgather)
hp_recipe(B4-ring      L1 4 ${TM} --dp-replicate 1 --dp-shard 1 --cp 2 --tp 2 --sp --cp-rotate ring)
hp_recipe(M6-ag        L1 8 ${TM} --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --sp --cp-rotate allgather)
hp_recipe(M6-ring      L1 8 ${TM} --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --sp --cp-rotate ring)
hp_recipe(M7-tp1       L1 4 ${TM} --dp-replicate 2 --dp-shard 2 --cp 1 --tp 1)
hp_recipe(M7-tp2       L1 8 ${TM} --dp-replicate 2 --dp-shard 2 --cp 1 --tp 2 --sp)
hp_recipe(A-EP         L1 2 ${MM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1 --ep 2 --etp 1)
hp_recipe(S1           L2 4 ${MM} --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1 --ep 4 --etp 1)
hp_recipe(S1b          L2 4 ${MM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp --ep 4 --etp 1)
hp_recipe(S2           L2 4 ${MM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp --ep 2 --etp 2)
hp_recipe(S3-S1        L2 4 ${MM} --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1 --ep 4 --etp 1 --dispatcher allgather)
hp_recipe(S3-S1b       L2 4 ${MM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp --ep 4 --etp 1 --dispatcher allgather)
hp_recipe(C2-ep4-ag    L2 8 ${MM} --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --sp --ep 4 --etp 1 --cp-rotate allgather)
hp_recipe(C2-ep4-ring  L2 8 ${MM} --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --sp --ep 4 --etp 1 --cp-rotate ring)
hp_recipe(C2-etp2-ag   L2 8 ${MM} --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --sp --ep 2 --etp 2 --cp-rotate allgather)
hp_recipe(C2-etp2-ring L2 8 ${MM} --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --sp --ep 2 --etp 2 --cp-rotate ring)
hp_recipe(C3-ag        L2 8 ${MM} --dp-replicate 2 --dp-shard 1 --cp 2 --tp 2 --sp --ep 2 --etp 1 --cp-rotate allgather)
hp_recipe(C3-ring      L2 8 ${MM} --dp-replicate 2 --dp-shard 1 --cp 2 --tp 2 --sp --ep 2 --etp 1 --cp-rotate ring)
set(ADAMW --optimizer adamw --lr 0.001)
set(CLIP --max-norm 0.1)
hp_recipe(M4-s2-adamw      L0 2 ${TM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1 ${ADAMW})
hp_recipe(B2-adamw-clip    L1 4 ${TM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp ${ADAMW} ${CLIP})
hp_recipe(M7-tp2-clip      L1 8 ${TM} --dp-replicate 2 --dp-shard 2 --cp 1 --tp 2 --sp ${CLIP})
hp_recipe(S1b-adamw-clip   L2 4 ${MM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp --ep 4 --etp 1 ${ADAMW} ${CLIP})
hp_recipe(M5-s1-nolb-ag    L1 2 ${TM} --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --cp-rotate allgather --cp-no-balance)
hp_recipe(M5-s1-nolb-ring  L1 2 ${TM} --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --cp-rotate ring --cp-no-balance)
hp_recipe(M5-cp4-nolb-ag   L1 4 ${TM} --dp-replicate 1 --dp-shard 1 --cp 4 --tp 1 --cp-rotate allgather --cp-no-balance)
hp_recipe(M5-cp4-nolb-ring L1 4 ${TM} --dp-replicate 1 --dp-shard 1 --cp 4 --tp 1 --cp-rotate ring --cp-no-balance)
hp_recipe(GA               L1 8 ${TM} --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --sp --cp-rotate allgather --microbatches 4)
hp_recipe(GA-moe           L2 4 ${MM} --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --sp --ep 4 --etp 1 --microbatches 2)
# pipeline parallel (tests/pipeline.cmake checks the schedules bitwise against accumulation)
hp_recipe(P1-gpipe         L1 2 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --pp 2 --layers 4 --pp-schedule gpipe --pp-microbatches 4)
hp_recipe(P1-1f1b          L1 2 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --pp 2 --layers 4 --pp-schedule 1f1b --pp-microbatches 4)
hp_recipe(P2               L2 4 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --pp 4 --layers 4 --pp-schedule 1f1b --pp-microbatches 8 --batch 8)
hp_recipe(P3               L1 2 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --pp 2 --layers 4 --pp-schedule interleaved-1f1b --pp-virtual 2 --pp-microbatches 4)
hp_recipe(P4               L2 2 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --pp 2 --layers 4 --pp-schedule zbv --pp-microbatches 4)
hp_recipe(P5               L2 4 --model tiny --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1 --pp 2 --layers 4 --pp-schedule 1f1b --pp-microbatches 4)
hp_recipe(P6               L2 4 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 2 --pp 2 --sp --layers 4 --pp-schedule 1f1b --pp-microbatches 4)
hp_recipe(P7-ag            L2 4 --model tiny --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --pp 2 --cp-rotate allgather --layers 4 --pp-schedule 1f1b --pp-microbatches 4)
hp_recipe(P7-ring          L2 4 --model tiny --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --pp 2 --cp-rotate ring --layers 4 --pp-schedule 1f1b --pp-microbatches 4)
hp_recipe(P8               L2 8 --model tiny --dp-replicate 2 --dp-shard 1 --cp 1 --tp 2 --pp 2 --sp --layers 4 --pp-schedule interleaved-1f1b --pp-virtual 2 --pp-microbatches 4)
hp_recipe(P9               L2 4 --model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1 --pp 2 --ep 2 --etp 1 --layers 4 --pp-schedule 1f1b --pp-microbatches 4)
hp_recipe(P10              L2 8 --model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --pp 2 --sp --ep 2 --etp 2 --layers 4 --pp-schedule 1f1b --pp-microbatches 2)
hp_recipe(C4               L2 16 --model tiny --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --pp 2 --sp --cp-rotate allgather --layers 4 --pp-schedule interleaved-1f1b --pp-virtual 2 --pp-microbatches 4)
hp_recipe(C5               L2 16 --model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --pp 2 --sp --ep 4 --etp 1 --cp-rotate allgather --layers 4 --pp-schedule 1f1b --pp-microbatches 2)

# Ulysses (ulysses.md)
hp_recipe(U1               L1 2 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --ulysses 2)
hp_recipe(U2               L2 4 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --ulysses 4)
hp_recipe(U3               L2 8 --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --ulysses 8)
hp_recipe(U4-ag            L1 4 --model tiny --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --ulysses 2 --cp-rotate allgather)
hp_recipe(U4-ring          L2 4 --model tiny --dp-replicate 1 --dp-shard 1 --cp 2 --tp 1 --ulysses 2 --cp-rotate ring)
hp_recipe(U5               L2 8 --model tiny --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --ulysses 2 --sp)
hp_recipe(U6               L2 8 --model tiny --dp-replicate 1 --dp-shard 1 --cp 2 --tp 2 --ulysses 2 --sp --cp-rotate allgather)
hp_recipe(U7               L2 4 --model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1 --ulysses 2 --ep 4 --etp 1)

# distributed checkpoints: save under A, resume under B (issue 14)
hp_recipe_resume(K1  L1 4 --model tiny --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1 --optimizer adamw --lr 0.001 TO --model tiny --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1 --optimizer adamw --lr 0.001)
hp_recipe_resume(K2  L1 4 --model tiny --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1 --optimizer adamw --lr 0.001 TO --model tiny --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --optimizer adamw --lr 0.001)
hp_recipe_resume(K3  L1 8 --model tiny --dp-replicate 1 --dp-shard 2 --cp 2 --tp 2 --sp --cp-rotate allgather --optimizer adamw --lr 0.001 TO --model tiny --dp-replicate 2 --dp-shard 2 --cp 1 --tp 1 --optimizer adamw --lr 0.001)
hp_recipe_resume(K4  L1 4 --model tiny-moe --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1 --ep 4 --etp 1 --optimizer adamw --lr 0.001 TO --model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --ep 2 --etp 2 --optimizer adamw --lr 0.001)
hp_recipe_resume(K5  L2 4 --model tiny --dp-replicate 1 --dp-shard 2 --cp 1 --tp 1 --pp 2 --layers 4 --pp-microbatches 2 --optimizer adamw --lr 0.001 TO --model tiny --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1 --layers 4 --optimizer adamw --lr 0.001)
hp_recipe_resume(K6  L2 8 --model tiny --dp-replicate 1 --dp-shard 8 --cp 1 --tp 1 --data /usr/share/common-licenses/GPL-3 --optimizer adamw --lr 0.001 TO --model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 --data /usr/share/common-licenses/GPL-3 --optimizer adamw --lr 0.001)

# Negative cases: POSIX ERE with [(] [*] [.] instead of backslashes (same text as recipes.c).
hp_recipe_negative(neg-world 2 "world size: dp_replicate[(]1[)][*]dp_shard[(]2[)][*]cp[(]2[)][*]tp[(]2[)][*]pp[(]1[)] = 8 != 6 ranks launched"
  run --nproc 6 --tp 2 --cp 2 --dp-shard 2)
hp_recipe_negative(neg-infer 2 "dp_shard inference: world size 6 is not a multiple of dp_replicate[*]cp[*]tp[*]pp = 1[*]1[*]4[*]1 = 4"
  run --tp 4 --nproc 6)
hp_recipe_negative(neg-degree-tp 2 "degree must be >= 1 [(]except dp_shard[)]: tp = 0" run --tp 0)
hp_recipe_negative(neg-degree-cp 2 "degree must be >= 1 [(]except dp_shard[)]: cp = -1" run --cp -1)
hp_recipe_negative(neg-dp-shard-0 2 "dp_shard must be -1 [(]infer[)] or >= 1: dp_shard = 0" run --dp-shard 0)
hp_recipe_negative(neg-dp-shard-m2 2 "dp_shard must be -1 [(]infer[)] or >= 1: dp_shard = -2" run --dp-shard=-2)
hp_recipe_negative(neg-etp-no-ep 2 "etp [(]2[)] > 1 needs ep > 1: ep = 1" run ${MM} --tp 2 --dp-shard 2 --etp 2)
hp_recipe_negative(neg-etp-not-tp 2 "etp must be 1 or tp when ep > 1: etp = 4, tp = 2" run ${MM} --tp 2 --dp-shard 4 --ep 2 --etp 4)
hp_recipe_negative(neg-ep-sct 2 "ep [(]4[)] must divide dp_shard[*]cp[*]tp = 2[*]1[*]1 = 2" run ${MM} --dp-shard 2 --ep 4)
hp_recipe_negative(neg-ep-sc 2 "ep [(]4[)] must divide dp_shard[*]cp = 2[*]1 = 2 when etp = tp [(]2[)]"
  run ${MM} --dp-shard 2 --tp 2 --ep 4 --etp 2)
hp_recipe_negative(neg-experts 2 "ep [(]3[)] must divide num_experts [(]8[)]" run ${MM} --dp-shard 3 --ep 3 --batch 9)
hp_recipe_negative(neg-ep-dense 2 "ep [(]2[)] > 1 needs a MoE model: 'tiny' is dense" run --dp-shard 2 --ep 2)
hp_recipe_negative(neg-seq-cp 2 "context parallel: 2[*]cp[*]tp = 2[*]2[*]2 = 8 must divide seq_len [(]30[)]"
  run --cp 2 --tp 2 --seq-len 30)
hp_recipe_negative(neg-seq-sp 2 "sequence parallel: tp [(]2[)] must divide seq_len [(]33[)]" run --tp 2 --seq-len 33)
hp_recipe_negative(neg-token-split 2 "expert dispatch over tp: tp [(]2[)] must divide the tokens of one rank"
  run ${MM} --dp-shard 2 --tp 2 --ep 4 --no-sp --seq-len 31 --batch 2)
hp_recipe_negative(neg-heads 2 "tp [(]3[)] must divide n_heads [(]8[)]" run --tp 3)
hp_recipe_negative(neg-kv-heads 2 "tp [(]8[)] must divide n_kv_heads [(]4[)]" run --tp 8)
hp_recipe_negative(neg-batch 2 "dp_replicate[*]dp_shard = 1[*]3 = 3 must divide the global batch [(]8[)]" run --dp-shard 3)
hp_recipe_negative(neg-pp-layers 2 "pipeline: n_layers [(]2[)] must be >= pp[*]pp_virtual = 4[*]1 = 4 stages" run --pp 4)
hp_recipe_negative(neg-dispatcher 2 "--dispatcher expects alltoall or allgather, got 'deepep'"
  run ${MM} --dp-shard 2 --ep 2 --dispatcher deepep)
hp_recipe_negative(neg-rotate 2 "--cp-rotate expects allgather or ring, got 'alltoall'" run --cp 2 --cp-rotate alltoall)
hp_recipe_negative(neg-load-missing 2 "--load: .*absent[.]safetensors: cannot open" run --load {DIR}/absent.safetensors)
hp_recipe_negative(neg-load-truncated 2 "--load: .*truncated[.]safetensors: .*(truncated|exceeds|outside|short)"
  run --load {DIR}/truncated.safetensors)
hp_recipe_negative(neg-load-shape 2 "--load: .*wrong_shape[.]safetensors: tensor 'tok_embeddings[.]weight' has shape [[]64,256[]], the model needs [[]256,64[]]"
  run --load {DIR}/wrong_shape.safetensors)
hp_recipe_negative(neg-load-names 2 "--load: .*wrong_names[.]safetensors: tensor 'output[.]weight' is missing"
  run --load {DIR}/wrong_names.safetensors)
hp_recipe_negative(neg-load-text 2 "--load: .*not_safetensors[.]txt: .*not a safetensors file"
  run --load {DIR}/not_safetensors.txt)

# the bad input files of the neg-load-* cases
add_test(NAME recipes_bad_files COMMAND $<TARGET_FILE:hp> matrix --write-bad-files ${HP_RECIPES_BAD_FILES})
set_tests_properties(recipes_bad_files PROPERTIES LABELS L0 TIMEOUT 30 FIXTURES_SETUP recipes_bad_files)

# the lists above == the table in recipes.c
add_test(NAME recipes_table_sync
         COMMAND sh -c "\"$0\" matrix --list | diff -u \"$1\" - && echo 'recipes_table_sync: the CMake lists match hp matrix --list'"
                 $<TARGET_FILE:hp> ${HP_RECIPES_LIST})
set_tests_properties(recipes_table_sync PROPERTIES LABELS L0 TIMEOUT 30)

# the table, the JSON round trip the determinism check relies on, the reports
add_executable(test_recipes ${CMAKE_CURRENT_LIST_DIR}/test_recipes.c
               ${CMAKE_SOURCE_DIR}/tools/hp/recipes.c ${CMAKE_SOURCE_DIR}/tools/hp/report.c
               ${CMAKE_SOURCE_DIR}/tools/hp/cli.c)
target_include_directories(test_recipes PRIVATE ${CMAKE_SOURCE_DIR}/tools/hp ${CMAKE_SOURCE_DIR}/src ${CJSON_INCLUDE_DIR})
target_link_libraries(test_recipes PRIVATE hyperpar)
add_test(NAME recipes_table COMMAND test_recipes)
set_tests_properties(recipes_table PROPERTIES LABELS L0 TIMEOUT 60)

# determinism: the same recipe twice gives bit-identical losses; plus a report with a negative case
set(HP_MATRIX_SMOKE ${CMAKE_CURRENT_BINARY_DIR}/matrix_smoke)
add_test(NAME recipes_matrix_determinism
         COMMAND sh -c "rm -rf \"$1\" && \"$0\" matrix --only M4-s2,B2,neg-pp-layers --repeat 2 --report \"$1\" && grep -q '</svg>' \"$1/report.svg\" && grep -q '\"deterministic\":[[:space:]]*true' \"$1/report.json\" && grep -q 'refused-ok' \"$1/report.md\""
                 $<TARGET_FILE:hp> ${HP_MATRIX_SMOKE})
set_tests_properties(recipes_matrix_determinism PROPERTIES LABELS L1 TIMEOUT 180 PROCESSORS 2)

# the command line of hp matrix: bad usage exits 2 with one line
foreach(case
    "matrix_bad_level|--level expects all, L0, L1 or L2 .*got 'L5'|--level;L5"
    "matrix_bad_only|--only: unknown recipe or negative case 'M99'|--only;M4-s2,M99"
    "matrix_bad_repeat|--repeat expects an integer in [[]1, 100[]], got '0'|--repeat;0"
    "matrix_bad_flag|unknown flag '--levels'|--levels;L0")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 regex)
  list(SUBLIST parts 2 -1 args)
  add_test(NAME recipes_${name} COMMAND sh ${HP_RECIPES_EXPECT} 2 "${regex}" -- $<TARGET_FILE:hp> matrix ${args})
  set_tests_properties(recipes_${name} PROPERTIES LABELS L0 TIMEOUT 30 ENVIRONMENT "HP_EXPECT_ONE_LINE=1")
endforeach()

# README.md's recipe table is generated from the library's list and must not drift
add_test(NAME readme_recipes_table
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_readme_table.sh $<TARGET_FILE:hp> ${CMAKE_SOURCE_DIR}/README.md)
set_tests_properties(readme_recipes_table PROPERTIES LABELS L0 TIMEOUT 30)
