#!/usr/bin/env python3
"""check_hf_transformers.py HP EXPORTER DIR - hp's Hugging Face export, proven by transformers.

hp trains step 1 of the tiny model in one process and dumps it (hp run --dump: the initial
model, the batch, the loss and every gradient). EXPORTER (test_hf export) writes the model as
a Hugging Face folder. transformers' own LlamaForCausalLM.from_pretrained loads the folder, runs
the batch forward (mean cross-entropy over every label) and backward, and its loss and every
gradient (mapped back to hp's names, q and k un-permuted) must be hp's: the loss within 1e-6
relative, each gradient within 1e-5 of its norm (fp32, different summation orders).
Two realistic export bugs must each fail that check: q/k written without the RoPE permutation
(TorchTitan #1291, llama.cpp #3018: the exported model writes gibberish) and gate_proj/up_proj
swapped. A tiny model trained 30 steps on a text and exported (hp export --format hf) must
generate the same 24 greedy ids with hp generate (one process and --tp 2) as with transformers'
generate(). Runs in the torch 2 venv (scripts/setup_torch2.sh) with transformers installed.
Exit 0 pass, 1 fail.
"""
import json, os, subprocess, sys
import torch
from safetensors.torch import load_file
import transformers
from transformers import LlamaForCausalLM

hp, exporter, work = sys.argv[1:4]
dump, hf = os.path.join(work, "dump"), os.path.join(work, "hf")
subprocess.run(["rm", "-rf", work], check=True)
os.makedirs(work)
env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
subprocess.run([hp, "run", "--model", "tiny", "--steps", "1", "--dump", dump, "--quiet"], check=True, env=env,
               stdout=subprocess.DEVNULL)
subprocess.run([exporter, "export", os.path.join(dump, "model.safetensors"), "tiny", hf], check=True)
want_loss = json.load(open(os.path.join(dump, "result.json")))["loss"]
batch = load_file(os.path.join(dump, "batch.safetensors"))
grads = load_file(os.path.join(dump, "grads.safetensors"))
cfg = json.load(open(os.path.join(hf, "config.json")))
hd = cfg["hidden_size"] // cfg["num_attention_heads"]

def to_hp(name):   # HF name -> hp name (the inverse of hp_hf_name)
    top = {"model.embed_tokens.weight": "tok_embeddings.weight", "model.norm.weight": "norm.weight",
           "lm_head.weight": "output.weight"}
    if name in top:
        return top[name]
    parts = name.split(".")
    l, rest = parts[2], ".".join(parts[3:])
    m = {"self_attn.q_proj.weight": "attention.wq.weight", "self_attn.k_proj.weight": "attention.wk.weight",
         "self_attn.v_proj.weight": "attention.wv.weight", "self_attn.o_proj.weight": "attention.wo.weight",
         "mlp.gate_proj.weight": "feed_forward.w1.weight", "mlp.up_proj.weight": "feed_forward.w3.weight",
         "mlp.down_proj.weight": "feed_forward.w2.weight", "input_layernorm.weight": "attention_norm.weight",
         "post_attention_layernorm.weight": "ffn_norm.weight"}
    return f"layers.{l}.{m[rest]}"

def from_hf_rows(w, heads):   # HF row h*hd + s*hd/2 + i -> hp row h*hd + 2i + s
    return w.view(heads, 2, hd // 2, -1).transpose(1, 2).reshape(heads * hd, -1)

def check(model):
    """hp's loss and gradients against this transformers model's; returns the worst figures."""
    model.zero_grad()
    logits = model(input_ids=batch["tokens"].long()).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                             batch["labels"].long().reshape(-1))
    loss.backward()
    rel_loss = abs(loss.item() - want_loss) / abs(want_loss)
    worst, worst_name = 0.0, ""
    for name, p in model.named_parameters():
        g = p.grad.detach()
        if name.endswith("q_proj.weight"):
            g = from_hf_rows(g, cfg["num_attention_heads"])
        elif name.endswith("k_proj.weight"):
            g = from_hf_rows(g, cfg["num_key_value_heads"])
        ref = grads[to_hp(name)]
        r = ((g - ref).norm() / ref.norm().clamp_min(1e-30)).item()
        if r > worst:
            worst, worst_name = r, to_hp(name)
    return rel_loss, worst, worst_name, loss.item()

