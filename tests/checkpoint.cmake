# checkpoint.cmake - distributed checkpoints (issue 14, include/hyperpar/checkpoint.h):
# resume equivalence K1-K6 (AdamW: 6 steps straight against 3 steps, save, resume under
# layout B to step 6; bitwise when B = A, else losses 1e-5 and parameters 1e-4 relative),
# a rank killed mid-save, load(export) bit for bit, and the layout on disk. Bad checkpoints
# (truncated, corrupted, mismatched) are cases of tests/bad_inputs/cases.txt.
#   ctest -R ckpt_          all of them          ctest -R ckpt_K2    one
find_package(Python3 COMPONENTS Interpreter)
set(HP_CKPT_PY ${Python3_EXECUTABLE})
if(NOT HP_CKPT_PY)
  set(HP_CKPT_PY python3)   # missing: the tests run and fail, never skip
endif()
set(HP_CKPT_DIR ${CMAKE_CURRENT_BINARY_DIR}/ckpt)

# hp_ckpt_resume_test(ID LEVEL RANKS "LAYOUT A" "LAYOUT B" "COMMON FLAGS")
function(hp_ckpt_resume_test id level ranks a b common)
  add_test(NAME ckpt_${id}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/checkpoint/run_resume.sh $<TARGET_FILE:hp> ${HP_CKPT_PY}
                   ${HP_CKPT_DIR}/${id} "${a}" "${b}" "${common}")
  set_tests_properties(ckpt_${id} PROPERTIES LABELS ${level} TIMEOUT 300 PROCESSORS ${ranks})
endfunction()

hp_ckpt_resume_test(K1_same_layout     L0 2 "--dp-shard 2 --tp 1"           "--dp-shard 2 --tp 1"           "--model tiny")
# TorchTitan #809: 3 steps of a 6-step schedule (warmup, cosine decay) saved and resumed to step 6
# give the uninterrupted run's losses and parameters bit for bit: the schedule continues
hp_ckpt_resume_test(K1s_schedule       L0 2 "--dp-shard 2"                  "--dp-shard 2"
                    "--model tiny --lr 0.003 --lr_scheduler.warmup_steps 2 --lr_scheduler.decay_ratio -1 --lr_scheduler.decay_type cosine --lr_scheduler.total_steps 6")
hp_ckpt_resume_test(K2_fsdp4_to_tp2    L1 4 "--dp-shard 4"                  "--tp 2 --dp-shard 2"           "--model tiny")
# FSDP over 3: uneven shards (chunk 22, the last rank 20 rows + padding) and the padding kept 0
hp_ckpt_resume_test(K2b_fsdp4_to_fsdp3 L1 4 "--dp-shard 4"                  "--dp-shard 3"                  "--model tiny --batch 12")
hp_ckpt_resume_test(K3_grid_to_hsdp    L1 8 "--dp-shard 2 --cp 2 --tp 2"    "--dp-replicate 2 --dp-shard 2" "--model tiny")
hp_ckpt_resume_test(K4_ep4_to_ep2_etp2 L1 4 "--dp-shard 4 --ep 4 --etp 1"   "--dp-shard 2 --tp 2 --ep 2 --etp 2" "--model tiny-moe")
# pipeline stages: each pp rank saves only its stage's parameters (the others' boxes are empty)
hp_ckpt_resume_test(K5_pp2_to_fsdp4    L1 4 "--pp 2 --dp-shard 2 --pp-microbatches 2" "--dp-shard 4" "--model tiny")
# experts saved Shard(1) (efsdp*ep > E: TorchTitan #1561) and loaded Shard(0) under ETP
hp_ckpt_resume_test(K4b_shard1_experts L2 8 "--dp-shard 8 --ep 2"           "--dp-shard 2 --tp 2 --ep 2 --etp 2" "--model tiny-moe-alt")
if(EXISTS /usr/share/common-licenses/GPL-3)
  hp_ckpt_resume_test(K6_world8_to_1_text L1 8 "--dp-replicate 2 --dp-shard 2 --tp 2" "--dp-shard 1"
                      "--model tiny --data /usr/share/common-licenses/GPL-3")
endif()

add_test(NAME ckpt_kill_mid_save
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/checkpoint/run_kill.sh $<TARGET_FILE:hp> ${HP_CKPT_DIR}/kill)
set_tests_properties(ckpt_kill_mid_save PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 2)
add_test(NAME ckpt_export_roundtrip
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/checkpoint/run_export.sh $<TARGET_FILE:hp> ${HP_CKPT_PY}
                 ${HP_CKPT_DIR}/export)
