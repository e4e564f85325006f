# optim.cmake - the optimiser's hyperparameters and TorchTitan's LR schedule (include/hyperpar/optim.h):
# the formula on TorchTitan's test vectors and ours (L0); hp run logs each step's lr (warmup,
# then decay); a scheduled AdamW run on FSDP 2 verifies against one process; the resume that
# continues the schedule bit for bit is ckpt_K1s_schedule (tests/checkpoint.cmake); bad values
# are cases of tests/bad_inputs/cases.txt.
add_executable(test_lr_schedule tests/test_lr_schedule.c)
target_link_libraries(test_lr_schedule PRIVATE hyperpar)
add_test(NAME lr_schedule COMMAND test_lr_schedule)
set_tests_properties(lr_schedule PROPERTIES LABELS L0 TIMEOUT 30)

# TT's vector through hp run: lr 0.1, 10 steps, 2 warmup, linear decay from warmup
add_test(NAME lr_schedule_logged
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 0 -
                 "^step: +1  .*  lr: 5[.]0000e-02  " "^step: +3  .*  lr: 1[.]0000e-01  "
                 "^step: +4  .*  lr: 8[.]7500e-02  " "^step: +10  .*  lr: 1[.]2500e-02  "
                 -- $<TARGET_FILE:hp> run --steps 10 --lr 0.1 --lr_scheduler.warmup_steps 2
                    --lr_scheduler.decay_ratio -1)
set_tests_properties(lr_schedule_logged PROPERTIES LABELS L0 TIMEOUT 60)
# a clamped warmup is said in one note, and the run goes on
add_test(NAME lr_schedule_clamp_note
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 0
                 "hp: note: lr_scheduler.warmup_steps 9 is longer than the schedule's 3 steps: 3 warmup steps"
                 -- $<TARGET_FILE:hp> run --steps 3 --lr_scheduler.warmup_steps 9 --quiet)
set_tests_properties(lr_schedule_clamp_note PROPERTIES LABELS L0 TIMEOUT 60)
# the schedule and AdamW's hyperparameters under FSDP 2 against the single process
add_test(NAME lr_schedule_verify_fsdp2
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 0 - "^verify: PASS"
                 -- $<TARGET_FILE:hp> run --dp-shard 2 --optimizer adamw --lr 0.001 --verify --verify-steps 5
                    --lr_scheduler.warmup_steps 2 --lr_scheduler.decay_ratio 0.4 --lr_scheduler.decay_type cosine
                    --lr_scheduler.min_lr_factor 0.1 --optimizer.beta2 0.99 --optimizer.weight_decay 0.01)
set_tests_properties(lr_schedule_verify_fsdp2 PROPERTIES LABELS L0 TIMEOUT 60 PROCESSORS 2)
# the ratio is read as a double, as Python holds it: T 10 x 0.35 = 3.5 rounds (half to even) to
# 4 decay steps: W 0, S 7, so step 8 is the first decayed (lr 0.1 * 3/4); a float 0.35 would give 3
add_test(NAME lr_schedule_ratio_double
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 0 -
                 "^step: +7  .*  lr: 1[.]0000e-01  " "^step: +8  .*  lr: 7[.]5000e-02  "
                 -- $<TARGET_FILE:hp> run --steps 10 --lr 0.1 --lr_scheduler.decay_ratio 0.35)
set_tests_properties(lr_schedule_ratio_double PROPERTIES LABELS L0 TIMEOUT 60)
