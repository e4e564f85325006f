#!/usr/bin/env python3
"""check_layers.py - dependencies point down, tier by tier:
  base (dims, util) -> comm | data | tokenizer -> kernels -> model | optim -> precision -> parallel -> plan -> train
  -> checkpoint | verify -> model_io | generate -> job -> metrics -> tool
Layers of one tier (a | b) are siblings: neither may include the other. Reads every #include "..."
of src/, include/hyperpar/ and tools/hp/, gives each file the layer of its folder (a public header
the layer of what it declares), and fails on an include of a higher layer or of a sibling, and on
a cycle of includes, unless the edge is one of KNOWN_BACK_EDGES (debts, each with its reason;
removing one from the code makes this script ask for its removal here too; today there is none).
It also fails on a folder under src/ or tools/ whose own .c/.h files hold more than
MAX_FOLDER_LINES lines. Exit 0 clean, 1 with one line per problem.
"""
import os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIERS = [("base",), ("comm", "data", "tokenizer"), ("kernels",), ("model", "optim"), ("precision",), ("parallel",), ("plan",),
         ("train",), ("checkpoint", "verify"), ("model_io", "generate"), ("job",), ("metrics",), ("tool",)]
TIER = {layer: i for i, tier in enumerate(TIERS) for layer in tier}
FOLDER = {"src/dims": "base", "src/util": "base", "src/comm": "comm", "src/data": "data", "src/tokenizer": "tokenizer",
          "src/kernels": "kernels", "src/model": "model", "src/optim": "optim", "src/precision": "precision",
          "src/parallel": "parallel", "src/plan": "plan", "src/train": "train",
          "src/checkpoint": "checkpoint", "src/verify": "verify", "src/model_io": "model_io", "src/generate": "generate",
          "src/job": "job", "src/metrics": "metrics", "tools/hp": "tool"}   # tools/hp/cli, run, launch, matrix, bench, plan: all tool
PUBLIC = {  # include/hyperpar/<name>: the layer that implements it
    "optim.h": "optim", "dims.h": "base", "mesh.h": "base", "shapes.h": "base", "pipeline.h": "base", "config.h": "base",
    "rng.h": "base", "safetensors.h": "base", "failpoint.h": "base", "memtrack.h": "base", "structure.h": "base",
    "comm.h": "comm", "data.h": "data", "kernels.h": "kernels", "blas.h": "kernels", "cpu.h": "kernels", "bf16.h": "base", "float8.h": "kernels",
    "params.h": "model", "moe.h": "model",
    "cp.h": "parallel", "cp_stats.h": "parallel", "ulysses.h": "parallel",
    "plan.h": "plan", "traffic.h": "plan", "traffic_ac.h": "plan",
    "train.h": "train",
    "checkpoint.h": "checkpoint",
    "verify.h": "verify", "verify_record.h": "verify", "dump.h": "verify", "inspect.h": "verify",
    "recipes.h": "verify",
    "hf.h": "model_io", "gguf.h": "model_io", "generate.h": "generate", "tokenizer.h": "tokenizer",
    "job.h": "job", "metrics.h": "metrics",
}
# Edges that point up, each with the reason it is tolerated (issue 11 removed the last ones:
# the model reaches the styles only through the hooks of src/model/model_hooks.h, which the
# train layer fills from the style states).
KNOWN_BACK_EDGES = set()
MAX_FOLDER_LINES = 2600   # the lines of one folder's own .c/.h files (docs/architecture.md)

def layer_of_path(rel):
    if rel.startswith("include/hyperpar/"):
        return PUBLIC.get(os.path.basename(rel))
    for folder, layer in FOLDER.items():
        if rel.startswith(folder + "/"):
            return layer
    return None

def resolve(inc, src_rel):
    """The repository path an include names."""
    if inc.startswith("hyperpar/"):
        return "include/" + inc
    for base in (os.path.dirname(src_rel), "src", "tools/hp"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(os.path.join(ROOT, cand)):
            return cand
    return None

def main():
    files = []
    for top in ("src", "include/hyperpar", "tools/hp"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            files += [os.path.relpath(os.path.join(dirpath, n), ROOT) for n in names if n.endswith((".c", ".h"))]
    problems, used_known, graph = [], set(), {}
    for rel in sorted(files):
        me = layer_of_path(rel)
        if me is None:
            problems.append(f"{rel}: no layer (add its folder or header to check_layers.py)")
            continue
        text = open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace").read()
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            target = resolve(inc, rel)
            if target is None:
                continue
            graph.setdefault(rel, set()).add(target)
            them = layer_of_path(target)
            if them is None:
                problems.append(f"{target}: no layer (included by {rel})")
                continue
            if TIER[them] > TIER[me] or (TIER[them] == TIER[me] and them != me):
                if (rel, inc) in KNOWN_BACK_EDGES:
                    used_known.add((rel, inc))
                else:
                    what = "a higher layer" if TIER[them] > TIER[me] else "a sibling layer"
                    problems.append(f"{rel} ({me}) includes {inc} ({them}): {what}")
    for edge in sorted(KNOWN_BACK_EDGES - used_known):
        problems.append(f"{edge[0]} no longer includes {edge[1]}: remove it from KNOWN_BACK_EDGES")
    # cycles of includes (headers only: a .c file is never included)
    state = {}
    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                problems.append("include cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif not state.get(nxt):
                visit(nxt, stack + [nxt])
        state[node] = 2
    for node in sorted(graph):
        if not state.get(node):
            visit(node, [node])
    # a folder is one purpose: its own .c and .h files (not its subfolders') stay under the bar
    for top in ("src", "tools"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            lines = sum(sum(1 for _ in open(os.path.join(dirpath, n), encoding="utf-8", errors="replace"))
                        for n in names if n.endswith((".c", ".h")))
            if lines > MAX_FOLDER_LINES:
                problems.append(f"{os.path.relpath(dirpath, ROOT)}: {lines} lines of .c/.h, more than "
                                f"{MAX_FOLDER_LINES}: split it into folders of one purpose each")
    for p in problems:
        print("check_layers: " + p)
    print(f"check_layers: {len(files)} files, {sum(len(v) for v in graph.values())} includes, "
          f"{len(used_known)} known back edges, {len(problems)} problems")
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())
