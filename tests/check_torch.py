#!/usr/bin/env python3
"""check_torch.py DIR - an outside check of hyperpar's model: rebuilds model.md in PyTorch
(float64), loads the initial model and batch that `hp run --dump DIR` wrote, computes the loss
and every gradient with autograd, and compares them with the dumped loss and gradients.

A run under --mixed-precision-param bfloat16 (result.json "precision") is compared with the same
model in PyTorch bf16 instead: parameters cast to bf16, every op on bf16 tensors (PyTorch's CPU
ops compute in fp32 and round once), RMSNorm, RoPE, attention, the router and the loss in fp32
inside, autograd's own bf16 backward; the float64 model measures the bf16 noise, and each
tensor's distance to PyTorch's bf16 must stay within the closeness bound of precision.md §4.2.

Written from ../shared/spec/model.md and precision.md alone (no hyperpar code). Exit 0 on
agreement, 1 on a miss, 77 (skip) when torch is not installed.
"""
import json
import math
import struct
import sys

try:
    import torch
except ImportError:
    print("check_torch: torch is not installed (apt-get install python3-torch); skipped")
    sys.exit(77)

DTYPES = {"F32": torch.float32, "I32": torch.int32}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        x = torch.frombuffer(bytearray(data[b:e]), dtype=DTYPES[t["dtype"]])
        out[name] = x.reshape(t["shape"]).clone()
    return out


def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope(x, theta):
    # x (B, S, nh, hd); interleaved pairs (2j, 2j+1), f_j = theta^(-2j/hd), a = pos * f_j
    B, S, nh, hd = x.shape
    j = torch.arange(hd // 2, dtype=torch.float64)
    f = theta ** (-2.0 * j / hd)
    a = torch.arange(S, dtype=torch.float64)[:, None] * f[None, :]          # (S, hd/2)
    c, s = torch.cos(a)[None, :, None, :], torch.sin(a)[None, :, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).reshape(B, S, nh, hd)


def attention(x, p, l, cfg):
    B, S, D = x.shape
    H, Hkv = cfg["n_heads"], cfg["n_kv_heads"]
    hd = D // H
    q = (x @ p[f"layers.{l}.attention.wq.weight"].T).reshape(B, S, H, hd)
    k = (x @ p[f"layers.{l}.attention.wk.weight"].T).reshape(B, S, Hkv, hd)
    v = (x @ p[f"layers.{l}.attention.wv.weight"].T).reshape(B, S, Hkv, hd)
    q, k = rope(q, cfg["rope_theta"]), rope(k, cfg["rope_theta"])
    rep = H // Hkv                                   # query head h reads kv head h // rep
    k = k.repeat_interleave(rep, dim=2)
    v = v.repeat_interleave(rep, dim=2)
    s = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(hd)
    mask = torch.ones(S, S, dtype=torch.bool).tril()
    s = s.masked_fill(~mask, float("-inf"))
    o = torch.einsum("bhij,bjhd->bihd", torch.softmax(s, dim=-1), v).reshape(B, S, H * hd)
    return o @ p[f"layers.{l}.attention.wo.weight"].T


def ffn(x, w1, w2, w3):
    return (torch.nn.functional.silu(x @ w1.T) * (x @ w3.T)) @ w2.T


def route(logits, cfg):
    """The router's experts (N, K) and gates (N, K) from its logits."""
    scores = torch.sigmoid(logits) if cfg["score_func"] == "sigmoid" else torch.softmax(logits, -1)
    # top-k, a tie going to the lower expert id: stable sort of -score keeps id order on ties
    idx = torch.sort(-scores.detach(), dim=-1, stable=True).indices[:, :cfg["top_k"]]
    g = scores.gather(1, idx)
    if cfg["route_norm"]:
        g = g / g.sum(-1, keepdim=True)
    return idx, g * cfg["route_scale"]


def moe(x, p, l, cfg, bf16=False):
    """The MoE block; bf16: the router in fp32, the experts' w1/w3 and gate products rounded, their
    w2 outputs, the weighted sum and the shared expert in fp32, the block's output rounded once."""
    B, S, D = x.shape
    xt = x.reshape(B * S, D)
    pre = f"layers.{l}.moe."
    gate = p[pre + "router.gate.weight"]
    idx, g = route(xt.float() @ gate.float().T if bf16 else xt @ gate.T, cfg)
    expert = ffn_bf16_parts if bf16 else ffn
    out = torch.zeros(xt.shape, dtype=torch.float32) if bf16 else torch.zeros_like(xt)
    for e in range(cfg["num_experts"]):
        rows, slot = (idx == e).nonzero(as_tuple=True)
        if rows.numel():
            y = expert(xt[rows], p[pre + "experts.w1"][e], p[pre + "experts.w2"][e], p[pre + "experts.w3"][e])
            out = out.index_add(0, rows, g[rows, slot][:, None] * y)
    if cfg["n_shared_experts"] > 0:
        out = out + expert(xt, p[pre + "shared_experts.w1.weight"], p[pre + "shared_experts.w2.weight"],
                           p[pre + "shared_experts.w3.weight"])
    return (out.to(BF) if bf16 else out).reshape(B, S, D)


def loss_fn(p, tokens, labels, cfg):
    h = p["tok_embeddings.weight"][tokens.long()]
    for l in range(cfg["n_layers"]):
        h = h + attention(rmsnorm(h, p[f"layers.{l}.attention_norm.weight"], cfg["norm_eps"]), p, l, cfg)
        x = rmsnorm(h, p[f"layers.{l}.ffn_norm.weight"], cfg["norm_eps"])
        if cfg["num_experts"] > 0 and l >= cfg["n_dense_layers"]:
            h = h + moe(x, p, l, cfg)
        else:
            h = h + ffn(x, p[f"layers.{l}.feed_forward.w1.weight"], p[f"layers.{l}.feed_forward.w2.weight"],
                        p[f"layers.{l}.feed_forward.w3.weight"])
    logits = rmsnorm(h, p["norm.weight"], cfg["norm_eps"]) @ p["output.weight"].T
    lab = labels.long().reshape(-1)
    ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab,
                                           ignore_index=-100, reduction="sum")
    return ce / (lab != -100).sum()


