#!/usr/bin/env python3
"""check_torch.py DIR - an outside check of hyperpar's model: rebuilds model.md in PyTorch
(float64), loads the initial model and batch that `hp run --dump DIR` wrote, computes the loss
and every gradient with autograd, and compares them with the dumped loss and gradients.

A run under --mixed-precision-param bfloat16 (result.json "precision") is compared with the same
model in PyTorch bf16 instead: parameters cast to bf16, every op on bf16 tensors (PyTorch's CPU
ops compute in fp32 and round once), RMSNorm, RoPE, attention, the router and the loss in fp32
inside, autograd's own bf16 backward; the float64 model measures the bf16 noise, and each
tensor's distance to PyTorch's bf16 must stay within the closeness bound of precision.md §4.2.
PyTorch's bf16 GEMM is the one this CPU, or the profile HP_CPU_ISA / ONEDNN_MAX_CPU_ISA names,
takes (spec_model.bf16_gemm_path; precision.md, "bf16 against PyTorch on every CPU"): its
noise is measured on that path, and the output names the sum it ran.

The model is examples/torch/spec_model.py (written from ../shared/spec/model.md and
precision.md alone, no hyperpar code), shared with examples/torch/torch_dump.py. Exit 0 on
agreement, 1 on a miss, 77 (skip) when torch is not installed.
"""
import json
import math
import os
import sys

try:
    import torch
except ImportError:
    print("check_torch: torch is not installed (apt-get install python3-torch); skipped")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "torch"))
from spec_model import BF, bf16_gemm_path, loss_fn, loss_fn_bf16, read_safetensors  # noqa: E402

CLOSENESS = 2.8   # precision.md §4.2: ||hyperpar - torch bf16|| / ||torch bf16 - float64||


def main_bf16(d, result, cfg, master, batch, grads):
    gemm, why = bf16_gemm_path("check_torch")
    print(f"check_torch: torch {torch.__version__}, bf16 GEMM sums in {gemm}"
          + (f" (mkldnn off for {why}, as on a CPU without AVX-512)" if why else ""))
    p64 = {k: v.double().requires_grad_(True) for k, v in master.items()}
    pbf = {k: v.to(BF).requires_grad_(True) for k, v in master.items()}
    l64 = loss_fn(p64, batch["tokens"], batch["labels"], cfg)
    l64.backward()
    lbf = loss_fn_bf16(pbf, batch["tokens"], batch["labels"], cfg)
    lbf.backward()
    fails = 0
    noise = abs(lbf.item() - l64.item())
    dist = abs(result["loss"] - lbf.item())
    ratio = dist / noise if noise > 0 else (0.0 if dist == 0 else math.inf)
    print(f"loss: hyperpar bf16 {result['loss']:.9f}  torch bf16 {lbf.item():.9f}  float64 {l64.item():.9f}"
          f"  ratio {ratio:.3f}")
    fails += not ratio <= CLOSENESS
    worst = (0.0, "")
    for name in master:
        ref, f64 = pbf[name].grad.double(), p64[name].grad
        got = grads[name].double()
        noise = (ref - f64).norm().item()
        dist = (got - ref).norm().item()
        ratio = dist / noise if noise > 0 else (0.0 if dist == 0 else math.inf)
        worst = max(worst, (ratio, name))
        if not ratio <= CLOSENESS:
            print(f"  {name}: |hp - torch bf16| {dist:.3e}, bf16 noise {noise:.3e}, ratio {ratio:.3f} FAIL")
            fails += 1
    print(f"gradients: worst closeness ratio {worst[0]:.3f} ({worst[1]}), bound {CLOSENESS}")
    print(f"check_torch: {len(master) + 1 - fails} passed, {fails} failed")
    sys.exit(1 if fails else 0)


def main():
    d = sys.argv[1]
    result = json.load(open(f"{d}/result.json"))
    cfg = result["model"]
    master = read_safetensors(f"{d}/model.safetensors")
    batch = read_safetensors(f"{d}/batch.safetensors")
    grads = read_safetensors(f"{d}/grads.safetensors")
    if result.get("precision") == "bfloat16":
        main_bf16(d, result, cfg, master, batch, grads)
    params = {k: v.double().requires_grad_(True) for k, v in master.items()}
    loss = loss_fn(params, batch["tokens"], batch["labels"], cfg)
    loss.backward()
    fails = 0
    rel = abs(loss.item() - result["loss"]) / abs(loss.item())
    print(f"loss: hyperpar {result['loss']:.9f}  torch(float64) {loss.item():.9f}  rel {rel:.2e}")
    fails += rel > 1e-5
    worst = (0.0, "")
    for name, p in params.items():
        ref = p.grad
        got = grads[name].double()
        e = ((got - ref).norm() / ref.norm()).item() if ref.norm() > 0 else (got - ref).norm().item()
        worst = max(worst, (e, name))
        if e > 1e-4:   # fp32 (hyperpar) against float64: measured <= 1e-6
            print(f"  {name}: relative Frobenius error {e:.2e} FAIL")
            fails += 1
    print(f"gradients: worst relative error {worst[0]:.2e} ({worst[1]})")
    print(f"check_torch: {len(params) + 1 - fails} passed, {fails} failed")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