def load():
    return LlamaForCausalLM.from_pretrained(hf, torch_dtype=torch.float32, attn_implementation="eager")

torch.manual_seed(0)
model = load()
rel_loss, worst, name, loss = check(model)
ok = rel_loss <= 1e-6 and worst <= 1e-5
print(f"check_hf_transformers: transformers {transformers.__version__}, torch {torch.__version__}: loss {loss:.9f} "
      f"(hp {want_loss:.9f}, rel {rel_loss:.2e}); worst gradient {name} rel {worst:.2e}: {'PASS' if ok else 'FAIL'}")
failed = 0 if ok else 1

def bug_no_permute(sd):   # q and k written as hp holds them
    for k in list(sd):
        if k.endswith("q_proj.weight") or k.endswith("k_proj.weight"):
            heads = cfg["num_attention_heads"] if "q_proj" in k else cfg["num_key_value_heads"]
            sd[k] = from_hf_rows(sd[k], heads)
def bug_gate_up_swapped(sd):
    for k in list(sd):
        if k.endswith("gate_proj.weight"):
            up = k.replace("gate_proj", "up_proj")
            sd[k], sd[up] = sd[up].clone(), sd[k].clone()

def greedy_check():
    """hp generate's greedy ids from an exported trained model are transformers' generate()'s."""
    ck, hf2 = os.path.join(work, "ck"), os.path.join(work, "hf-trained")
    subprocess.run([hp, "run", "--model", "tiny", "--steps", "30", "--optimizer", "adamw", "--lr", "3e-3", "--data",
                    "/usr/share/common-licenses/GPL-3", "--checkpoint-dir", ck, "--quiet"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    subprocess.run([hp, "export", ck, "--format", "hf", "--out", hf2], check=True, stdout=subprocess.DEVNULL)
    prompt = list(b"This License ")
    m = LlamaForCausalLM.from_pretrained(hf2, torch_dtype=torch.float32, attn_implementation="eager")
    with torch.no_grad():
        out = m.generate(torch.tensor([prompt]), max_new_tokens=24, do_sample=False, pad_token_id=0,
                         eos_token_id=None)[0, len(prompt):].tolist()
    ok = True
    for extra in ([], ["--tp", "2"]):
        js = os.path.join(work, "gen.json")
        subprocess.run([hp, "generate", "--load", hf2, "--prompt-ids", ",".join(map(str, prompt)),
                        "--max-new-tokens", "24", "--json", js] + extra, check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ids = json.load(open(js))["ids"]
        same = ids == out
        ok &= same
        print(f"check_hf_transformers: greedy, 24 tokens after {bytes(prompt)!r}{' ' + ' '.join(extra) if extra else ''}: "
              f"hp {bytes(ids)!r}, transformers {bytes(out)!r}: {'PASS' if same else 'FAIL'}")
    return ok

failed |= not greedy_check()

for bug in (bug_no_permute, bug_gate_up_swapped):
    m = load()
    sd = {k: v.clone() for k, v in m.state_dict().items()}
    bug(sd)
    m.load_state_dict(sd)
    rl, w, n, l = check(m)
    caught = rl > 1e-6 or w > 1e-5
    print(f"check_hf_transformers: injected {bug.__name__[4:]}: loss rel {rl:.2e}, worst gradient {n} rel {w:.2e}: "
          f"{'caught' if caught else 'NOT CAUGHT'}")
    failed |= not caught
sys.exit(failed)