# ---- the bf16 policy (precision.md §2.2), the casts PyTorch's own bf16 ops make ----------------
BF = torch.bfloat16


def rmsnorm_bf16(x, w, eps):
    x32 = x.float()
    return (x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + eps) * w.float()).to(BF)


def attention_bf16(x, p, l, cfg):
    B, S, D = x.shape
    H, Hkv = cfg["n_heads"], cfg["n_kv_heads"]
    hd = D // H
    q = (x @ p[f"layers.{l}.attention.wq.weight"].T).reshape(B, S, H, hd)
    k = (x @ p[f"layers.{l}.attention.wk.weight"].T).reshape(B, S, Hkv, hd)
    v = (x @ p[f"layers.{l}.attention.wv.weight"].T).reshape(B, S, Hkv, hd)
    q = rope(q.double(), cfg["rope_theta"]).float().to(BF)
    k = rope(k.double(), cfg["rope_theta"]).float().to(BF)
    rep = H // Hkv
    k = k.repeat_interleave(rep, dim=2).float()
    v = v.repeat_interleave(rep, dim=2).float()
    s = torch.einsum("bihd,bjhd->bhij", q.float(), k) / math.sqrt(hd)
    mask = torch.ones(S, S, dtype=torch.bool).tril()
    s = s.masked_fill(~mask, float("-inf"))
    o = torch.einsum("bhij,bjhd->bihd", torch.softmax(s, dim=-1), v).reshape(B, S, H * hd).to(BF)
    return o @ p[f"layers.{l}.attention.wo.weight"].T


def ffn_bf16_parts(x, w1, w2, w3):
    act = (torch.nn.functional.silu((x @ w1.T).float()) * (x @ w3.T).float()).to(BF)
    return act.float() @ w2.float().T   # the output in fp32: rounded by the caller, once


def loss_fn_bf16(p, tokens, labels, cfg):
    h = p["tok_embeddings.weight"][tokens.long()]
    for l in range(cfg["n_layers"]):
        h = h + attention_bf16(rmsnorm_bf16(h, p[f"layers.{l}.attention_norm.weight"], cfg["norm_eps"]), p, l, cfg)
        x = rmsnorm_bf16(h, p[f"layers.{l}.ffn_norm.weight"], cfg["norm_eps"])
        if cfg["num_experts"] > 0 and l >= cfg["n_dense_layers"]:
            h = h + moe(x, p, l, cfg, bf16=True)
        else:
            h = h + ffn_bf16_parts(x, p[f"layers.{l}.feed_forward.w1.weight"], p[f"layers.{l}.feed_forward.w2.weight"],
                                   p[f"layers.{l}.feed_forward.w3.weight"]).to(BF)
    logits = rmsnorm_bf16(h, p["norm.weight"], cfg["norm_eps"]) @ p["output.weight"].T
    lab = labels.long().reshape(-1)
    ce = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), lab,
                                           ignore_index=-100, reduction="sum")
    return ce / (lab != -100).sum()


CLOSENESS = 2.8   # precision.md §4.2: ||hyperpar - torch bf16|| / ||torch bf16 - float64||


def main_bf16(d, result, cfg, master, batch, grads):
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
