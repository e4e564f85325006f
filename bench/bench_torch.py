#!/usr/bin/env python3
"""bench_torch.py - the model and training step of docs/model.md in PyTorch eager, on
the CPU: the other side of `hp bench`'s comparison (run by bench/run.sh, never by the tests).

Same shapes, RMSNorm, interleaved-pair RoPE, GQA causal attention, SwiGLU FFN, mean CE over
valid labels, AdamW(beta1 0.9, beta2 0.95, eps 1e-8, weight decay 0.1) - and the same FLOP
count as hp bench, so the GFLOP/s figures compare.

usage:
  bench_torch.py [--model bench] [--seq-len 512] [--batch 4] [--steps 3] [--warmup 1]
                 [--threads N] [--compile] [--json FILE]
      times forward + backward + AdamW step; prints one JSON object on stdout
      --compile (torch >= 2): the model under torch.compile (inductor's CPU C++ code; the
      optimizer step stays eager); the compile runs in one untimed step before the warm-up
      steps and its seconds are reported (compile_s). TORCHINDUCTOR_CACHE_DIR says where
      inductor keeps its code (bench/run.sh: under its OUT folder). When inductor cannot
      compile here, the JSON says why ("error": the line that stopped it) and the exit is 3.
  bench_torch.py --check DIR
      DIR from `hp run --dump DIR` (dense models): loads its initial model and batch, computes
      the loss and every gradient here and compares them with hyperpar's; exit 1 on a miss.
      This is what shows that the timed model is the same function as hyperpar's.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

# one safetensors reader for both PyTorch scripts: tests/check_torch.py's
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from check_torch import read_safetensors  # noqa: E402

# name: V, D, L, H, Hkv, F (the dense configs of src/model/config.c)
MODELS = {
    "tiny": (256, 64, 2, 8, 4, 128),
    "small": (256, 128, 4, 8, 4, 256),
    "bench": (256, 512, 8, 8, 8, 1536),
}
NORM_EPS = 1e-5
ROPE_THETA = 10000.0


class Model(torch.nn.Module):
    def __init__(self, V, D, L, H, Hkv, Fh, S):
        super().__init__()
        self.V, self.D, self.L, self.H, self.Hkv, self.Fh = V, D, L, H, Hkv, Fh
        self.hd = D // H
        P = torch.nn.Parameter
        e = torch.empty
        self.params = {"tok_embeddings.weight": P(e(V, D))}
        for l in range(L):
            pre = f"layers.{l}."
            self.params[pre + "attention_norm.weight"] = P(e(D))
            self.params[pre + "attention.wq.weight"] = P(e(H * self.hd, D))
            self.params[pre + "attention.wk.weight"] = P(e(Hkv * self.hd, D))
            self.params[pre + "attention.wv.weight"] = P(e(Hkv * self.hd, D))
            self.params[pre + "attention.wo.weight"] = P(e(D, H * self.hd))
            self.params[pre + "ffn_norm.weight"] = P(e(D))
            self.params[pre + "feed_forward.w1.weight"] = P(e(Fh, D))
            self.params[pre + "feed_forward.w2.weight"] = P(e(D, Fh))
            self.params[pre + "feed_forward.w3.weight"] = P(e(Fh, D))
        self.params["norm.weight"] = P(e(D))
        self.params["output.weight"] = P(e(V, D))
        for i, (name, p) in enumerate(self.params.items()):
            self.register_parameter(f"p{i}", p)
        self.init_weights()
        self.set_rope(S)

    def init_weights(self):
        # model.md's stds (a different generator from hyperpar's: the timing does not care)
        g = torch.Generator().manual_seed(1234)
        with torch.no_grad():
            for name, p in self.params.items():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                    continue
                std = 0.02
                if name == "tok_embeddings.weight":
                    std = 1.0
                elif name == "output.weight":
                    std = self.D ** -0.5
                elif any(name.endswith(s) for s in ("wo.weight", "w2.weight", "w3.weight")):
                    l = int(name.split(".")[1])
                    std = 0.02 / math.sqrt(2 * (l + 1))
                p.normal_(0.0, std, generator=g)

    def set_rope(self, S):
        # f_j = theta^(-2j/hd), a = pos * f_j in double, cos/sin rounded to float (as hyperpar)
        j = torch.arange(self.hd // 2, dtype=torch.float64)
        f = ROPE_THETA ** (-2.0 * j / self.hd)
        a = torch.arange(S, dtype=torch.float64)[:, None] * f[None, :]
        self.cos = torch.cos(a).float()   # (S, hd/2)
        self.sin = torch.sin(a).float()

    def rope(self, x):
        # x (B, S, nh, hd): pairs (x[2j], x[2j+1]) rotated by the angle of (pos, j)
        B, S, nh, hd = x.shape
        xp = x.view(B, S, nh, hd // 2, 2)
        x0, x1 = xp[..., 0], xp[..., 1]
        c = self.cos[:S, None, :]
        s = self.sin[:S, None, :]
        return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).view(B, S, nh, hd)

    @staticmethod
    def rmsnorm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + NORM_EPS) * w

    def attention(self, x, l):
        B, S, D = x.shape
        p, hd = self.params, self.hd
        pre = f"layers.{l}.attention."
        q = F.linear(x, p[pre + "wq.weight"]).view(B, S, self.H, hd)
        k = F.linear(x, p[pre + "wk.weight"]).view(B, S, self.Hkv, hd)
        v = F.linear(x, p[pre + "wv.weight"]).view(B, S, self.Hkv, hd)
        q, k = self.rope(q), self.rope(k)
        grp = self.H // self.Hkv
        if grp > 1:   # query head h reads kv head h // grp
            k = k.repeat_interleave(grp, dim=2)
            v = v.repeat_interleave(grp, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)   # (B, H, S, hd)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
        mask = torch.ones(S, S, dtype=torch.bool).triu(1)                   # key > query
        scores = scores.masked_fill(mask, float("-inf"))
        out = torch.matmul(torch.softmax(scores, dim=-1), v)               # (B, H, S, hd)
        out = out.transpose(1, 2).reshape(B, S, self.H * hd)
        return F.linear(out, p[pre + "wo.weight"])

    def ffn(self, x, l):
        p, pre = self.params, f"layers.{l}.feed_forward."
        return F.linear(F.silu(F.linear(x, p[pre + "w1.weight"])) * F.linear(x, p[pre + "w3.weight"]),
                        p[pre + "w2.weight"])

    def forward(self, tokens, labels):
        p = self.params
        h = p["tok_embeddings.weight"][tokens]
        for l in range(self.L):
            h = h + self.attention(self.rmsnorm(h, p[f"layers.{l}.attention_norm.weight"]), l)
            h = h + self.ffn(self.rmsnorm(h, p[f"layers.{l}.ffn_norm.weight"]), l)
        logits = F.linear(self.rmsnorm(h, p["norm.weight"]), p["output.weight"])
        # sum over valid labels / N_valid (mean CE with ignore_index -100)
        return F.cross_entropy(logits.view(-1, self.V), labels.reshape(-1), ignore_index=-100)


def step_flops(V, D, L, H, Hkv, Fh, B, S):
    """The same count as hp bench (tools/hp/bench/cmd_bench.c, bench/README.md)."""
    hd = D // H
    P = V * D + L * (D * H * hd * 2 + D * Hkv * hd * 2 + 3 * D * Fh)
    matmul = 6.0 * P * B * S
    attn = 12.0 * L * B * H * hd * (S * (S + 1) / 2.0)
    return matmul, attn


def blas_core():
    """The OpenBLAS core PyTorch's BLAS runs (Debian's torch calls libblas.so.3 = OpenBLAS): the
    library is found among this process's mappings and asked, as hp bench asks its own."""
    import ctypes
    try:
        libs = sorted({l.split()[-1] for l in open("/proc/self/maps")
                       if "openblas" in l.lower() and ".so" in l})
    except OSError:
        return ""
    for path in libs:
        try:
            fn = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_char_p
        return fn().decode()
    return ""


