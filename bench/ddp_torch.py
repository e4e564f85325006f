#!/usr/bin/env python3
"""ddp_torch.py - PyTorch's side of bench/scaling.sh: the model of bench_torch.py trained with
torch.distributed DDP over gloo on 127.0.0.1, WORLD ranks on this machine, BATCH sequences per
rank, 1 thread per rank. Rank 0 prints one JSON object: the median and best step time.

usage:
  ddp_torch.py --world 2 [--model small] [--seq-len 256] [--batch-per-rank 2] [--steps 8]
               [--warmup 2] [--port 29517]
      starts WORLD worker processes itself (world 1: no DDP wrapper, no process group: the
      baseline a weak-scaling efficiency is measured against, as hp run's 1 rank has no comm)

A step is what hp run times: zero_grad, forward, backward (DDP all-reduces the gradients in
its buckets while the backward runs), AdamW step. Step times are rank 0's wall clock after a
barrier, so every rank starts a step together.
"""
import argparse
import json
import os
import statistics
import sys
import time


def worker(rank, args):
    # one thread per rank, before torch starts its pools (OpenBLAS reads its variable at load)
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    import torch.distributed as dist
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_torch import MODELS, Model

    torch.set_num_threads(1)
    V, D, L, H, Hkv, Fh = MODELS[args.model]
    B, S = args.batch_per_rank, args.seq_len
    torch.manual_seed(0)
    model = Model(V, D, L, H, Hkv, Fh, S)
    if args.world > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}",
                                rank=rank, world_size=args.world)
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    g = torch.Generator().manual_seed(1 + rank)
    times = []
    for s in range(args.warmup + args.steps):
        ids = torch.randint(0, V, (B, S + 1), generator=g)
        tokens, labels = ids[:, :S].contiguous(), ids[:, 1:].contiguous()
        if args.world > 1:
            dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, labels)
        loss.backward()
        opt.step()
        loss.item()
        dt = (time.perf_counter() - t0) * 1e3
        if s >= args.warmup:
            times.append(dt)
    if args.world > 1:
        dist.destroy_process_group()
    if rank == 0:
        print(json.dumps({"impl": "pytorch-ddp-gloo", "world": args.world, "model": args.model,
                          "seq_len": S, "batch_per_rank": B, "steps": args.steps,
                          "ms_median": statistics.median(times), "ms_best": min(times),
                          "torch": torch.__version__}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--model", default="small")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch-per-rank", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--port", type=int, default=29517)
    ap.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)  # a started worker
    args = ap.parse_args()
    if args.world < 1 or args.steps < 1 or args.batch_per_rank < 1:
        print("ddp_torch.py: --world, --steps and --batch-per-rank must be >= 1", file=sys.stderr)
        return 2
    if args.rank >= 0 or args.world == 1:
        worker(max(args.rank, 0), args)
        return 0
    # the ranks are separate interpreters (not fork: torch's thread pools do not survive it),
    # each with OPENBLAS_NUM_THREADS=1 set before it loads OpenBLAS
    import subprocess
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", str(r)] + sys.argv[1:],
                              env=env) for r in range(args.world)]
    rcs = [p.wait() for p in procs]
    return max(rcs)


if __name__ == "__main__":
    sys.exit(main())
