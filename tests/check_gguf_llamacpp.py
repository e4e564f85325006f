#!/usr/bin/env python3
"""check_gguf_llamacpp.py HP EXPORTER DIR - hp's GGUF export, proven by llama.cpp itself.

hp trains step 1 of the tiny model in one process and dumps it (the initial model, the batch,
the loss). EXPORTER (test_hf gguf) writes the model as GGUF in F32, F16 and BF16, and llama.cpp
(llama-cpp-python) evaluates every sequence of the batch from its token ids, keeping every
position's logits. The mean cross-entropy over the batch's labels must be hp's loss: within
1e-5 relative for F32, within 1e-2 for F16 and BF16 (their weights are rounded, 2^-11 and 2^-8
relative); and F32's logits must be within 1e-4 of transformers' on hp's Hugging Face export of
the same model, with the same greedy token (the argmax) at every position whose top two logits
are apart by more than ten times that difference. A realistic bug must fail the check: the q and k weights written in
Hugging Face's rotate-half order (llama.cpp #3018: a converter that forgets to undo HF's
permutation): its logits leave transformers' by far more than 1e-4 (at initialisation the loss
alone hardly moves, so the check reads the logits). Exit 0 pass, 1 fail.
"""
import json, math, os, subprocess, sys
import numpy as np
from safetensors.numpy import load_file, save_file
import llama_cpp

hp, exporter, work = sys.argv[1:4]
dump = os.path.join(work, "dump")
subprocess.run(["rm", "-rf", work], check=True)
os.makedirs(work)
subprocess.run([hp, "run", "--model", "tiny", "--steps", "1", "--dump", dump, "--quiet"], check=True,
               env=dict(os.environ, OPENBLAS_NUM_THREADS="1"), stdout=subprocess.DEVNULL)
want = json.load(open(os.path.join(dump, "result.json")))["loss"]
batch = load_file(os.path.join(dump, "batch.safetensors"))
tokens, labels = batch["tokens"].astype(np.int64), batch["labels"].astype(np.int64)
B, S = tokens.shape

def llama_loss(path):
    """Mean cross-entropy of the batch under llama.cpp, and the (B, S, V) logits."""
    llm = llama_cpp.Llama(model_path=path, n_ctx=S, n_batch=S, logits_all=True, n_threads=1, verbose=False)
    all_logits, total = [], 0.0
    for b in range(B):
        llm.reset()
        llm.eval(tokens[b].tolist())
        logits = np.array(llm.scores[:S], dtype=np.float64)
        m = logits.max(axis=1, keepdims=True)
        lse = (m[:, 0] + np.log(np.exp(logits - m).sum(axis=1)))
        total += float((lse - logits[np.arange(S), labels[b]]).sum())
        all_logits.append(logits)
    llm.close()
    return total / (B * S), np.stack(all_logits)

failed = 0
results = {}
for dtype, bound in (("f32", 1e-5), ("f16", 1e-2), ("bf16", 1e-2)):
    path = os.path.join(work, f"tiny-{dtype}.gguf")
    subprocess.run([exporter, "gguf", os.path.join(dump, "model.safetensors"), "tiny", path, dtype], check=True)
    loss, logits = llama_loss(path)
    rel = abs(loss - want) / abs(want)
    ok = rel <= bound
    results[dtype] = logits
    print(f"check_gguf_llamacpp: llama-cpp-python {llama_cpp.__version__}, {dtype.upper()}: loss {loss:.9f} "
          f"(hp {want:.9f}, rel {rel:.2e}, bound {bound:g}): {'PASS' if ok else 'FAIL'}")
    failed |= not ok

# the logits and the greedy tokens of F32 against transformers on hp's HF export of the same model
import torch
from transformers import LlamaForCausalLM
hf = os.path.join(work, "hf")
subprocess.run([exporter, "export", os.path.join(dump, "model.safetensors"), "tiny", hf], check=True)
ref = LlamaForCausalLM.from_pretrained(hf, torch_dtype=torch.float32, attn_implementation="eager")
with torch.no_grad():
    hf_logits = ref(input_ids=torch.from_numpy(tokens)).logits.double().numpy()
# the bug: q and k in Hugging Face's order (interleaved pairs -> halves per head)
model = load_file(os.path.join(dump, "model.safetensors"))
cfg = {"tiny": (8, 4)}["tiny"]
hd = model["tok_embeddings.weight"].shape[1] // cfg[0]
for k in list(model):
    if k.endswith("attention.wq.weight") or k.endswith("attention.wk.weight"):
        heads = cfg[0] if "wq" in k else cfg[1]
        w = model[k]
        model[k] = np.ascontiguousarray(w.reshape(heads, hd // 2, 2, -1).transpose(0, 2, 1, 3).reshape(w.shape))
bad_model, bad = os.path.join(work, "hf-order.safetensors"), os.path.join(work, "hf-order.gguf")
save_file(model, bad_model)
subprocess.run([exporter, "gguf", bad_model, "tiny", bad, "f32"], check=True)
loss, bad_logits = llama_loss(bad)
rel, bad_gap = abs(loss - want) / abs(want), np.abs(bad_logits - hf_logits).max()
caught = rel > 1e-5 or bad_gap > 1e-4
print(f"check_gguf_llamacpp: injected qk_in_hf_order: loss rel {rel:.2e}, logits max |diff| {bad_gap:.2e}: "
      f"{'caught' if caught else 'NOT CAUGHT'}")
failed |= not caught

gap = np.abs(results["f32"] - hf_logits).max()
top2 = np.sort(hf_logits, axis=2)
clear = (top2[:, :, -1] - top2[:, :, -2]) > 10 * max(gap, 1e-6)
agree = (results["f32"].argmax(axis=2) == hf_logits.argmax(axis=2))[clear].mean() if clear.any() else 1.0
ok = gap <= 1e-4 and agree == 1.0
print(f"check_gguf_llamacpp: F32 logits against transformers: max |diff| {gap:.2e}; greedy tokens agree at "
      f"{agree * 100:.1f}% of the {int(clear.sum())} positions whose top two are apart: {'PASS' if ok else 'FAIL'}")
failed |= not ok
sys.exit(failed)