def torch_blas():
    """What this torch multiplies with: Debian's 1.13 calls the system OpenBLAS; PyPI's 2.x wheels
    carry MKL (and oneDNN) linked in."""
    cfg = torch.__config__.show()
    for key in ("BLAS_INFO=", "blas_info="):
        if key in cfg:
            return cfg.split(key, 1)[1].split(",")[0].strip()
    return "mkl" if torch.backends.mkl.is_available() else ""


def bench(args):
    torch.set_num_threads(args.threads)
    V, D, L, H, Hkv, Fh = MODELS[args.model]
    B, S = args.batch, args.seq_len
    torch.manual_seed(0)
    model = Model(V, D, L, H, Hkv, Fh, S)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.1)
    impl = "pytorch-eager-bf16-autocast" if args.bf16 else "pytorch-eager"
    run = model
    compile_s = None
    if args.compile:
        impl = "pytorch-compile-bf16-autocast" if args.bf16 else "pytorch-compile"
        if not hasattr(torch, "compile"):
            return fail(args, impl, f"torch {torch.__version__} has no torch.compile (2.0 or later)")
        run = torch.compile(model)   # backend inductor: C++/OpenMP kernels on the CPU
    g = torch.Generator().manual_seed(1)

    def one_step():
        ids = torch.randint(0, V, (B, S + 1), generator=g)
        tokens, labels = ids[:, :S].contiguous(), ids[:, 1:].contiguous()
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        # --bf16: PyTorch's bf16 autocast (fp32 parameters and AdamW, bf16 matmuls), what a
        # user of hp's --mixed-precision-param bfloat16 compares with
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            l = run(tokens, labels)
        l.backward()
        opt.step()
        loss = l.item()
        return (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3, loss

    if args.compile:
        # the compile warm-up, untimed: dynamo traces, inductor writes and builds its C++
        # (forward and backward graphs) on this first call
        try:
            dt, _, loss = one_step()
        except Exception as e:   # noqa: BLE001 - the reason is the result
            return fail(args, impl, reason_line(e))
        compile_s = dt * 1e-3
        print(f"  torch compile step (untimed): {compile_s:.1f} s, loss {loss:.4f}", file=sys.stderr)
    times, cpus, loss = [], [], 0.0
    for s in range(args.warmup + args.steps):
        dt, ct, loss = one_step()
        if s >= args.warmup:
            times.append(dt)
            cpus.append(ct)
        print(f"  torch step {s + 1}{' (warm-up)' if s < args.warmup else ''}: {dt:.1f} ms "
              f"(cpu {ct:.0f} ms), loss {loss:.4f}", file=sys.stderr)
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    matmul, attn = step_flops(V, D, L, H, Hkv, Fh, B, S)
    res = {
        "impl": impl, "torch": torch.__version__, "model": args.model, "batch": B,
        "seq_len": S, "threads": torch.get_num_threads(),
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""), "steps": args.steps,
        "ms_best": times[0], "ms_median": median,
        # the process's CPU time (all its threads) of the least-CPU step: on a shared machine it
        # moves much less than the wall time (hp bench's cpu_ms_best is the same measure)
        "cpu_ms_best": min(cpus), "tokens_per_s": B * S / (times[0] * 1e-3),
        "flops_per_step": matmul + attn, "gflops": (matmul + attn) / (times[0] * 1e-3) * 1e-9,
        "loss_last": loss, "blas_core": blas_core(), "blas": torch_blas(),
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
    }
    if compile_s is not None:
        res["compile_s"] = compile_s
        res["inductor_cache_dir"] = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    write_json(args, res)
    return 0


