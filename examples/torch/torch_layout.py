#!/usr/bin/env python3
"""torch_layout.py A OUT [hp run's degree flags] - step 1 of hp's model under PyTorch's own
parallelisms, written as a dump for `hp compare A OUT` (docs/torch.md).

Run it under torchrun (gloo, CPU), world = dp_replicate * dp_shard * cp * tp * pp:

    hp run --model tiny --steps 1 --dump A --quiet
    OMP_NUM_THREADS=1 torchrun --standalone --nproc-per-node 4 \
        examples/torch/torch_layout.py A T --dp-shard 2 --tp 2
    hp compare A T

It reads A's initial model, batch and config (docs/dump.md), builds the model of docs/model.md as
modules (layout_model.py) and parallelizes it the way TorchTitan's parallelize_llama does:

- init_device_mesh("cpu", ...) with TorchTitan's dim order (pp, dp_replicate, dp_shard, cp, tp),
  only the dims of degree > 1;
- tp: parallelize_module with TorchTitan's plan: tok_embeddings RowwiseParallel, the norms
  SequenceParallel, attention / feed_forward PrepareModuleInput (Shard(1) -> Replicate), wq/wk/wv
  and w1/w3 ColwiseParallel, wo and w2 RowwiseParallel(output_layouts=Shard(1)), output
  ColwiseParallel(Shard(1) -> Shard(-1)) with loss_parallel (--no-sp: Replicate everywhere, the
  norms plain);
- cp: context_parallel over the cp mesh, the tokens, labels and RoPE tables sharded along the
  sequence (its round-robin load balancer: head-tail chunks);
- dp: fully_shard per block and on the root over dp_shard (HSDP: the 2-D (dp_replicate, dp_shard)
  mesh; with cp, dp_shard and cp flattened as TorchTitan's dp_shard_cp), MixedPrecisionPolicy
  (param_dtype from --mixed-precision-param, reduce_dtype fp32);
- pp: torch.distributed.pipelining (pp_layout.py: a PipelineStage per stage, one or several per rank, under
  ScheduleGPipe, Schedule1F1B, ScheduleInterleaved1F1B or ScheduleZBVZeroBubble);
- --ac full: torch.utils.checkpoint per block (checkpoint_wrapper, as TorchTitan's full AC).
- MoE under tp and ep (--ep, --etp borrow those ranks): ep_layout.py, TorchTitan's
  apply_moe_ep_tp (ExpertParallel's all-to-all, ExpertTensorParallel, TensorParallel on the
  experts, the experts' own FSDP unit over (dp_replicate, efsdp)).

The loss is TorchTitan's token-sum loss: every rank's CE sum divided by the global count of valid
labels (counted over the batch mesh and cp), and the gradient reductions are sums (FSDP's
divide factor 1, as TorchTitan disables FSDP's gradient division). Then one optimizer step
(SGD lr, or AdamW as hp's --optimizer adamw) on the sharded parameters.

OUT gets A's model.safetensors and batch.safetensors, grads.safetensors (every gradient's
full_tensor(), F32, the model's order), params.safetensors (every parameter after the step,
full_tensor(), F32; hp compare ignores it, check_layout.sh checks it) and result.json (the loss,
precision, the layout, the framework, and the collectives CommDebugMode counted per op, and per op
and mesh dim: comm_count.py).

--bug NAME injects a fault PyTorch users make (docs/torch.md, "Faults"); --list-bugs names them.
Exit 2 with one line when PyTorch (or this program) cannot express the layout.
"""
import argparse
import contextlib
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layout_model import Transformer  # noqa: E402
from spec_model import BF, not_expressible, read_safetensors, write_step_dump  # noqa: E402
import ep_layout  # noqa: E402  (the MoE blocks under tp / ep: TorchTitan's apply_moe_ep_tp)

