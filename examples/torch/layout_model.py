"""layout_model.py - the model of docs/model.md as torch.nn modules, for PyTorch's own parallelisms
(examples/torch/torch_layout.py).

spec_model.py is the model as one function over a dict of tensors; DTensor's parallel styles and
FSDP2 need modules, so this file is the same model with TorchTitan's module tree and names:

    tok_embeddings (nn.Embedding)      layers.{l}.attention_norm / ffn_norm (RMSNorm)
    layers.{l}.attention.wq/wk/wv/wo   layers.{l}.feed_forward.w1/w2/w3 (nn.Linear, no bias)
    layers.{l}.moe.router.gate, .experts.w1/w2/w3 [E, ., .], .shared_experts.w1/w2/w3
    (and moe.reorderer, TorchTitan's parameterless TokenReorderer)
    norm (RMSNorm)                     output (nn.Linear)

so that named_parameters() are the dump's names. The ops are written so that DTensor runs them
(a Shard(1) activation through the norms under sequence parallel) and so that context parallel's
SDPA dispatch sees F.scaled_dot_product_attention(is_causal=True). The RoPE angles are a buffer
(`rope_cos`, `rope_sin`, [S, hd/2], float64) that context_parallel shards with the sequence, so
every rank rotates at its tokens' global positions.

In bf16 (FSDP2's MixedPrecisionPolicy casts the parameters and the inputs to bf16) the ops follow
spec_model.loss_fn_bf16: norms, RoPE, attention scores and softmax, the SwiGLU product and the loss
in fp32, each rounded once to bf16 (a bf16 GEMM that sums in fp32 rounds its output once).

forward(tokens) returns logits; a pipeline stage (tok_embeddings or output None, some layers
deleted) takes and returns the hidden state instead.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spec_model import BF, moe as spec_moe, route as spec_route  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        if x.dtype == BF:
            x32 = x.float()
            return (x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + self.eps) * self.weight.float()).to(BF)
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq_len, hd, theta):
    j = torch.arange(hd // 2, dtype=torch.float64)
    f = theta ** (-2.0 * j / hd)
    a = torch.arange(seq_len, dtype=torch.float64)[:, None] * f[None, :]      # (S, hd/2)
    return torch.cos(a), torch.sin(a)


def apply_rope(x, cos, sin):
    """x (B, S, nh, hd), interleaved pairs; cos/sin (S, hd/2) float64 (model.md, Attention)."""
    bf = x.dtype == BF
    if bf:   # spec_model: the rotation in float64, rounded through fp32 to bf16
        x = x.double()
    c = cos[None, :, None, :].to(x.dtype)
    s = sin[None, :, None, :].to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    y = torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)
    return y.float().to(BF) if bf else y


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        D, H, Hkv = cfg["dim"], cfg["n_heads"], cfg["n_kv_heads"]
        self.hd = D // H
        self.rep = H // Hkv
        self.wq = nn.Linear(D, H * self.hd, bias=False)
        self.wk = nn.Linear(D, Hkv * self.hd, bias=False)
        self.wv = nn.Linear(D, Hkv * self.hd, bias=False)
        self.wo = nn.Linear(H * self.hd, D, bias=False)

    def forward(self, x, cos, sin):
        B, S = x.shape[0], x.shape[1]
        # -1 heads: under tensor parallel wq/wk/wv are column shards, H/tp and Hkv/tp heads here
        q = self.wq(x).view(B, S, -1, self.hd)
        k = self.wk(x).view(B, S, -1, self.hd)
        v = self.wv(x).view(B, S, -1, self.hd)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k = k.repeat_interleave(self.rep, dim=2)     # query head h reads kv head h // rep
        v = v.repeat_interleave(self.rep, dim=2)
        dt = q.dtype
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if dt == BF:
            q, k, v = q.float(), k.float(), v.float()
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / math.sqrt(self.hd))
        o = o.transpose(1, 2).reshape(B, S, -1).to(dt)
        return self.wo(o)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        if x.dtype == BF:   # the product in fp32, rounded once; w2's output rounded once
            act = (F.silu(self.w1(x).float()) * self.w3(x).float()).to(BF)
            return self.w2(act)
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Router(nn.Module):
    """The gate: the router's logits of every row (fp32 in bf16). Under tp ep_layout.py makes the
    weight a Replicate DTensor (TorchTitan's NoParallel on moe.router.gate)."""

    def __init__(self, dim, E):
        super().__init__()
        self.gate = nn.Linear(dim, E, bias=False)

    def forward(self, x):
        return self.gate(x)


class TokenReorderer(nn.Module):
    """TorchTitan's TokenReorderer: the (row, k) entries sorted by expert id (stable: a row's
    entries and the rows keep their order inside one expert), their scores and the count per
    expert. Under tp with etp = 1 ep_layout.py splits the rows over the tp ranks here
    (TorchTitan's ReordererSequenceParallel)."""

    def __init__(self, E, K):
        super().__init__()
        self.E, self.K = E, K

    def forward(self, g, idx):
        order = torch.argsort(idx.reshape(-1), stable=True)          # entry = row * K + k
        counts = torch.bincount(idx.reshape(-1), minlength=self.E)
        return g.reshape(-1)[order], order, counts


class RoutedRows(nn.Module):
    """The rows the routed experts read (an identity). With ep > 1, etp = 1 under tp each tp rank
    routes its own rows, so their gradient is a partial sum over tp: ep_layout.py declares it so
    here, before the rows are gathered per entry."""

    def forward(self, x):
        return x


class GroupedExperts(nn.Module):
    """The routed experts: forward(x, counts, scores=) runs expert e on the next counts[e] rows of x
    (rows sorted by expert; a for-loop, TorchTitan's _run_experts_for_loop; rows past sum(counts),
    the padding of TorchTitan's own dispatch, give zeros). The scores are the
    rows' gates; the experts do not use them (model.md weights each expert's output in the
    combine, after the experts), they ride along for a dispatcher that would. Under ep
    ep_layout.py's styles dispatch the rows to the experts' owners and combine them back, and the
    weights are DTensors (their local experts / hidden shards run here)."""

    def __init__(self, dim, hidden, E):
        super().__init__()
        self.w1 = nn.Parameter(torch.zeros(E, hidden, dim))
        self.w2 = nn.Parameter(torch.zeros(E, dim, hidden))
        self.w3 = nn.Parameter(torch.zeros(E, hidden, dim))

    def forward(self, x, counts, scores=None):
        from torch.distributed.tensor import DTensor
        w1, w2, w3 = (w.to_local() if isinstance(w, DTensor) else w for w in (self.w1, self.w2, self.w3))
        c = [int(n) for n in counts.tolist()]
        outs = [F.linear(F.silu(F.linear(xe, w1[e])) * F.linear(xe, w3[e]), w2[e])
                for e, xe in enumerate(torch.split(x[:sum(c)], c))]
        if x.shape[0] > sum(c):
            outs.append(x.new_zeros(x.shape[0] - sum(c), w2.shape[1]))
        return torch.cat(outs)


class MoE(nn.Module):
    """TorchTitan's module tree and names (router.gate, experts.w1/w2/w3, shared_experts); the math
    is spec_model.moe's (model.md, MoE): the router on every row, top-k with ties to the lower id,
    the gates g_k (route_norm, route_scale), out = sum_k g_k Expert_{e_k}(x) + SharedFFN(x), no
    auxiliary loss, no capacity (no token dropped). fp32 runs it as TorchTitan's MoE.forward does
    (router, reorderer, routed experts, combine in k order), so ep_layout.py's tensor and expert
    parallel styles can take each part; bf16 runs spec_model.moe itself (one process and dp)."""

    def __init__(self, cfg):
        super().__init__()
        D, E, Fe = cfg["dim"], cfg["num_experts"], cfg["moe_hidden"]
        self.cfg = cfg
        self.router = Router(D, E)
        self.reorderer = TokenReorderer(E, cfg["top_k"])
        self.routed_rows = RoutedRows()
        self.experts = GroupedExperts(D, Fe, E)
        self.shared_experts = FeedForward(D, Fe * cfg["n_shared_experts"]) if cfg["n_shared_experts"] > 0 else None

    def forward(self, x):
        if x.dtype == BF:
            return self._spec_bf16(x)
        B, S, D = x.shape
        K = self.cfg["top_k"]
        xt = x.reshape(B * S, D)
        N = xt.shape[0]
        idx, g = spec_route(self.router(xt), self.cfg)               # (N, K) each
        idx, g = idx.contiguous(), g.contiguous()
        g_sorted, order, counts = self.reorderer(g, idx)
        y = self.experts(self.routed_rows(xt)[order // K], counts, scores=g_sorted)   # the entries' outputs, unweighted
        y_entry = y.new_zeros(N * K, D).index_copy(0, order, y)      # back to (row, k) order
        out = (g.reshape(N, K, 1) * y_entry.reshape(N, K, D)).sum(1)   # the combine: sum_k g_k y_k
        if self.shared_experts is not None:
            out = out + self.shared_experts(xt)
        return out.reshape(B, S, D)

    def _spec_bf16(self, x):
        p = {"layers.0.moe.router.gate.weight": self.router.gate.weight,
             "layers.0.moe.experts.w1": self.experts.w1, "layers.0.moe.experts.w2": self.experts.w2,
             "layers.0.moe.experts.w3": self.experts.w3}
        if self.shared_experts is not None:
            for w in ("w1", "w2", "w3"):
                p[f"layers.0.moe.shared_experts.{w}.weight"] = getattr(self.shared_experts, w).weight
        return spec_moe(x, p, 0, self.cfg, bf16=True)


class TransformerBlock(nn.Module):
    def __init__(self, cfg, l):
        super().__init__()
        self.attention_norm = RMSNorm(cfg["dim"], cfg["norm_eps"])
        self.attention = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg["dim"], cfg["norm_eps"])
        self.is_moe = cfg["num_experts"] > 0 and l >= cfg["n_dense_layers"]
        if self.is_moe:
            self.moe = MoE(cfg)
        else:
            self.feed_forward = FeedForward(cfg["dim"], cfg["ffn_hidden"])

    def forward(self, h, cos, sin):
        h = h + self.attention(self.attention_norm(h), cos, sin)
        x = self.ffn_norm(h)
        return h + (self.moe(x) if self.is_moe else self.feed_forward(x))


class Transformer(nn.Module):
    def __init__(self, cfg, seq_len):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg["vocab_size"], cfg["dim"])
        self.layers = nn.ModuleDict({str(l): TransformerBlock(cfg, l) for l in range(cfg["n_layers"])})
        self.norm = RMSNorm(cfg["dim"], cfg["norm_eps"])
        self.output = nn.Linear(cfg["dim"], cfg["vocab_size"], bias=False)
        cos, sin = rope_tables(seq_len, cfg["dim"] // cfg["n_heads"], cfg["rope_theta"])
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
        for layer in self.layers.values():
            h = layer(h, self.rope_cos, self.rope_sin)
        if self.norm is not None:
            h = self.norm(h)
        return self.output(h) if self.output is not None else h
