# beyond.cmake - frameworks beyond PyTorch proven by hp (docs/beyond_pytorch.md, issue 39 item 6):
# examples/beyond/check_beyond.sh runs hp's one-process dump, the framework's layout under
# torchrun on gloo (2 ranks of the tiny model, one thread each) and hp compare:
# - Megatron-Core's tensor_parallel ColumnParallelLinear / RowParallelLinear at tp 2;
# - DeepSpeed ZeRO stage 2 at dp 2 (DS_ACCELERATOR=cpu), and its loss-scaling fault caught.
# megatron-core and deepspeed live in their own venv over the torch 2 one (scripts/setup_beyond.sh,
# installed from PyPI when missing); where pip cannot reach PyPI every test here is skipped (77).
# The build and the C tests never need them.
set(HP_BEYOND_RUN sh ${CMAKE_SOURCE_DIR}/tests/run_beyond.sh $<TARGET_FILE:hp>)
# NAME:WANT:TENSOR:ARGS (ARGS with ',' for ' '; TENSOR a grep -E pattern or '-')
set(HP_BEYOND_CASES
  "beyond_megatron_tp2:0:-:megatron-tp2"
  "beyond_deepspeed_zero2:0:-:deepspeed-zero2"
  "beyond_deepspeed_bug_zero_average:1:output\\.weight:deepspeed-zero2,--bug,zero-average")
foreach(case ${HP_BEYOND_CASES})
  string(REPLACE ":" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 want)
  list(GET parts 2 tensor)
  list(GET parts 3 args)
  string(REPLACE "," ";" args "${args}")
  if(tensor STREQUAL "-")
    set(tensor "")
  endif()
  add_test(NAME ${name}
           COMMAND ${HP_BEYOND_RUN} ${CMAKE_CURRENT_BINARY_DIR}/${name} ${want} ${tensor} -- ${args})
  # the first test on a fresh machine installs torch 2 and the frameworks, and DeepSpeed builds
  # its CPU communication op once (about 3 minutes on 2 cores): the timeout covers it
  set_tests_properties(${name} PROPERTIES LABELS "L1;beyond" TIMEOUT 900 PROCESSORS 2
                       SKIP_RETURN_CODE 77 RESOURCE_LOCK torch2_venv)
endforeach()