BUGS = {
    "sp-norm-grad": "tp+sp: the norms run on the local sequence shard with a plain (not DTensor) weight, "
                    "so their weight gradients are never reduced over tp (Megatron's sequence-parallel "
                    "norm all-reduce forgotten)",
    "loss-per-rank": "dp: each rank divides its CE sum by its own token count instead of the global one "
                     "(the gradients are summed, so they come out dp times too large)",
    "fsdp-divide": "dp: FSDP's default gradient mean (divide factor = dp degree) kept while the loss is "
                   "already divided by the global token count",
    "bf16-reduce": "bf16: MixedPrecisionPolicy(reduce_dtype=bfloat16) where the policy says float32",
    "norm-replicate": "tp+sp: the final norm left out of the plan (a plain weight on the Shard(1) "
                      "activation) and the output projection told its input is Replicate: DTensor keeps "
                      "the logits right, but norm.weight's gradient is one rank's tokens only",
    "cp-loss": "cp: the loss of each cp rank divided by its own tokens, the cp ranks' gradients "
               "then summed (the CP loss reduction skipped; TorchTitan #3280, #3329)",
    "pp-microbatch": "pp: the schedule's default scale_grads=True kept with a loss already divided by "
                     "the global token count (each microbatch's gradient divided again by M)",
    "pp-stage-order": "pp interleaved: rank r's chunk c built from the blocks of stage r*V+c (contiguous) "
                      "while declared stage c*P+r, the schedule's loop order: the blocks run out of order",
    **ep_layout.BUGS,
}


def fail2(msg):
    not_expressible("torch_layout", msg)


def parse():
    ap = argparse.ArgumentParser(description="step 1 of hp's model under PyTorch's parallelisms")
    ap.add_argument("src", nargs="?", help="hp's one-process dump (hp run --dump)")
    ap.add_argument("out", nargs="?", help="the dump folder to write")
    for d in ("dp-replicate", "dp-shard", "cp", "tp", "pp", "ep", "etp"):
        ap.add_argument("--" + d, type=int, default=1)
    ap.add_argument("--cp-rotate", default="allgather", choices=("allgather", "ring"))
    ap.add_argument("--cp-no-balance", action="store_true")
    ap.add_argument("--pp-schedule", default="1f1b")
    ap.add_argument("--dispatcher", default="alltoall", choices=("alltoall", "allgather"))
    ap.add_argument("--pp-microbatches", type=int, default=1)
    ap.add_argument("--pp-virtual", type=int, default=1)
    ap.add_argument("--model", default=None, help="checked against the dump's model name")
    ap.add_argument("--mixed-precision-param", default=None, choices=("float32", "bfloat16"),
                    help="default: the dump's precision")
    ap.add_argument("--ac", default="none")
    ap.add_argument("--microbatches", type=int, default=1, help="gradient accumulation steps")
    ap.add_argument("--max-norm", type=float, default=0.0)
    ap.add_argument("--reshard-after-forward", default="default", choices=("default", "always", "never"))
    ap.add_argument("--mixed-precision-reduce", default="float32", choices=("float32", "bfloat16"))
    ap.add_argument("--sp", dest="sp", action="store_true", default=None)
    ap.add_argument("--no-sp", dest="sp", action="store_false")
    ap.add_argument("--optimizer", default="sgd", choices=("sgd", "adamw"))
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--bug", default="none", help="inject a fault (--list-bugs)")
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
    if a.sp is None:
        a.sp = a.tp > 1
    return a


# ---- the mesh -------------------------------------------------------------------------------
def build_mesh(a, world):
    from torch.distributed.device_mesh import init_device_mesh
    dims = [("pp", a.pp), ("dp_replicate", a.dp_replicate), ("dp_shard", a.dp_shard), ("cp", a.cp), ("tp", a.tp)]
    prod = 1
    for _, n in dims:
        prod *= n
    if prod != world:
        fail2(f"the degrees multiply to {prod}, torchrun started {world} processes")
    # dp_replicate alone is DDP: FSDP2 over a (dp_replicate, dp_shard=1) mesh, HSDP that only
    # all-reduces (a 1-D dp_replicate mesh would shard); bf16 under tp without dp keeps a dp_shard
    # dim of 1 too, for FSDP2 to carry the MixedPrecisionPolicy beside tp (pp builds its own)
    bf16_tp = a.mixed_precision_param == "bfloat16" and a.tp > 1 and a.pp == 1
    used = [(n, d) for n, d in dims if d > 1 or (n == "dp_shard" and (a.dp_replicate > 1 or bf16_tp))] \
        or [("dp_shard", 1)]
    mesh = init_device_mesh("cpu", tuple(d for _, d in used), mesh_dim_names=tuple(n for n, _ in used))
    return mesh, [n for n, _ in used]


def coord(mesh, names, dim):
    return mesh.get_local_rank(dim) if dim in names else 0


