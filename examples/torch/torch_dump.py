#!/usr/bin/env python3
"""torch_dump.py A OUT [--ddp N] - step 1 of another framework, for `hp compare A OUT`.

Reads the initial model and the batch of the dump A (`hp run --dump A`, docs/dump.md), runs the
model of model.md (spec_model.py) forward and backward in plain PyTorch, and writes OUT in the
same layout: model.safetensors and batch.safetensors (A's, unchanged), grads.safetensors (step
1's gradients, F32, TorchTitan names) and result.json (the loss, the precision, A's model and run
config, the framework). A float32 dump is computed in float32; a bfloat16 dump under the bf16
policy of precision.md (bf16 parameters and ops, gradients rounded to bf16).

A bfloat16 dump runs the bf16 GEMM this CPU gets, or under a narrower profile (HP_CPU_ISA
below avx512, ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA below AVX512_CORE) the one a CPU without
AVX-512 gets: spec_model.bf16_gemm_path. result.json's "bf16_gemm_sum" says which sum ran
("fp32": oneDNN; "bf16": PyTorch 1.13's own GEMM, the sum rounded at every step), and so does
the framework.

--ddp N: torch.nn.parallel.DistributedDataParallel over gloo on N CPU processes (N divides B):
rank r takes the contiguous sequences [r*B/N, (r+1)*B/N), computes its token-mean loss, and DDP
averages the gradients over the ranks. Every sequence has S labels, so the token counts are equal
and DDP's mean is the global token mean: the gradient hp computes under any layout. The loss is
the ranks' mean likewise. (FSDP is not used: Debian 12's python3-torch 1.13 cannot import
torch.distributed.fsdp under Python 3.11.)

    hp run --model tiny --steps 1 --dump A
    python3 examples/torch/torch_dump.py A T --ddp 2
    hp compare A T
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spec_model import (BF, bf16_gemm_path, loss_fn, loss_fn_bf16, read_safetensors,  # noqa: E402
                        write_safetensors)


class SpecModel(torch.nn.Module):
    """The parameters of model.md as one module (DDP wraps a module); forward returns the loss."""

    def __init__(self, master, dtype):
        super().__init__()
        self.names = list(master)
        self.weights = torch.nn.ParameterList(torch.nn.Parameter(master[n].to(dtype)) for n in self.names)
        self.dtype = dtype

    def forward(self, tokens, labels, cfg):
        p = dict(zip(self.names, self.weights))
        return (loss_fn_bf16 if self.dtype == BF else loss_fn)(p, tokens, labels, cfg)


def step1(master, tokens, labels, cfg, dtype):
    """Forward and backward of this process's sequences: (loss, {name: F32 gradient})."""
    model = SpecModel(master, dtype)
    if dist.is_initialized():
        # every parameter gets a gradient on every rank (the experts of an MoE layer are one
        # tensor, experts.w1 [E, hidden, dim]), so DDP needs no find_unused_parameters
        model = torch.nn.parallel.DistributedDataParallel(model)
    loss = model(tokens, labels, cfg)
    loss.backward()
    inner = model.module if dist.is_initialized() else model
    grads = {n: (w.grad if w.grad is not None else torch.zeros_like(w)).float()
             for n, w in zip(inner.names, inner.weights)}
    return loss.detach().double(), grads


def ddp_worker(rank, world, init, src, out):
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    result, master, batch = src
    B = batch["tokens"].shape[0]
    lo, hi = rank * B // world, (rank + 1) * B // world
    loss, grads = step1(master, batch["tokens"][lo:hi], batch["labels"][lo:hi], result["model"], torch.float32)
    dist.all_reduce(loss)          # the ranks' token means, summed: / world is the global mean
    if rank == 0:
        write_dump(out, result, loss.item() / world, grads, world)
    dist.destroy_process_group()


def write_dump(out, result, loss, grads, ddp, gemm=None):
    """OUT's grads.safetensors (in the model's order) and result.json; gemm: bf16_gemm_path's."""
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "grads.safetensors"), grads)
    how = f", DDP over gloo on {ddp} processes" if ddp > 1 else ""
    if gemm:   # the framework names the sum (hp compare prints it); the field says it for scripts
        how = f", bf16 GEMM sums in {gemm[0]}"
    res = {"loss": loss, "precision": result["precision"], "framework": f"torch {torch.__version__}{how}",
           "model": result["model"], "parallel": {"ddp": ddp, "world": ddp}, "run": result.get("run", {})}
    if gemm:
        res["bf16_gemm_sum"] = gemm[0]
        if gemm[1]:
            res["bf16_gemm_profile"] = gemm[1]
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    cap = f"; mkldnn off for {gemm[1]}, as on a CPU without AVX-512" if gemm and gemm[1] else ""
    print(f"torch_dump: {out}: loss {loss:.9f} ({res['framework']}, {result['precision']}{cap})")


def main():
    ap = argparse.ArgumentParser(description="step 1 of a dump's model and batch in PyTorch")
    ap.add_argument("src", help="a dump folder (hp run --dump)")
    ap.add_argument("out", help="the dump folder to write")
    ap.add_argument("--ddp", type=int, default=1, metavar="N", help="DDP over gloo on N CPU processes")
    a = ap.parse_args()
    result = json.load(open(os.path.join(a.src, "result.json")))
    result.setdefault("precision", "float32")
    master = read_safetensors(os.path.join(a.src, "model.safetensors"))
    batch = read_safetensors(os.path.join(a.src, "batch.safetensors"))
    B = batch["tokens"].shape[0]
    if a.ddp < 1 or B % a.ddp:
        sys.exit(f"torch_dump: --ddp {a.ddp} must be >= 1 and divide the batch ({B} sequences)")
    if a.ddp > 1 and result["precision"] == "bfloat16":
        sys.exit("torch_dump: --ddp with a bfloat16 dump: gloo would reduce bf16 gradients in bf16; "
                 "hp reduces them in fp32 (run it without --ddp)")

    if result["model"].get("rope_scaling"):   # the PyTorch model here has plain RoPE only
        print("torch_dump: the dump's model rescales RoPE (rope_scaling %s); this PyTorch model has plain "
              "RoPE only" % result["model"]["rope_scaling"].get("rope_type"), file=sys.stderr)
        sys.exit(2)

    # before any op: an unknown HP_CPU_ISA is refused, and a narrow cap switches mkldnn off (a
    # capped oneDNN has no bf16 matmul); only a bf16 dump depends on the sum it reports
    gemm = bf16_gemm_path("torch_dump")
    os.makedirs(a.out, exist_ok=True)
    for f in ("model.safetensors", "batch.safetensors"):   # A's inputs are OUT's
        if not os.path.exists(os.path.join(a.out, f)) or not os.path.samefile(os.path.join(a.src, f),
                                                                              os.path.join(a.out, f)):
            shutil.copyfile(os.path.join(a.src, f), os.path.join(a.out, f))
    if a.ddp == 1:
        dtype = BF if result["precision"] == "bfloat16" else torch.float32
        loss, grads = step1(master, batch["tokens"], batch["labels"], result["model"], dtype)
        write_dump(a.out, result, loss.item(), grads, 1, gemm if dtype == BF else None)
    else:
        with tempfile.TemporaryDirectory() as tmp:   # the processes meet at a file (no network)
            init = "file://" + os.path.join(tmp, "rendezvous")
            mp.spawn(ddp_worker, args=(a.ddp, init, (result, master, batch), a.out), nprocs=a.ddp)

if __name__ == "__main__":
    main()
