# compare.cmake - hp compare (docs/dump.md) against PyTorch and across layouts, and hp run under an
# outside launcher with a hostfile (docs/multi_host.md).

# hp against PyTorch (examples/torch/torch_dump.py: one process, and DDP over gloo on 2), a
# perturbed gradient (exit 1) and another batch (exit 2); under bf16 hp is judged in units of
# PyTorch's own bf16 noise, and injected faults of hp's (failpoints) fail too. Like the
# torch_check tests (train.cmake), these FAIL where the system interpreter has no torch
# (scripts/setup.sh installs python3-torch).
find_program(HP_SYSTEM_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT HP_SYSTEM_PYTHON)
  set(HP_SYSTEM_PYTHON /usr/bin/python3)   # missing: the tests run and fail, never skip
endif()
foreach(case "tiny:fp32" "tiny-moe:fp32" "tiny:bf16")
  string(REPLACE ":" ";" parts "${case}")
  list(GET parts 0 model)
  list(GET parts 1 mode)
  set(name compare_torch_${model})
  if(mode STREQUAL "bf16")
    set(name ${name}_bf16)
  endif()
  add_test(NAME ${name}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_compare_torch.sh $<TARGET_FILE:hp> ${HP_SYSTEM_PYTHON}
                   ${CMAKE_CURRENT_BINARY_DIR}/${name} ${model} ${mode})
  set_tests_properties(${name} PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2)
endforeach()
# The bf16 comparison as on a CPU without AVX-512 (an AMD Zen 3): under CI's AVX2 profile
# torch_dump.py switches mkldnn off, and PyTorch 1.13 runs its own bf16 GEMM, whose sums are
# rounded to bf16 at every step (precision.md, "bf16 against PyTorch on every CPU"). With
# compare_torch_tiny_bf16 this machine shows both of PyTorch's paths, and the faults caught on each.
set(HP_PROFILE_AVX2 "HP_CPU_ISA=avx2;ONEDNN_MAX_CPU_ISA=AVX2;DNNL_MAX_CPU_ISA=AVX2;OPENBLAS_CORETYPE=Haswell")
add_test(NAME compare_torch_tiny_bf16_avx2
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_compare_torch.sh $<TARGET_FILE:hp> ${HP_SYSTEM_PYTHON}
                 ${CMAKE_CURRENT_BINARY_DIR}/compare_torch_tiny_bf16_avx2 tiny bf16)
set_tests_properties(compare_torch_tiny_bf16_avx2 PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2
                     ENVIRONMENT "${HP_PROFILE_AVX2}")
# check_torch.py's bf16 rule on the same path (before, the capped oneDNN raised inside PyTorch)
add_test(NAME torch_check_tiny_bf16_avx2
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_torch_check.sh $<TARGET_FILE:hp> ${HP_SYSTEM_PYTHON}
                 ${CMAKE_CURRENT_BINARY_DIR}/torch_check_tiny_bf16_avx2 tiny --mixed-precision-param bfloat16)
set_tests_properties(torch_check_tiny_bf16_avx2 PROPERTIES LABELS L1 TIMEOUT 300 ENVIRONMENT "${HP_PROFILE_AVX2}")

# hp against hp: dumps under tp+fsdp, cp+tp, pp, ep+tp (MoE) and bf16 tp+fsdp pass against the
# one-process dump of the same seed
add_test(NAME compare_hp_layouts
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_compare_layouts.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/compare_hp_layouts)
set_tests_properties(compare_hp_layouts PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2)

# several hosts, rehearsed on one: the MPI launcher hp was built with, a hostfile of localhost
# slots, the same losses bit for bit as hp's own launch
add_test(NAME multi_host_hostfile
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_multi_host.sh $<TARGET_FILE:hp> ${MPIEXEC_EXECUTABLE}
                 ${CMAKE_CURRENT_BINARY_DIR}/multi_host_hostfile)
set_tests_properties(multi_host_hostfile PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2)

# hp plan --ranks-per-node: Titan's layout keeps tp inside a node of 4 and sends dp_shard across
# nodes; with nodes of 8 every group of an 8-rank world stays inside; the stride summary of a
# big world and the --hw time model take the same node size
add_test(NAME plan_ranks_per_node_4
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/expect_exit.sh 0 -
                 "^nodes of 4 consecutive ranks \\(2 nodes\\): inside a node: tp; across nodes: world, dp_shard, fsdp"
                 -- $<TARGET_FILE:hp> plan --tp 2 --dp-shard 4 --ranks-per-node 4)
add_test(NAME plan_ranks_per_node_8
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/expect_exit.sh 0 -
                 "^nodes of 8 consecutive ranks \\(1 node\\): inside a node: world, dp_shard, tp, fsdp.*; across nodes: none"
                 -- $<TARGET_FILE:hp> plan --tp 2 --dp-shard 4 --ranks-per-node 8)
add_test(NAME plan_ranks_per_node_big
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/expect_exit.sh 0 -
                 "^  tp .* inside a node of 16$" "^  dp_shard .* across nodes of 16$"
                 "assume: nodes of 16 consecutive ranks"
                 -- $<TARGET_FILE:hp> plan --model llama3-8b --tp 8 --nproc 128 --batch 16 --memory --hw h100
                    --ranks-per-node 16)
set_tests_properties(plan_ranks_per_node_4 plan_ranks_per_node_8 plan_ranks_per_node_big PROPERTIES LABELS L0 TIMEOUT 60)

# hp compare's reduce-dtype check (docs/dump.md): hp's bf16 step on dp_shard 2, its partials
# summed in float32, passes when its result.json says float32; summed in bfloat16 under a
# float32 said, it fails naming the tensors (the fault torch_layout.py's --bug bf16-reduce makes)
add_test(NAME compare_reduce_dtype
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_compare_reduce_dtype.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/compare_reduce_dtype)
set_tests_properties(compare_reduce_dtype PROPERTIES LABELS L1 TIMEOUT 120 PROCESSORS 2)

# hp compare's byte-for-byte verdict (--bitwise; docs/dump.md): a rerun is identical and says
# so, another layout is within the tolerance and its first differing element is named in hex
add_test(NAME compare_bitwise
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_compare_bitwise.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/compare_bitwise)
set_tests_properties(compare_bitwise PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 2)