def submesh(mesh, names, want):
    have = tuple(n for n in want if n in names)
    if not have:
        return None
    return mesh[have] if len(have) > 1 else mesh[have[0]]


# ---- tensor parallel: TorchTitan's plan ----------------------------------------------------------
def apply_tp(model, tp_mesh, sp, bug):
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)
    seq = Shard(1) if sp else Replicate()
    root = {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=seq),
        "output": ColwiseParallel(input_layouts=seq, output_layouts=Shard(-1), use_local_output=False),
    }
    if sp:
        root["norm"] = SequenceParallel()
    if bug == "norm-replicate":
        root["output"] = ColwiseParallel(input_layouts=Replicate(), output_layouts=Shard(-1), use_local_output=False)
        root["norm"] = LocalNorm(tp_mesh)
    parallelize_module(model, tp_mesh, {k: v for k, v in root.items() if getattr(model, k) is not None})
    for block in model.layers.values():
        plan = {
            "attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(), "attention.wv": ColwiseParallel(),
            "attention.wo": RowwiseParallel(output_layouts=seq),
        }
        if sp:
            plan["attention_norm"] = SequenceParallel()
            plan["ffn_norm"] = SequenceParallel()
            plan["attention"] = PrepareModuleInput(input_layouts=(Shard(1), None, None),
                                                   desired_input_layouts=(Replicate(), None, None))
            if bug == "sp-norm-grad":
                plan["attention_norm"] = LocalNorm(tp_mesh)
                plan["ffn_norm"] = LocalNorm(tp_mesh)
        if block.is_moe:   # the MoE part: ep_layout.parallelize_moe (TorchTitan's apply_moe_ep_tp)
            parallelize_module(block, tp_mesh, plan)
            continue
        plan.update({"feed_forward.w1": ColwiseParallel(), "feed_forward.w3": ColwiseParallel(),
                     "feed_forward.w2": RowwiseParallel(output_layouts=seq)})
        if sp:
            plan["feed_forward"] = PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
        parallelize_module(block, tp_mesh, plan)


def _local_norm_style():
    from torch.distributed.tensor.parallel.style import ParallelStyle
    return ParallelStyle


class LocalNorm(_local_norm_style()):
    """A ParallelStyle of the faults: the norm runs on the local tensor, its weight a plain
    parameter, its output wrapped again as a Shard(1) DTensor (from_local, no check)."""

    def __init__(self, mesh):
        super().__init__()
        self.mesh = mesh

    def _apply(self, module, mesh):
        from torch.distributed.tensor import DTensor, Shard

        def pre(_, args):
            x = args[0]
            return (x.to_local() if isinstance(x, DTensor) else x,) + tuple(args[1:])

        def post(_, args, out):
            return DTensor.from_local(out, mesh, (Shard(1),), run_check=False)
        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)
        return module


# ---- data parallel: FSDP2 / HSDP -------------------------------------------------------------------
def apply_fsdp(model, dp_mesh, a, moe=None):
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    param = BF if a.mixed_precision_param == "bfloat16" else torch.float32
    reduce = BF if a.bug == "bf16-reduce" or a.mixed_precision_reduce == "bfloat16" else torch.float32
    # hp's --reshard-after-forward: default frees the blocks' gathered weights after forward and
    # keeps the root's (as TorchTitan's default), always / never say it for every module
    blocks_reshard = a.reshard_after_forward != "never"
    root_reshard = {"default": a.pp == 1, "always": True, "never": False}[a.reshard_after_forward]
    mp = MixedPrecisionPolicy(param_dtype=param, reduce_dtype=reduce)
    mods = []
    for block in model.layers.values():
        if moe is not None:   # ep: the routed experts are their own unit over (dp_replicate, efsdp)
            moe.shard_experts(block, mp, blocks_reshard)
        mods.append(fully_shard(block, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=blocks_reshard))
    mods.append(fully_shard(model, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=root_reshard))
    for m in mods:
        # gloo has no PREMUL_SUM (a custom divide factor's op): sums, scaled before or after
        m.set_force_sum_reduction_for_comms(True)
        if a.bug != "fsdp-divide":
            # TorchTitan's token-sum loss: the loss is already divided by the global token count,
            # so the reductions must sum (TorchTitan's disable_fsdp_gradient_division)
            m.set_gradient_divide_factor(1.0)
    return mods


