"""spec_model.py - the model of model.md in PyTorch, written from the spec alone (no hyperpar
code): the Llama-style dense and MoE transformer with TorchTitan's parameter names, its loss (the
token-mean cross-entropy of step 1), the same model under the bf16 policy of precision.md, and
the safetensors files of a dump (docs/dump.md). Shared by tests/check_torch.py (float64 and bf16
against hyperpar's dump) and examples/torch/torch_dump.py (float32, one process or DDP).

    p = {name: tensor}                 # model.safetensors, any float dtype, requires_grad
    loss = loss_fn(p, tokens, labels, cfg)      # cfg: result.json's "model"
    loss.backward()
"""
import json
import math
import struct

import torch

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



def write_safetensors(path, tensors):
    """tensors: {name: tensor} of float32 or int32, written in that order (little-endian)."""
    names = {torch.float32: "F32", torch.int32: "I32"}
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.detach().contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)   # the data starts 8-byte aligned (the format's recommendation)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope(x, theta):
    # x (B, S, nh, hd); interleaved pairs (2j, 2j+1), f_j = theta^(-2j/hd), a = pos * f_j
    B, S, nh, hd = x.shape
    j = torch.arange(hd // 2, dtype=torch.float64)
    f = theta ** (-2.0 * j / hd)
    a = torch.arange(S, dtype=torch.float64)[:, None] * f[None, :]          # (S, hd/2)
    c = torch.cos(a)[None, :, None, :].to(x.dtype)   # float64 table, rounded once to x's dtype
    s = torch.sin(a)[None, :, None, :].to(x.dtype)
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
