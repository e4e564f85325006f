#!/usr/bin/env python3
"""check_walkthrough.py HP UNUSED DIR - the README's "Train, sample, export" walk-through, small.

The README's commands on a short text (the repository's docs/, a 512-piece tokenizer) and a few
steps of examples/llama3_perl.toml (its model, optimizer, tokenizer key and samples; the data,
the steps and the sequence shortened by flags):
  hp tokenize -> hp run --config (with a validation round and samples, text through the
  tokenizer) -> hp generate --tokenizer --prompt TEXT -> hp eval --tokenizer (bits per byte)
  -> hp export --format hf / gguf --tokenizer;
then the consumers people use read the exports:
  - transformers: LlamaForCausalLM + the folder's tokenizer (LlamaTokenizer on tokenizer.model)
    encode the prompt to hp's ids, generate hp's 24 greedy ids, and decode them to hp's text;
  - llama.cpp (llama-cpp-python): the GGUF (F32, an F32 KV cache) tokenizes the prompt to hp's
    ids and generates hp's 24 greedy ids.
Each figure is printed. Exit 0 pass, 1 fail.
"""
import json, os, subprocess, sys

hp, _, work = sys.argv[1:4]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run(["rm", "-rf", work], check=True)
os.makedirs(work)
env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
failed = 0


def run(*args, out=None):
    r = subprocess.run([hp, *args], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: hp {' '.join(args)}: exit {r.returncode}: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return r


def check(ok, what):
    global failed
    print(f"check_walkthrough: {what}: {'PASS' if ok else 'FAIL'}")
    failed |= not ok


tok, out = os.path.join(work, "tok"), os.path.join(work, "out")
run("tokenize", os.path.join(root, "docs"), "--out", tok, "--vocab-size", "512", "--val-fraction", "0.1")
prompt = "The layout"
r = run("run", "--config", os.path.join(root, "examples", "llama3_perl.toml"), "--training.steps", "40",
        "--training.seq_len", "64", "--training.dataset_path", f"{tok}/train_000000.bin",
        "--validation.dataset_path", f"{tok}/val_000000.bin", "--validation.freq", "20", "--validation.steps", "2",
        "--model.hf_assets_path", tok, "--sample.every", "20", "--sample.prompt", prompt,
        "--metrics.log_freq", "20", "--job.dump_folder", out, "--checkpoint.interval", "40")
samples = [json.loads(l) for l in open(f"{out}/metrics.jsonl") if '"type":"sample"' in l]
check([s["step"] for s in samples] == [20, 40] and all(s["text"] for s in samples),
      f"samples during training at steps {[s['step'] for s in samples]}: step 40 {samples[-1]['text']!r}")
ck = f"{out}/checkpoint"
gen = os.path.join(work, "gen.json")
run("generate", "--checkpoint", ck, "--tokenizer", tok, "--prompt", prompt, "--max-new-tokens", "24", "--json", gen)
g = json.load(open(gen))
n = min(24, len(samples[-1]["ids"]))
check(g["ids"][:n] == samples[-1]["ids"][:n],
      f"hp generate from the step-40 checkpoint continues {prompt!r} with {g['text']!r}, step 40's sample")
ev = os.path.join(work, "eval.json")
run("eval", "--checkpoint", ck, "--data", f"{tok}/val_000000.bin", "--tokenizer", tok, "--batches", "2",
    "--config", os.path.join(root, "examples", "llama3_perl.toml"), "--training.seq_len", "64", "--json", ev)
e = json.load(open(ev))
val = [json.loads(l) for l in open(f"{out}/metrics.jsonl") if '"type":"val"' in l][-1]
check(e["loss"] == val["loss"] and 0 < e["bits_per_byte"] < e["loss"] / 0.6931,
      f"hp eval: loss {e['loss']:.6f} (the run's last round {val['loss']:.6f}), bits per byte {e['bits_per_byte']:.4f}")
hf, gguf = os.path.join(work, "hf"), os.path.join(work, "model.gguf")
run("export", ck, "--format", "hf", "--tokenizer", tok, "--out", hf)
run("export", ck, "--format", "gguf", "--tokenizer", tok, "--out", gguf)

import torch                                    # noqa: E402 - after hp's part, which needs neither
from transformers import AutoTokenizer, LlamaForCausalLM   # noqa: E402
t = AutoTokenizer.from_pretrained(hf)
ids = t(prompt)["input_ids"]
check(ids == g["prompt_ids"], f"transformers' tokenizer: {prompt!r} -> {ids}, hp's {g['prompt_ids']}")
m = LlamaForCausalLM.from_pretrained(hf, torch_dtype=torch.float32, attn_implementation="eager")
with torch.no_grad():
    new = m.generate(torch.tensor([g["prompt_ids"]]), max_new_tokens=24, do_sample=False, eos_token_id=None,
                     pad_token_id=0)[0, len(g["prompt_ids"]):].tolist()
check(new == g["ids"], f"transformers' greedy ids {new[:8]}... are hp generate's")
text = t.decode(new, skip_special_tokens=False)
check(text.lstrip() == g["text"].lstrip(), f"transformers decodes them to {text!r}, hp {g['text']!r}")

import llama_cpp                                # noqa: E402
llm = llama_cpp.Llama(model_path=gguf, n_ctx=128, n_threads=1, verbose=False, type_k=0, type_v=0)
lids = llm.tokenize(prompt.encode(), add_bos=True)
check(lids == g["prompt_ids"], f"llama.cpp's tokenizer: {prompt!r} -> {lids}")
llm.reset()
got = []
for tid in llm.generate(g["prompt_ids"], temp=0.0, top_k=1, reset=True):
    got.append(tid)
    if len(got) == 24:
        break
check(got == g["ids"], f"llama.cpp's greedy ids {got[:8]}... are hp generate's")
sys.exit(failed)