def apply_ac(model, mode):
    if mode == "none":
        return
    every = 1
    if mode != "full":
        # hp's every:N checkpoints block l when (l+1) % N == 0: TorchTitan's selective layer AC
        # (selective_ac_option "N") wraps every N-th block the same way
        try:
            assert mode.startswith("every:")
            every = int(mode[6:])
            assert every >= 1
        except (AssertionError, ValueError):
            fail2(f"--ac {mode}: none, full or every:N")
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    for k, block in list(model.layers.items()):
        if (int(k) + 1) % every == 0:
            model.layers[k] = checkpoint_wrapper(block, preserve_rng_state=False)


# ---- gathering the full tensors -----------------------------------------------------------------------
def full(t):
    from torch.distributed.tensor import DTensor
    if t is None:
        return None
    return (t.full_tensor() if isinstance(t, DTensor) else t).detach().float().clone()


def clean_name(n):
    # checkpoint_wrapper and FSDP/pipelining keep names except AC's wrapper prefix
    return n.replace("_checkpoint_wrapped_module.", "")


def main():
    a = parse()
    import logging
    import warnings
    warnings.filterwarnings("ignore")   # FSDP2's view-output and DTensor's redistribution advice
    logging.getLogger("torch.distributed.tensor._redistribute").setLevel(logging.ERROR)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    result = json.load(open(os.path.join(a.src, "result.json")))
    result.setdefault("precision", "float32")
    cfg = result["model"]
    if a.model and cfg.get("name") not in (None, a.model):
        sys.exit(f"torch_layout: --model {a.model}, but {a.src} holds {cfg.get('name')}")
    if a.mixed_precision_param is None:
        a.mixed_precision_param = result["precision"]
    if cfg.get("rope_scaling"):
        fail2("the dump's model rescales RoPE; layout_model.py has plain RoPE only")
    ep_layout.check(a, cfg)
    if a.ac != "none" and a.pp > 1:
        fail2("--ac with --pp is not written here")
    if a.sp and a.tp == 1:
        a.sp = False
    master = read_safetensors(os.path.join(a.src, "model.safetensors"))
    batch = read_safetensors(os.path.join(a.src, "batch.safetensors"))
    tokens, labels = batch["tokens"].long(), batch["labels"].long()
    B, S = tokens.shape
    dp = a.dp_replicate * a.dp_shard
    if (B // max(dp, 1)) % a.microbatches:
        fail2(f"--microbatches {a.microbatches} does not divide the rank's {B // max(dp, 1)} sequences")
    if a.microbatches > 1 and a.pp > 1:
        fail2("--microbatches (gradient accumulation) with --pp is not written here")
    if a.max_norm > 0 and a.pp > 1:
        fail2("--max-norm with --pp is not written here (the norm over the stages)")
    if B % dp:
        fail2(f"the batch ({B} sequences) does not split over dp_replicate*dp_shard = {dp}")
    for what, n in (("n_heads", cfg["n_heads"]), ("n_kv_heads", cfg["n_kv_heads"]), ("ffn_hidden", cfg["ffn_hidden"]),
                    ("vocab_size", cfg["vocab_size"]), ("moe_hidden", cfg.get("moe_hidden") or a.tp)):
        if n % a.tp:
            fail2(f"tp {a.tp} does not divide {what} {n}")
    if S % (2 * a.cp) and a.cp > 1:
        fail2(f"cp {a.cp}: the sequence ({S}) does not split into 2*cp head-tail chunks")

    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh, names = build_mesh(a, world)

    model = Transformer(cfg, S)
    with torch.no_grad():
        params = dict(model.named_parameters())
        if set(params) != set(master):
            sys.exit(f"torch_layout: the model's names differ from {a.src}'s: "
                     f"{sorted(set(params) ^ set(master))[:4]}")
        for n, p in params.items():
            p.copy_(master[n])

    # this rank's sequences: the batch mesh is (dp_replicate, dp_shard), contiguous blocks
    di = coord(mesh, names, "dp_replicate") * a.dp_shard + coord(mesh, names, "dp_shard")
    lo, hi = di * B // dp, (di + 1) * B // dp
    tok, lab = tokens[lo:hi].contiguous(), labels[lo:hi].contiguous()
    n_global = int((labels != -100).sum())
    n_local = int((lab != -100).sum())

    if a.pp > 1:
        from pp_layout import run_pp   # the pipeline's own file
        loss, gathered = run_pp(a, model, mesh, names, tok, lab, n_global, n_local)
    else:
        loss, gathered = run_spmd(a, model, mesh, names, tok, lab, n_global, n_local, cfg)

    if rank == 0:
        write_out(a, result, loss, gathered, world)
    dist.barrier()
    dist.destroy_process_group()


def run_spmd(a, model, mesh, names, tok, lab, n_global, n_local, cfg):
    import comm_count
    tp_mesh = submesh(mesh, names, ("tp",))
    cp_mesh = submesh(mesh, names, ("cp",))
    if a.tp > 1:
        apply_tp(model, tp_mesh, a.sp, a.bug)
    fsdp_dims = [n for n in ("dp_replicate", "dp_shard", "cp") if n in names]
    bf16 = a.mixed_precision_param == "bfloat16"
    dp_mesh = None
    moe = ep_layout.parallelize_moe(a, model, mesh, names, dist.get_world_size(), bool(fsdp_dims or bf16))
    apply_ac(model, a.ac)
    if fsdp_dims or bf16:
        if "cp" in names:   # TorchTitan: FSDP shards over dp_shard and cp flattened
            shard = [n for n in ("dp_shard", "cp") if n in names]
            flat = mesh[tuple(shard)]._flatten("dp_shard_cp") if len(shard) > 1 else mesh["cp"]
            dp_mesh = mesh[("dp_replicate", "dp_shard_cp")] if "dp_replicate" in names else flat
            if "dp_replicate" in names and len(shard) == 1:
                dp_mesh = mesh[("dp_replicate", "cp")]
        elif fsdp_dims:
            dp_mesh = submesh(mesh, names, ("dp_replicate", "dp_shard"))
        else:   # bf16 without dp: FSDP2 on a 1-rank mesh carries the MixedPrecisionPolicy
            dp_mesh = mesh
        apply_fsdp(model, dp_mesh, a, moe)
    elif a.bug in ("fsdp-divide", "bf16-reduce", "loss-per-rank"):
        fail2(f"--bug {a.bug} needs data parallelism")
    if a.bug == "sp-norm-grad" and not a.sp:
        fail2("--bug sp-norm-grad needs --tp > 1 with sequence parallel")
    if a.bug == "cp-loss" and a.cp == 1:
        fail2("--bug cp-loss needs --cp > 1")
    if a.bug in ("pp-microbatch", "pp-stage-order"):
        fail2(f"--bug {a.bug} needs --pp > 1")

    if a.cp > 1:
        import cp_cpu   # PyTorch's ring attention given the CPU kernel (cp_cpu.py says why)
        cp_cpu.enable()
        cp_cpu.options(a.cp_rotate, not a.cp_no_balance)
    fsdp_groups = [] if dp_mesh is None else [(dp_mesh.mesh_dim_names[0] if dp_mesh.ndim == 1 else "fsdp", dp_mesh)]
    comm = comm_count.Comms(comm_count.mesh_groups(mesh, names, fsdp_groups))
    loss_ctx = contextlib.nullcontext   # a context per microbatch (loss_parallel's is single-use)
    if a.tp > 1:
        from torch.distributed.tensor.parallel import loss_parallel
        loss_ctx = loss_parallel
    from torch.distributed.tensor import DTensor
    lv = torch.zeros(1, dtype=torch.float64)
    # gradient accumulation (--microbatches): the rank's sequences in M pieces, one backward each,
    # every piece's CE sum divided by the global token count, so the accumulated gradient is the step's
    with comm:
        for mtok, mlab in zip(tok.chunk(a.microbatches), lab.chunk(a.microbatches)):
            mtok, mlab = mtok.contiguous(), mlab.contiguous()
            denom = n_local if a.bug == "loss-per-rank" else n_global
            cp_ctx = contextlib.nullcontext()
            if a.cp > 1:   # the piece's tokens, labels and the RoPE tables sharded along the sequence
                from torch.distributed.tensor.experimental import context_parallel
                cp_ctx = context_parallel(cp_mesh, buffers=[mtok, mlab, model.rope_cos, model.rope_sin],
                                          buffer_seq_dims=[1, 1, 0, 0], no_restore_buffers={mtok, mlab})
            with cp_ctx:
                if a.bug == "cp-loss":
                    denom = int((mlab != -100).sum())   # this cp rank's own tokens (inside the cp shard)
                logits = model(mtok)
                with loss_ctx():
                    ce = F.cross_entropy(logits.flatten(0, 1).float(), mlab.flatten(0, 1), ignore_index=-100,
                                         reduction="sum")
                    loss = ce / denom
                    loss.backward()
            lv += (loss.full_tensor() if isinstance(loss, DTensor) else loss).detach().double().reshape(1)
    counts, by_dim = comm.counts()
    # the global loss: the local terms summed over the ranks that hold different tokens
    for d in ("dp_replicate", "dp_shard", "cp"):
        if d in names:
            dist.all_reduce(lv, group=mesh[d].get_group())
    grads = {clean_name(n): full(p.grad) if p.grad is not None else torch.zeros(p.shape)
             for n, p in model.named_parameters()}
    if a.max_norm > 0:
        clip(model, a.max_norm)
    opt = make_opt(a, model)
    opt.step()
    after = {clean_name(n): full(p) for n, p in model.named_parameters()}
    return lv.item(), {"grads": grads, "params": after, "collectives": counts, "collectives_by_dim": by_dim}


def clip(model, max_norm):
    """--max-norm: torch's clip_grad_norm_ over the sharded gradients, as TorchTitan clips (the
    DTensor norm made full; the dumped gradients stay the unclipped ones)."""
    from torch.distributed.tensor import DTensor
    # the gradients on each mesh apart (under ep the experts' mesh is another one, and DTensor
    # cannot stack norms across meshes), each group's norm made full, then the groups' combined:
    # TorchTitan's clip_grad_norm_ with ep does the same
    groups = {}
    for p in model.parameters():
        if p.grad is not None:
            key = id(p.grad.device_mesh) if isinstance(p.grad, DTensor) else None
            groups.setdefault(key, []).append(p.grad)
    sq = torch.zeros((), dtype=torch.float32)
    for grads in groups.values():
        norm = torch.nn.utils.get_total_norm(grads, foreach=False)
        sq = sq + (norm.full_tensor() if isinstance(norm, DTensor) else norm) ** 2
    torch.nn.utils.clip_grads_with_norm_(model.parameters(), max_norm, sq.sqrt(), foreach=False)


def make_opt(a, model):
    if a.optimizer == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                                 foreach=False)
    return torch.optim.SGD(model.parameters(), lr=a.lr, foreach=False)


