# torch2.cmake - PyTorch's own parallelisms proven by hp (docs/torch.md, issue 39):
# examples/torch/check_layout.sh runs hp's one-process dump, the layout under torchrun (FSDP2,
# HSDP, DTensor TP/SP, MixedPrecisionPolicy, pipelining; torch_layout.py; MoE under tp and ep,
# ep_layout.py) and hp compare.
# torch 2 lives in its own venv (scripts/setup_torch2.sh, installed from PyPI when missing); where
# pip cannot reach PyPI every test here is skipped (77), never passed. The build and the C tests
# never need it. Each test runs at most 4 ranks of the tiny model on gloo, one thread each
# (torch2_pp_hsdp_tp2_interleaved, hp's recipe P8, runs 8).
include(${CMAKE_SOURCE_DIR}/tests/cmake/outside_layout_cases.cmake)
# NAME:LABEL:WANT:TENSOR:FLAGS (tests/cmake/outside_layout_cases.cmake)
set(HP_TORCH2_CASES
  "torch2_fsdp2:L0:0:-:--dp-shard,2"
  "torch2_not_expressible:L0:2:-:--model,tiny-moe,--dp-shard,2,--ep,2,--dispatcher,allgather"
  "torch2_tp2_sp:L1:0:-:--tp,2"
  "torch2_tp2_nosp:L1:0:-:--tp,2,--no-sp"
  "torch2_fsdp2_tp2:L1:0:-:--dp-shard,2,--tp,2"
  "torch2_hsdp:L1:0:-:--dp-replicate,2,--dp-shard,2"
  "torch2_ddp:L1:0:-:--dp-replicate,2"
  "torch2_fsdp2_bf16:L0:0:-:--dp-shard,2,--mixed-precision-param,bfloat16"
  "torch2_tp2_bf16:L1:0:-:--tp,2,--mixed-precision-param,bfloat16"
  "torch2_ac_every2:L1:0:-:--dp-shard,2,--tp,2,--ac,every:2"
  "torch2_fsdp2_ac:L1:0:-:--dp-shard,2,--ac,full"
  "torch2_moe_fsdp2:L1:0:-:--model,tiny-moe,--dp-shard,2"
  "torch2_moe_tp2:L1:0:-:--model,tiny-moe,--tp,2"
  "torch2_moe_fsdp2_tp2:L1:0:-:--model,tiny-moe,--dp-shard,2,--tp,2"
  "torch2_ep_aep:L1:0:-:--model,tiny-moe,--dp-shard,2,--ep,2,--etp,1"
  "torch2_ep_s1:L1:0:-:--model,tiny-moe,--dp-shard,4,--ep,4"
  "torch2_ep_s1b:L1:0:-:--model,tiny-moe,--dp-shard,2,--tp,2,--sp,--ep,4,--etp,1"
  "torch2_ep_s2:L1:0:-:--model,tiny-moe,--dp-shard,2,--tp,2,--sp,--ep,2,--etp,2"
  "torch2_ep_efsdp2:L1:0:-:--model,tiny-moe,--dp-shard,4,--ep,2"
  "torch2_pp_gpipe:L1:0:-:--pp,2,--pp-schedule,gpipe,--pp-microbatches,2"
  "torch2_pp_1f1b:L1:0:-:--pp,2,--pp-schedule,1f1b,--pp-microbatches,4"
  "torch2_cp2:L1:0:-:--cp,2"
  "torch2_cp2_ring_tp2:L0:0:-:--cp,2,--tp,2,--cp-rotate,ring"
  "torch2_fsdp2_cp2_bf16:L1:0:-:--dp-shard,2,--cp,2,--mixed-precision-param,bfloat16"
  "torch2_ga_clip:L1:0:-:--dp-shard,2,--tp,2,--microbatches,2,--max-norm,0.1"
  "torch2_ep_clip:L1:0:-:--model,tiny-moe,--dp-shard,2,--tp,2,--sp,--ep,4,--etp,1,--max-norm,0.1"
  "torch2_ep_cp2:L1:0:-:--model,tiny-moe,--dp-shard,2,--cp,2,--ep,4"
  "torch2_ep_etp_cp2_tp2:L1:0:-:--model,tiny-moe,--cp,2,--tp,2,--sp,--ep,2,--etp,2"
  "torch2_bug_cp_loss:L1:1:norm\\.weight:--cp,2,--bug,cp-loss"
  "torch2_bug_bf16_reduce:L1:1:output\\.weight:--dp-shard,2,--mixed-precision-param,bfloat16,--bug,bf16-reduce"
  "torch2_bug_pp_microbatch:L1:1:output\\.weight:--pp,2,--pp-microbatches,2,--bug,pp-microbatch"
  "torch2_bug_sp_norm_grad:L1:1:layers\\.[01]\\.(attention|ffn)_norm\\.weight:--tp,2,--bug,sp-norm-grad"
  "torch2_bug_loss_per_rank:L1:1:output\\.weight:--dp-shard,2,--bug,loss-per-rank"
  "torch2_bug_fsdp_divide:L1:1:output\\.weight:--dp-shard,2,--bug,fsdp-divide"
  "torch2_bug_norm_replicate:L1:1:norm\\.weight:--tp,2,--bug,norm-replicate"
  "torch2_pp_gpipe_l4:L1:0:-:--pp,2,--layers,4,--pp-schedule,gpipe,--pp-microbatches,4"
  "torch2_pp4_1f1b:L1:0:-:--pp,4,--layers,4,--pp-schedule,1f1b,--pp-microbatches,8,--batch,8"
  "torch2_pp_interleaved:L0:0:-:--pp,2,--layers,4,--pp-schedule,interleaved-1f1b,--pp-virtual,2,--pp-microbatches,4"
  "torch2_pp_zbv:L0:0:-:--pp,2,--layers,4,--pp-schedule,zbv,--pp-microbatches,4"
  "torch2_pp_uneven:L1:0:-:--pp,2,--layers,5,--pp-schedule,interleaved-1f1b,--pp-virtual,2,--pp-microbatches,4"
  "torch2_pp_fsdp2:L0:0:-:--dp-shard,2,--pp,2,--layers,4,--pp-schedule,1f1b,--pp-microbatches,4"
  "torch2_pp_fsdp2_zbv:L1:0:-:--dp-shard,2,--pp,2,--layers,4,--pp-schedule,zbv,--pp-microbatches,4"
  "torch2_pp_tp2:L1:0:-:--tp,2,--pp,2,--sp,--layers,4,--pp-schedule,1f1b,--pp-microbatches,4"
  "torch2_pp_hsdp_tp2_interleaved:L1:0:-:--dp-replicate,2,--tp,2,--pp,2,--sp,--layers,4,--pp-schedule,interleaved-1f1b,--pp-virtual,2,--pp-microbatches,4"
  "torch2_pp_bf16:L1:0:-:--pp,2,--layers,4,--pp-schedule,1f1b,--pp-microbatches,4,--mixed-precision-param,bfloat16"
  "torch2_pp_fsdp2_bf16:L1:0:-:--dp-shard,2,--pp,2,--layers,4,--pp-schedule,1f1b,--pp-microbatches,4,--mixed-precision-param,bfloat16"
  "torch2_pp_not_expressible:L1:2:-:--pp,2,--layers,4,--pp-schedule,1f1b,--pp-microbatches,1"
  "torch2_bug_pp_stage_order:L1:1:layers\\.[12]\\.attention\\.wo\\.weight:--pp,2,--layers,4,--pp-schedule,interleaved-1f1b,--pp-virtual,2,--pp-microbatches,4,--bug,pp-stage-order"
  "torch2_bug_ep_combine_twice:L1:1:layers\\.[01]\\.moe\\.experts\\.w[123]:--model,tiny-moe,--dp-shard,2,--ep,2,--bug,ep-combine-twice"
  "torch2_bug_expert_divide:L1:1:layers\\.[01]\\.moe\\.experts\\.w[123]:--model,tiny-moe,--dp-shard,2,--ep,2,--bug,expert-divide"
  "torch2_bug_router_replicate:L1:1:layers\\.[01]\\.moe\\.router\\.gate\\.weight:--model,tiny-moe,--tp,2,--bug,router-replicate")