set_tests_properties(ckpt_export_roundtrip PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 4)
add_test(NAME ckpt_format
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/checkpoint/run_format.sh $<TARGET_FILE:hp> ${HP_CKPT_PY}
                 ${HP_CKPT_DIR}/format)
set_tests_properties(ckpt_format PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 8)
# started by mpirun (no `hp run` parent checks first): the ranks refuse a bad checkpoint alike
add_test(NAME ckpt_corrupt_under_mpirun
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/checkpoint/run_corrupt.sh $<TARGET_FILE:hp> ${HP_CKPT_DIR}/corrupt
                 ${HP_MPIEXEC})
set_tests_properties(ckpt_corrupt_under_mpirun PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 4)
# the box arithmetic alone (no MPI, no files): owned pieces tile every tensor for 15 layouts,
# and every (save, load) pair of layouts of a model rebuilds every rank's shard exactly
add_executable(test_checkpoint_boxes tests/checkpoint/test_checkpoint_boxes.c)
target_include_directories(test_checkpoint_boxes PRIVATE src ${CJSON_INCLUDE_DIR})
target_link_libraries(test_checkpoint_boxes PRIVATE hyperpar)
add_test(NAME ckpt_boxes COMMAND test_checkpoint_boxes)
set_tests_properties(ckpt_boxes PROPERTIES LABELS L0 TIMEOUT 120)
# a rank frozen (SIGSTOP) halfway through a save: the job ends at the watchdog (HP_TIMEOUT=2)
# in under 10 s, its line naming the checkpoint collective rank 0 waits in
add_test(NAME ckpt_stopped_mid_save
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/checkpoint/run_stopped.sh $<TARGET_FILE:hp> ${HP_CKPT_DIR}/stopped)
set_tests_properties(ckpt_stopped_mid_save PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 2)
# the same in a resume: rank 1 frozen once it has read its pieces ends at checkpoint-load-crc
add_test(NAME ckpt_stopped_mid_load
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/checkpoint/run_stopped.sh $<TARGET_FILE:hp> ${HP_CKPT_DIR}/stopped-load load)
set_tests_properties(ckpt_stopped_mid_load PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 2)
# the fault options with a value that is not a whole number: one line naming the variable,
# exit 2, before any rank starts (hp_ckpt_check_env), never read as rank 0
foreach(bad "HP_CKPT_LOAD_STOP_RANK=one" "HP_CKPT_KILL_RANK=x" "HP_CKPT_KILL_STEP=-3")
  string(REGEX REPLACE "=.*" "" var "${bad}")
  string(TOLOWER "${var}" name)
  add_test(NAME ${name}_bad
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 2 "F:hp: ${bad}: must be a whole number >= 0"
                   -- $<TARGET_FILE:hp> run --steps 1 --quiet)
  set_tests_properties(${name}_bad PROPERTIES LABELS L0 TIMEOUT 30
                       ENVIRONMENT "HP_EXPECT_ONE_LINE=1;${bad}")
endforeach()
# a resume under another lr schedule goes on with this run's schedule (TorchTitan restores only the
# step) and says so in one note, with both lrs of the next step
set(HP_CKPT_SCHED "--model tiny --lr 0.003 --lr_scheduler.warmup_steps 2 --lr_scheduler.decay_ratio -1 --lr_scheduler.decay_type cosine --quiet")
separate_arguments(HP_CKPT_SCHED)
add_test(NAME ckpt_schedule_saved
         COMMAND sh -c "h=\"$1\" d=\"$2\"; shift 2; rm -rf \"$d\" && exec \"$h\" run --steps 3 --lr_scheduler.total_steps 6 --checkpoint-dir \"$d\" \"$@\""
                 sh $<TARGET_FILE:hp> ${HP_CKPT_DIR}/sched ${HP_CKPT_SCHED})
set_tests_properties(ckpt_schedule_saved PROPERTIES LABELS L0 TIMEOUT 60 FIXTURES_SETUP ckpt_sched)
add_test(NAME ckpt_schedule_changed_note
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 0
                 "F:hp: note: --resume: the checkpoint's lr schedule (total 6, warmup 2, decay 4 cosine, stable 1, min_lr_factor 0) is not this run's (total 8, warmup 2, decay 6 cosine, stable 1, min_lr_factor 0): step 4 takes lr 0.00279904, where the saved run's would be 0.00256066"
                 -- $<TARGET_FILE:hp> run --steps 4 --lr_scheduler.total_steps 8 --resume ${HP_CKPT_DIR}/sched ${HP_CKPT_SCHED})
set_tests_properties(ckpt_schedule_changed_note PROPERTIES LABELS L0 TIMEOUT 60 FIXTURES_REQUIRED ckpt_sched)
