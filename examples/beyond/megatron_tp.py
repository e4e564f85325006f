#!/usr/bin/env python3
"""megatron_tp.py A OUT [--tp N] [--lr LR] - step 1 of hp's model under Megatron-Core's tensor
parallelism (megatron.core.tensor_parallel), on the CPU over gloo, written as a dump for
`hp compare A OUT` (docs/beyond_pytorch.md).

    hp run --model tiny --steps 1 --dump A --quiet
    DS_ACCELERATOR=cpu OMP_NUM_THREADS=1 python -m torch.distributed.run --standalone \
        --nproc-per-node 2 examples/beyond/megatron_tp.py A T --tp 2
    hp compare A T

The model is examples/torch/layout_model.py's (docs/model.md, TorchTitan's names) with its
linears swapped for Megatron's: wq, wk, wv, w1 and w3 are ColumnParallelLinear (output
features split over tp, gather_output=False), wo and w2 RowParallelLinear (input_is_parallel,
the partial sums all-reduced over tp in Megatron's forward) - the Megatron-LM layout of a
transformer layer without sequence parallelism. tok_embeddings, the norms and output stay
replicated (their gradients are the same on every tp rank: the activations they see are).
Megatron's own process groups come from parallel_state.initialize_model_parallel over gloo; the
layers are built with ModelParallelConfig(use_cpu_initialization=True, perform_initialization=
False) and loaded with A's weights, each rank its shard.

The loss is the token-mean CE of model.md over the whole batch (every tp rank sees it all), one
SGD step (lr, no clipping) on the shards. OUT gets A's model and batch, grads.safetensors (the
shards all-gathered over tp into the full tensors, the dump's names and order),
params.safetensors (after the step, likewise) and result.json (loss, layout, framework).
"""
import argparse
import json
import os
import sys
import warnings

import torch
import torch.distributed as dist

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "torch"))
from layout_model import Transformer  # noqa: E402
from spec_model import not_expressible, read_safetensors, write_step_dump  # noqa: E402

COLUMN = ("attention.wq", "attention.wk", "attention.wv", "feed_forward.w1", "feed_forward.w3")
ROW = ("attention.wo", "feed_forward.w2")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.01)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")   # Transformer Engine / Apex missing: Megatron's fallbacks
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world != a.tp:
        sys.exit(f"megatron_tp: run with --nproc-per-node {a.tp} (world {world})")
    torch.set_num_threads(1)
    result = json.load(open(os.path.join(a.src, "result.json")))
    cfg = result["model"]
    if cfg.get("num_experts", 0):
        not_expressible("megatron_tp", "MoE models: only the dense linears are swapped for Megatron's here")
    if result.get("precision", "float32") != "float32":
        not_expressible("megatron_tp", "fp32 dumps only (bf16 is not written here)")
    for what in ("n_heads", "n_kv_heads", "ffn_hidden"):
        if cfg[what] % a.tp:
            not_expressible("megatron_tp", f"tp {a.tp} does not divide {what} {cfg[what]}")

    dist.init_process_group("gloo", rank=rank, world_size=world)
    import megatron.core
    from megatron.core import parallel_state as ps
    from megatron.core import tensor_parallel as mtp
    from megatron.core.model_parallel_config import ModelParallelConfig
    ps.initialize_model_parallel(tensor_model_parallel_size=a.tp)
    tp_rank, tp_group = ps.get_tensor_model_parallel_rank(), ps.get_tensor_model_parallel_group()
    mcfg = ModelParallelConfig(tensor_model_parallel_size=a.tp, use_cpu_initialization=True,
                               perform_initialization=False, params_dtype=torch.float32,
                               gradient_accumulation_fusion=False, sequence_parallel=False)

    class Column(mtp.ColumnParallelLinear):   # Megatron returns (output, bias): the output
        def forward(self, x):
            return super().forward(x)[0]

    class Row(mtp.RowParallelLinear):
        def forward(self, x):
            return super().forward(x)[0]

    def no_init(w):
        return None

    master = read_safetensors(os.path.join(a.src, "model.safetensors"))
    batch = read_safetensors(os.path.join(a.src, "batch.safetensors"))
    tokens, labels = batch["tokens"].long(), batch["labels"].long()
    B, S = tokens.shape
    model = Transformer(cfg, S)
    for l, block in model.layers.items():
        for path in COLUMN + ROW:
            parent_name, attr = path.split(".")
            parent = getattr(block, parent_name)
            old = getattr(parent, attr)
            if path in COLUMN:
                new = Column(old.in_features, old.out_features, config=mcfg, init_method=no_init, bias=False,
                             gather_output=False)
            else:
                new = Row(old.in_features, old.out_features, config=mcfg, init_method=no_init, bias=False,
                          input_is_parallel=True, skip_bias_add=True)
            setattr(parent, attr, new)
    kind = {}
    with torch.no_grad():
        params = dict(model.named_parameters())
        if set(params) != set(master):
            sys.exit(f"megatron_tp: the model's names differ from {a.src}'s: {sorted(set(params) ^ set(master))[:4]}")
        for n, p in params.items():
            k = "col" if any(f".{c}.weight" in n for c in COLUMN) else "row" if any(f".{r}.weight" in n for r in ROW) else "rep"
            kind[n] = k
            w = master[n]
            if k == "col":
                w = w.chunk(a.tp, dim=0)[tp_rank]
            elif k == "row":
                w = w.chunk(a.tp, dim=1)[tp_rank]
            if p.shape != w.shape:
                sys.exit(f"megatron_tp: {n}: Megatron's shard is {tuple(p.shape)}, the dump's {tuple(w.shape)}")
            p.copy_(w)

    opt = torch.optim.SGD(model.parameters(), lr=a.lr, foreach=False)
    opt.zero_grad(set_to_none=True)
    logits = model(tokens)
    lab = labels.reshape(-1)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab, ignore_index=-100,
                                             reduction="sum") / (lab != -100).sum()
    loss.backward()

    def full(n, t):
        t = t.detach().float().contiguous()
        if kind[n] == "rep":
            return t.clone()
        parts = [torch.empty_like(t) for _ in range(a.tp)]
        dist.all_gather(parts, t, group=tp_group)
        return torch.cat(parts, dim=0 if kind[n] == "col" else 1)

    order = list(master)
    grads = {n: full(n, params[n].grad) for n in order}
    opt.step()
    after = {n: full(n, params[n]) for n in order}

    if rank == 0:
        layout = {"dp_replicate": 1, "dp_shard": 1, "cp": 1, "tp": a.tp, "pp": 1, "ep": 1, "etp": 1,
                  "sequence_parallel": False, "world": world}
        fw = (f"megatron-core {megatron.core.__version__} tensor_parallel (Column/RowParallelLinear, tp {a.tp}, "
              f"no sp) on torch {torch.__version__} gloo")
        res = {"loss": loss.item(), "precision": "float32", "framework": fw, "model": cfg, "parallel": layout,
               "run": result.get("run", {}), "optimizer": {"name": "sgd", "lr": a.lr}}
        write_step_dump(a.src, a.out, grads, after, res)
        print(f"megatron_tp: {a.out}: loss {loss.item():.9f} ({fw})")
    dist.barrier()
    ps.destroy_model_parallel()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