hp_outside_layout_tests(check_layout torch2 ${HP_TORCH2_CASES})

# TorchTitan itself (docs/torch.md, "TorchTitan itself"): torchtitan.models.llama3's model under
# torchtitan's own parallelize_llama and ParallelDims (examples/torch/check_torchtitan.sh). Skipped
# (77) where torchtitan does not import in the torch 2 venv; pinned to 0.2.2, the last release
# with TOML job files (docs/torch.md says how to install it).
# NAME:LABEL:WANT:TENSOR:FLAGS as above
set(HP_TORCHTITAN_CASES
  "torchtitan_one:L1:0:-:--dp-shard,1"
  "torchtitan_fsdp2:L0:0:-:--dp-shard,2"
  "torchtitan_tp2:L0:0:-:--tp,2"
  "torchtitan_cp2:L0:0:-:--cp,2"
  "torchtitan_fsdp2_cp2:L1:0:-:--dp-shard,2,--cp,2"
  "torchtitan_cp2_tp2_ring:L1:0:-:--cp,2,--tp,2,--cp-rotate,ring"
  "torchtitan_bug_cp_loss:L1:1:norm\\.weight:--cp,2,--bug,cp-loss"
  "torchtitan_bug_fsdp_divide:L1:1:output\\.weight:--dp-shard,2,--bug,fsdp-divide"
  "torchtitan_bug_loss_per_rank:L1:1:output\\.weight:--dp-shard,2,--bug,loss-per-rank"
  "torchtitan_fsdp2_bf16:L1:0:-:--dp-shard,2,--mixed-precision-param,bfloat16"
  "torchtitan_fsdp2_cp2_bf16_ac:L1:0:-:--dp-shard,2,--cp,2,--mixed-precision-param,bfloat16,--ac,full")
hp_outside_layout_tests(check_torchtitan torch2 ${HP_TORCHTITAN_CASES})