def write_out(a, result, loss, g, world):
    out = a.out
    layout = {"dp_replicate": a.dp_replicate, "dp_shard": a.dp_shard, "cp": a.cp, "tp": a.tp, "pp": a.pp,
              "ep": a.ep, "etp": a.etp, "sequence_parallel": bool(a.sp), "world": world}
    lay = " ".join(f"{k} {v}" for k, v in layout.items() if k not in ("world", "sequence_parallel") and v > 1)
    if a.pp > 1:
        lay += f" {a.pp_schedule} M={a.pp_microbatches}"
    if a.tp > 1:
        lay += " sp" if a.sp else " no-sp"
    fw = f"torch {torch.__version__} layout ({lay or 'one process'}) on gloo"
    if a.bug != "none":
        fw += f", bug {a.bug}"
    res = {"loss": loss, "precision": a.mixed_precision_param, "framework": fw, "model": result["model"],
           "parallel": layout, "run": result.get("run", {}), "optimizer": {"name": a.optimizer, "lr": a.lr},
           "collectives": g.get("collectives", {}), "collectives_by_dim": g.get("collectives_by_dim", {}),
           "bug": a.bug, "ac": a.ac,
           # what the policy says the gradient reduction sums in, over how many ranks' partials
           # (hp compare checks the gradients' bits against it)
           "reduce": {"dtype": a.mixed_precision_reduce,
                      "partials": a.dp_replicate * a.dp_shard * (a.cp if a.pp == 1 else 1)}}
    write_step_dump(a.src, out, g["grads"], g["params"], res)
    print(f"torch_layout: {out}: loss {loss:.9f} ({fw}, {a.mixed_precision_param}); collectives "
          + (", ".join(f"{k} {v}" for k, v in sorted(g.get("collectives", {}).items())) or "none counted"))


if __name__ == "__main__":
    main()
