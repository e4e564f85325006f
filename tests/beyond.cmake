# beyond.cmake - frameworks beyond PyTorch proven by hp (docs/beyond_pytorch.md, issue 39 item 6):
# examples/beyond/check_beyond.sh runs hp's one-process dump, the framework's layout under
# torchrun on gloo (2 ranks of the tiny model, one thread each) and hp compare:
# - Megatron-Core's tensor_parallel ColumnParallelLinear / RowParallelLinear at tp 2;
# - DeepSpeed ZeRO stage 2 at dp 2 (DS_ACCELERATOR=cpu), and its loss-scaling fault caught.
# megatron-core and deepspeed live in their own venv over the torch 2 one (scripts/setup_beyond.sh,
# installed from PyPI when missing); where pip cannot reach PyPI every test here is skipped (77).
# The build and the C tests never need them.
include(${CMAKE_SOURCE_DIR}/tests/cmake/outside_layout_cases.cmake)
# NAME:LABEL:WANT:TENSOR:ARGS (tests/cmake/outside_layout_cases.cmake)
hp_outside_layout_tests(beyond/check_beyond beyond
  "beyond_megatron_tp2:L1:0:-:megatron-tp2"
  "beyond_deepspeed_zero2:L1:0:-:deepspeed-zero2"
  "beyond_deepspeed_bug_zero_average:L1:1:output\\.weight:deepspeed-zero2,--bug,zero-average")
