#!/usr/bin/env python3
"""torchtitan_layout.py A OUT [--dp-replicate N] [--dp-shard N] [--tp N] [--bug NAME] - step 1 of
TorchTitan's own Llama 3 model, parallelized by TorchTitan's own parallelize_llama, written as a
dump for `hp compare A OUT` (docs/torch.md, "TorchTitan itself").

Run it under torchrun (gloo, CPU), world = dp_replicate * dp_shard * tp:

    hp run --model tiny --steps 1 --dump A --quiet
    OMP_NUM_THREADS=1 torchrun --standalone --nproc-per-node 2 \
        examples/torch/torchtitan_layout.py A T --dp-shard 2
    hp compare A T

What is TorchTitan's and what is this file's:

- the model: torchtitan.models.llama3's Transformer and TransformerModelArgs, with A's shape
  (result.json "model"). TorchTitan derives the FFN width from dim: int(2 * 4 * dim / 3), times
  ffn_dim_multiplier, rounded up to multiple_of; multiple_of = F and ffn_dim_multiplier =
  F / int(8 * dim / 3) give hp's F exactly (checked on w1's shape). RoPE: TorchTitan's complex
  freqs_cis over interleaved pairs (view_as_complex of (x[2j], x[2j+1])) is hp's rotation
  (docs/model.md); its Llama 3.1 frequency scaling is made a no-op by an original context longer
  than every wavelength (original_max_position_embeddings = 2^20), as hp's models have plain RoPE.
  A's initial parameters are copied in by name (TorchTitan's names are hp's).
- the layout: torchtitan.distributed.ParallelDims(...).build_mesh() and
  torchtitan.models.llama3.parallelize_llama(model, parallel_dims, job_config) with a default
  JobConfig (activation_checkpoint.mode "none", fp32 param and reduce dtypes, loss parallel on).
  Two CPU patches, both outside TorchTitan's math: ParallelDims' mesh device ("cuda" when no
  accelerator is found: torchtitan.tools.utils.device_type) is set to "cpu", and FSDP's reductions
  are forced to plain sums (set_force_sum_reduction_for_comms), since gloo refuses the
  PREMUL_SUM that TorchTitan's divide factor 1.0 would use.
- the step: TorchTitan's train_step for one microbatch: the batch split over the batch mesh,
  global_valid_tokens = dist_sum(local valid labels, batch mesh), loss =
  cross_entropy_loss(pred, labels) (TorchTitan's token sum) / global_valid_tokens under
  get_train_context(loss_parallel), backward, then SGD (lr) on the sharded parameters.

--bug NAME injects a fault (--list-bugs). Exit 2 with one line when the layout is not expressible.
OUT gets the files torch_layout.py writes (grads.safetensors, params.safetensors, result.json).
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spec_model import not_expressible, read_safetensors, write_step_dump  # noqa: E402

BUGS = {
    "loss-per-rank": "dp: each rank divides its CE sum by its own valid labels instead of TorchTitan's "
                     "global_valid_tokens (the FSDP reductions sum, so every gradient is dp times too large)",
    "fsdp-divide": "dp: FSDP's default gradient mean (divide factor = dp) put back after parallelize_llama "
                   "disabled it, while the loss is already divided by global_valid_tokens",
    "cp-loss": "cp: the valid labels counted after CP sharded them (each cp rank its own shard's), so the "
               "CP loss reduction divides by a per-rank count (TorchTitan #3280, #3329)",
}


def fail2(msg):
    not_expressible("torchtitan_layout", msg)


def parse():
    ap = argparse.ArgumentParser(description="step 1 of TorchTitan's Llama 3 under its own parallelize_llama")
    ap.add_argument("src", nargs="?")
    ap.add_argument("out", nargs="?")
    for d in ("dp-replicate", "dp-shard", "tp", "cp", "pp"):
        ap.add_argument("--" + d, type=int, default=1)
    ap.add_argument("--cp-rotate", default="allgather", choices=("allgather", "ring"))
    ap.add_argument("--ac", default="none")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--bug", default="none")
    ap.add_argument("--list-bugs", action="store_true")
    a = ap.parse_args()
    if a.list_bugs:
        for k, v in BUGS.items():
            print(f"{k}: {v}")
        sys.exit(0)
    if not a.src or not a.out:
        ap.error("A and OUT are required")
    if a.bug != "none" and a.bug not in BUGS:
        ap.error(f"--bug {a.bug}: one of {', '.join(BUGS)}")
    return a


def tt_model(cfg, seq_len):
    from torchtitan.models.llama3 import Transformer, TransformerModelArgs
    from torchtitan.models.llama3.model.args import RoPEScalingArgs
    D, F = cfg["dim"], cfg["ffn_hidden"]
    base = int(2 * 4 * D / 3)
    args = TransformerModelArgs(
        dim=D, n_layers=cfg["n_layers"], n_heads=cfg["n_heads"], n_kv_heads=cfg["n_kv_heads"],
        vocab_size=cfg["vocab_size"], multiple_of=F, ffn_dim_multiplier=F / base, norm_eps=cfg["norm_eps"],
        rope_theta=cfg["rope_theta"], rope_scaling_args=RoPEScalingArgs(original_max_position_embeddings=1 << 20),
        max_seq_len=seq_len, depth_init=True, attn_type="sdpa", attn_mask_type="causal")
    model = Transformer(args)
    got = model.layers["0"].feed_forward.w1.weight.shape[0]
    if got != F:
        fail2(f"TorchTitan's FFN width came out {got}, hp's is {F} (multiple_of {F}, ffn_dim_multiplier {F / base})")
    return model


def main():
    a = parse()
    import logging
    import warnings
    warnings.filterwarnings("ignore")
    logging.getLogger("torchtitan").setLevel(logging.WARNING)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    torch.set_num_threads(1)
    result = json.load(open(os.path.join(a.src, "result.json")))
    cfg = result["model"]
    prec = result.get("precision", "float32")
    if prec == "bfloat16" and a.dp_shard * a.cp == 1:
        fail2("bf16 without FSDP: TorchTitan then trains under torch.autocast (maybe_enable_amp), not hp's "
              "bf16 policy, which is FSDP's MixedPrecisionPolicy: give --dp-shard or --cp > 1")
    if a.ac not in ("none", "full"):
        fail2(f"--ac {a.ac}: TorchTitan's full AC is run here; its selective AC is op- or layer-based")
    if cfg.get("num_experts", 0) > 0:
        fail2("an MoE model: this file builds torchtitan.models.llama3 (dense) only")
    if cfg.get("rope_scaling"):
        fail2("the dump's model rescales RoPE")
    if a.pp > 1:
        fail2("pp: TorchTitan's pipeline_llm is not driven here (torch_layout.py / pp_layout.py prove "
              "torch.distributed.pipelining)")
    import torchtitan.distributed.parallel_dims as tt_pd
    from torchtitan.components.loss import build_cross_entropy_loss
    from torchtitan.config import JobConfig
    from torchtitan.distributed import ParallelDims
    from torchtitan.distributed import utils as dist_utils
    from torchtitan.models.llama3 import parallelize_llama

    master = read_safetensors(os.path.join(a.src, "model.safetensors"))
    batch = read_safetensors(os.path.join(a.src, "batch.safetensors"))
    tokens, labels = batch["tokens"].long(), batch["labels"].long()
    B, S = tokens.shape
    dp = a.dp_replicate * a.dp_shard
    if a.dp_replicate * a.dp_shard * a.cp * a.tp != world:
        fail2(f"the degrees multiply to {dp * a.cp * a.tp}, torchrun started {world} processes")
    if a.cp > 1 and S % (2 * a.cp * a.tp):
        fail2(f"cp {a.cp}: 2*cp*tp = {2 * a.cp * a.tp} does not divide the sequence ({S})")
    if B % dp:
        fail2(f"the batch ({B} sequences) does not split over dp = {dp}")
    for what in ("n_heads", "n_kv_heads", "ffn_hidden", "vocab_size"):
        if cfg[what] % a.tp:
            fail2(f"tp {a.tp} does not divide {what} {cfg[what]}")
    if a.bug == "cp-loss" and a.cp == 1:
        fail2("--bug cp-loss needs --cp > 1")
    if a.bug not in ("none", "cp-loss") and dp == 1:
        fail2(f"--bug {a.bug} needs data parallelism")

    dist.init_process_group("gloo", rank=rank, world_size=world)
    # CPU patch 1: TorchTitan builds its meshes on torchtitan.tools.utils.device_type, "cuda"
    # when torch finds no accelerator
    tt_pd.device_type = "cpu"
    pdims = ParallelDims(dp_replicate=a.dp_replicate, dp_shard=a.dp_shard, cp=a.cp, tp=a.tp, pp=1, ep=1, etp=1,
                         world_size=world)
    if a.cp > 1:
        # CPU patch 3: context parallel's ring attention knows CUDA's kernels only; cp_cpu.py gives
        # it the CPU one, before parallelize_llama turns the CP dispatcher on
        import cp_cpu
        cp_cpu.enable()
        cp_cpu.options(a.cp_rotate, True)
    pdims.build_mesh()

    torch.manual_seed(0)
    model = tt_model(cfg, S)
    with torch.no_grad():
        params = dict(model.named_parameters())
        if set(params) != set(master):
            sys.exit(f"torchtitan_layout: TorchTitan's names differ from {a.src}'s: "
                     f"{sorted(set(params) ^ set(master))[:4]}")
        for n, p in params.items():
            p.copy_(master[n])

    jc = JobConfig()
    jc.training.seq_len = S
    jc.training.mixed_precision_param = prec
    jc.training.mixed_precision_reduce = "float32"
    jc.activation_checkpoint.mode = a.ac
    jc.compile.enable = False
    jc.parallelism.disable_loss_parallel = False
    model = parallelize_llama(model, pdims, jc)
    from torch.distributed.fsdp import FSDPModule
    for m in model.modules():
        if isinstance(m, FSDPModule):
            m.set_force_sum_reduction_for_comms(True)   # CPU patch 2: gloo has no PREMUL_SUM
            if a.bug == "fsdp-divide":
                m.set_gradient_divide_factor(float(pdims.fsdp_gradient_divide_factor))

    # this rank's sequences: TorchTitan's dataloader splits the global batch over the batch mesh
    bi = pdims.get_mesh("batch").get_local_rank() if dp > 1 else 0
    lo, hi = bi * B // dp, (bi + 1) * B // dp
    tok, lab = tokens[lo:hi].contiguous(), labels[lo:hi].contiguous()
    local_valid = (lab != -100).sum()
    if dp > 1:
        global_valid = torch.tensor(dist_utils.dist_sum(local_valid.float(), pdims.get_mesh("batch")))
    else:
        global_valid = local_valid.float()
    denom = local_valid.float() if a.bug == "loss-per-rank" else global_valid
    extra = {}
    if a.cp > 1:   # as Trainer.post_dataloading_process: tokens, labels and positions sharded (head-tail)
        from torchtitan.distributed.context_parallel import prepare_context_parallel_input
        tok, lab, extra = prepare_context_parallel_input(tok, lab, extra, pdims.get_mesh("cp"), torch.device("cpu"),
                                                         jc.parallelism.context_parallel_load_balancer)
        if a.bug == "cp-loss":
            denom = (lab != -100).sum().float()

    loss_fn = build_cross_entropy_loss(jc)
    train_context = dist_utils.get_train_context(pdims.tp_enabled and not jc.parallelism.disable_loss_parallel)
    with train_context():
        pred = model(tok, **extra)
        loss = loss_fn(pred, lab) / denom
        del pred
        loss.backward()
    from torch.distributed.tensor import DTensor
    lv = (loss.full_tensor() if isinstance(loss, DTensor) else loss).detach().double().reshape(1)
    if dp * a.cp > 1:
        dist.all_reduce(lv, group=pdims.get_mesh("loss").get_group())

    def full(t):
        return (t.full_tensor() if isinstance(t, DTensor) else t).detach().float().clone()

    def plain(n):   # TorchTitan's AC wraps each block (checkpoint_wrapper): its names, less the wrapper
        return n.replace("_checkpoint_wrapped_module.", "")

    grads = {plain(n): full(p.grad) if p.grad is not None else torch.zeros(p.shape)
             for n, p in model.named_parameters()}
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, foreach=False)
    opt.step()
    after = {plain(n): full(p) for n, p in model.named_parameters()}
    if rank == 0:
        write_out(a, result, lv.item(), grads, after, world, int(global_valid.item()), prec)
    dist.barrier()
    dist.destroy_process_group()


def write_out(a, result, loss, grads, after, world, n_global, prec):
    import torchtitan
    out = a.out
    layout = {"dp_replicate": a.dp_replicate, "dp_shard": a.dp_shard, "cp": a.cp, "tp": a.tp, "pp": 1, "ep": 1,
              "etp": 1, "sequence_parallel": a.tp > 1, "world": world}
    lay = " ".join(f"{k} {v}" for k, v in layout.items() if k not in ("world", "sequence_parallel") and v > 1)
    ver = getattr(torchtitan, "__version__", None)
    if not ver:
        from importlib.metadata import version
        ver = version("torchtitan")
    fw = f"torchtitan {ver} ({lay or 'one process'}; torch {torch.__version__.split('+')[0]}, gloo)"
    if a.bug != "none":
        fw += f", bug {a.bug}"
    res = {"loss": loss, "precision": prec, "framework": fw, "model": result["model"], "parallel": layout,
           "run": result.get("run", {}), "optimizer": {"name": "sgd", "lr": a.lr}, "bug": a.bug, "ac": a.ac,
           "global_valid_tokens": n_global,
           # TorchTitan's mixed_precision_reduce, over the FSDP mesh (hp compare checks the bits)
           "reduce": {"dtype": "float32", "partials": a.dp_replicate * a.dp_shard * a.cp}}
    write_step_dump(a.src, out, grads, after, res)
    print(f"torchtitan_layout: {out}: loss {loss:.9f} ({fw})")


if __name__ == "__main__":
    main()
