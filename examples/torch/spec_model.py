"""spec_model.py - the model of model.md in PyTorch, written from the spec alone (no hyperpar
code): the Llama-style dense and MoE transformer with TorchTitan's parameter names, its loss (the
token-mean cross-entropy of step 1), the same model under the bf16 policy of precision.md, the
safetensors files of a dump (docs/dump.md), and the bf16 GEMM PyTorch runs on this CPU or under
a narrower CPU profile (bf16_gemm_path). Shared by tests/check_torch.py (float64 and bf16
against hyperpar's dump) and examples/torch/torch_dump.py (float32, one process or DDP).

    p = {name: tensor}                 # model.safetensors, any float dtype, requires_grad
    loss = loss_fn(p, tokens, labels, cfg)      # cfg: result.json's "model"
    loss.backward()
"""
import json
import math
import os
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "I32": torch.int32}


def not_expressible(prog, msg):
    """The framework (or the program driving it) cannot express the layout: one line from rank 0
    ("PROG: not expressible: MSG", what check_layout.sh and check_torchtitan.sh read), exit 2 on
    every rank."""
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"{prog}: not expressible: {msg}", file=sys.stderr)
    sys.exit(2)


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



def write_step_dump(src, out, grads, params, result):
    """Another framework's step 1 as a dump folder OUT for `hp compare SRC OUT` (docs/dump.md):
    SRC's model and batch copied, grads.safetensors and params.safetensors (full F32 tensors, in
    SRC's model order) and result.json (the dict result)."""
    import json
    import os
    import shutil
    os.makedirs(out, exist_ok=True)
    for f in ("model.safetensors", "batch.safetensors"):
        shutil.copyfile(os.path.join(src, f), os.path.join(out, f))
    order = list(read_safetensors(os.path.join(src, "model.safetensors")))
    write_safetensors(os.path.join(out, "grads.safetensors"), {n: grads[n].float() for n in order})
    write_safetensors(os.path.join(out, "params.safetensors"), {n: params[n].float() for n in order})
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


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


# ---- the CPU profile: which bf16 GEMM PyTorch runs (precision.md, "bf16 against PyTorch on every CPU")
HP_ISAS = ("sse4_1", "avx", "avx2", "avx512", "avx512_bf16", "amx")


def _narrow(who):
    """The cap that makes this machine a CPU without AVX-512 (a string naming it), or ""."""
    isa = os.environ.get("HP_CPU_ISA", "")
    if isa and isa not in HP_ISAS:
        raise SystemExit(f"{who}: HP_CPU_ISA={isa}: the cap must be one of {', '.join(HP_ISAS)}")
    if isa in ("sse4_1", "avx", "avx2"):
        return f"HP_CPU_ISA={isa}"
    for var in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):   # oneDNN reads the first one set
        v = os.environ.get(var, "")
        if v:
            return "" if v.upper() == "ALL" or v.upper().startswith("AVX512_CORE") else f"{var}={v}"
    return ""


def bf16_gemm_path(who):
    """Take the bf16 GEMM that a CPU of the profile takes, and say which sum it runs.

    PyTorch 1.13 sends a bf16 matmul of more than 16^3 multiply-adds to oneDNN (fp32 sums) when
    mkldnn is on and cpuinfo reports avx512bw, avx512vl and avx512dq (mkldnn_bf16_device_check).
    Elsewhere ATen's own GEMM runs it. Its layouts other than a transposed first operand add
    each product into the bf16 output, so the running sum is rounded to bf16 at every step
    (pytorch#83863, #95125; fixed after 1.13 by #96074). The backward's dX = dY W and dW = dY^T X
    take those layouts. The caps of a narrower CPU (HP_CPU_ISA below avx512, ONEDNN_MAX_CPU_ISA
    or DNNL_MAX_CPU_ISA below AVX512_CORE) do not reach cpuinfo. PyTorch would still call
    oneDNN, which, capped, has no bf16 matmul and raises "could not create a primitive
    descriptor iterator". So under such a cap mkldnn is switched off, the other half of the
    same condition, and PyTorch runs the GEMM of a CPU without AVX-512.

    Returns (sum, why): sum is "fp32" or "bf16", measured: 512 ones summed in the layout of dX
    give 512 in fp32 and stop at 256 in bf16 (256 + 1 rounds to 256). why names the cap."""
    why = _narrow(who)
    if why:
        torch.backends.mkldnn.enabled = False
    s = (torch.ones(16, 512, dtype=BF) @ torch.ones(512, 16, dtype=BF))[0, 0].item()
    if s not in (256.0, 512.0):
        raise SystemExit(f"{who}: the bf16 GEMM probe summed 512 ones to {s} "
                         "(neither fp32's 512 nor bf16's 256)")
    return ("fp32" if s == 512.0 else "bf16"), why