def write_json(args, res):
    text = json.dumps(res, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


def reason_line(e):
    """The line that stops a compile: the last non-empty line of the exception's message that is
    not dynamo's advice (inductor wraps a C++ build failure in several lines)."""
    # dynamo appends its advice ("Set TORCHDYNAMO_VERBOSE=1 ...", "You can suppress ..."): not a cause
    advice = ("Set TORCHDYNAMO_VERBOSE", "You can suppress", "For even more developer context")
    lines = [l.strip() for l in str(e).splitlines() if l.strip() and not l.strip().startswith(advice)]
    return f"{type(e).__name__}: {lines[-1] if lines else ''}"


def fail(args, impl, reason):
    print(f"bench_torch.py: {impl} not run: {reason}", file=sys.stderr)
    write_json(args, {"impl": impl, "torch": torch.__version__, "model": args.model,
                      "threads": args.threads, "error": reason})
    return 3


# ---- --check: the same function as hyperpar, on hyperpar's own dump ------------------------

def check(args):
    torch.set_num_threads(args.threads)
    with open(os.path.join(args.check, "result.json")) as f:
        res = json.load(f)
    m = res["model"]
    if m.get("num_experts", 0):
        print("bench_torch.py --check: MoE models are not modelled here (dense only)")
        return 2
    batch = read_safetensors(os.path.join(args.check, "batch.safetensors"))
    init = read_safetensors(os.path.join(args.check, "model.safetensors"))
    grads = read_safetensors(os.path.join(args.check, "grads.safetensors"))
    tokens, labels = batch["tokens"].long(), batch["labels"].long()
    S = tokens.shape[1]
    model = Model(m["vocab_size"], m["dim"], m["n_layers"], m["n_heads"], m["n_kv_heads"],
                  m["ffn_hidden"], S)
    with torch.no_grad():
        for name, p in model.params.items():
            p.copy_(init[name])
    loss = model(tokens, labels)
    loss.backward()
    ok = True
    loss_err = abs(loss.item() - res["loss"]) / abs(res["loss"])
    print(f"loss: torch {loss.item():.7f}  hyperpar {res['loss']:.7f}  rel err {loss_err:.2e}")
    ok &= loss_err < 1e-5
    worst, worst_name = 0.0, ""
    for name, p in model.params.items():
        ref = grads[name]
        rel = ((p.grad - ref).norm() / ref.norm().clamp_min(1e-30)).item()
        if rel > worst:
            worst, worst_name = rel, name
        ok &= rel < 1e-4
    print(f"grads: worst relative Frobenius error {worst:.2e} ({worst_name}) over "
          f"{len(model.params)} tensors")
    print("check: PASS" if ok else "check: FAIL")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="bench", choices=sorted(MODELS))
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--json")
    ap.add_argument("--check", metavar="DIR")
    ap.add_argument("--bf16", action="store_true", help="the step under torch.autocast(cpu, bfloat16)")
    ap.add_argument("--compile", action="store_true",
                    help="the model under torch.compile (inductor, torch >= 2); compile step untimed")
    args = ap.parse_args()
    if args.check:
        return check(args)
    if args.steps < 1 or args.batch < 1 or args.seq_len < 1 or args.threads < 1:
        print("bench_torch.py: --steps, --batch, --seq-len and --threads must be >= 1", file=sys.stderr)
        return 2
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
