#!/usr/bin/env python3
"""deepspeed_zero.py A OUT [--stage 1|2] [--lr LR] - step 1 of hp's model under DeepSpeed ZeRO
data parallelism (stage 1: optimizer states partitioned, stage 2: gradients too), on the CPU
(DS_ACCELERATOR=cpu) over gloo, written as a dump for `hp compare A OUT`
(docs/beyond_pytorch.md). World = the dp degree (one rank per process, torchrun).

    hp run --model tiny --steps 1 --dump A --quiet
    DS_ACCELERATOR=cpu OMP_NUM_THREADS=1 python -m torch.distributed.run --standalone \
        --nproc-per-node 2 examples/beyond/deepspeed_zero.py A T --stage 2
    hp compare A T

The model is examples/torch/layout_model.py's (docs/model.md, TorchTitan's names), loaded with
A's weights and wrapped by deepspeed.initialize (fp32, ZeRO stage 1 or 2, torch.optim.SGD(lr)
handed to it, no clipping, gloo as dist_backend). Each rank takes its contiguous block of the
batch (B / dp sequences). The loss of model.md is the CE sum over the whole batch divided by
the global count of valid labels, so each rank's loss is its CE sum / the global count; ZeRO
averages the gradients over dp (it divides the reduced sum by dp), so the rank's loss is
multiplied by dp before engine.backward - DeepSpeed's average then gives the sum. (Without that
factor every gradient comes out dp times too small: the fault hp compare names as the loss
normalised twice; --bug zero-average leaves it out.)

The full gradients come from deepspeed.utils.safe_get_full_grad after engine.backward (the
parameter's .grad where ZeRO still holds it there, else its reduced partitions put together;
result.json's zero_grad_source counts which), the parameters after engine.step from the module (ZeRO 1/2
all-gather the updated partitions into it). OUT gets A's model and batch, grads.safetensors,
params.safetensors and result.json (loss, layout, framework).
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--stage", type=int, default=2, choices=(1, 2))
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--bug", default="none", choices=("none", "zero-average"),
                    help="zero-average: the rank's loss not multiplied by dp (ZeRO's average kept)")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    torch.set_num_threads(1)
    result = json.load(open(os.path.join(a.src, "result.json")))
    cfg = result["model"]
    if result.get("precision", "float32") != "float32":
        not_expressible("deepspeed_zero", "fp32 dumps only (bf16 is not written here)")
    master = read_safetensors(os.path.join(a.src, "model.safetensors"))
    batch = read_safetensors(os.path.join(a.src, "batch.safetensors"))
    tokens, labels = batch["tokens"].long(), batch["labels"].long()
    B, S = tokens.shape
    if B % world:
        not_expressible("deepspeed_zero", f"the batch ({B} sequences) does not split over dp {world}")

    import deepspeed
    from deepspeed.utils import safe_get_full_grad
    import logging
    logging.getLogger("DeepSpeed").setLevel(logging.WARNING)
    deepspeed.init_distributed(dist_backend="gloo")
    model = Transformer(cfg, S)
    with torch.no_grad():
        params = dict(model.named_parameters())
        if set(params) != set(master):
            sys.exit(f"deepspeed_zero: the model's names differ from {a.src}'s: {sorted(set(params) ^ set(master))[:4]}")
        for n, p in params.items():
            p.copy_(master[n])
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, foreach=False)
    ds_cfg = {"train_micro_batch_size_per_gpu": B // world, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": a.stage}, "zero_allow_untested_optimizer": True,
              "gradient_clipping": 0.0, "steps_per_print": 1 << 30, "wall_clock_breakdown": False}
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=ds_cfg, dist_init_required=False)

    lo, hi = rank * B // world, (rank + 1) * B // world
    tok, lab = tokens[lo:hi], labels[lo:hi].reshape(-1)
    n_global = int((labels != -100).sum())
    logits = engine(tok)
    ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab, ignore_index=-100,
                                           reduction="sum") / n_global
    scale = 1 if a.bug == "zero-average" else world
    engine.backward(ce * scale)
    order = list(master)
    grads, source = {}, {}
    for n in order:
        p = params[n]
        # where ZeRO keeps this gradient after the backward: the parameter's own .grad (reduced
        # in place), or only its partitions (then safe_get_full_grad puts them together)
        src = "param.grad" if p.grad is not None else "zero partitions" if hasattr(p, "_hp_mapping") else "other"
        source[src] = source.get(src, 0) + 1
        g = safe_get_full_grad(p)   # a collective: every rank calls it, in the same order
        if g is None:
            sys.exit(f"deepspeed_zero: safe_get_full_grad({n}) gave None")
        grads[n] = g.detach().float().clone()
    engine.step()
    after = {n: params[n].detach().float().clone() for n in order}
    loss = ce.detach().clone()
    dist.all_reduce(loss)   # the batch's loss: the ranks' CE sums / the global count, summed

    if rank == 0:
        layout = {"dp_replicate": 1, "dp_shard": world, "cp": 1, "tp": 1, "pp": 1, "ep": 1, "etp": 1,
                  "sequence_parallel": False, "world": world}
        fw = f"deepspeed {deepspeed.__version__} ZeRO stage {a.stage} (dp {world}) on torch {torch.__version__} gloo"
        if a.bug != "none":
            fw += f", bug {a.bug}"
        res = {"loss": loss.item(), "precision": "float32", "framework": fw, "model": cfg, "parallel": layout,
               "run": result.get("run", {}), "optimizer": {"name": "sgd", "lr": a.lr}, "bug": a.bug,
               "zero_grad_source": source}
        write_step_dump(a.src, a.out, grads, after, res)
        print(f"deepspeed_zero: {a.out}: loss {loss.item():.9f} ({fw}); full gradients from "
              + ", ".join(f"{k} ({v} tensors)" for k, v in sorted(source.items())))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
