#!/bin/sh
# run_tokenize.sh HP DOCS DIR - `hp tokenize` end to end on the repository's own docs/ (a folder
# of Markdown files), vocab 512, a tenth for validation:
#  - the summary line's token counts are the shards' header counts; the shards are llm.c v1
#    (magic 20240520, uint16); every id < 512; the stream is the files in bytewise order of
#    their paths, each <s> (1) then its tokens, split by tokens at round(0.1 x total);
#  - a second run into another folder writes byte-identical tokenizer.model and shards;
#  - SentencePiece's own tools agree: spm_decode of each document's ids gives back the file byte
#    for byte, and the pieces' bytes (spm_export_vocab: a byte piece 1, "▁" 1, specials 0) of
#    the whole stream add up to the texts' bytes + one dummy-prefix space per document (a
#    U+2581 of the text, SentencePiece's space mark, counts as the one space it decodes to);
#  - hp run trains 2 steps on train_000000.bin (a model of vocab_size 512) with a validation
#    round on val_000000.bin and a checkpoint; hp eval --tokenizer of that checkpoint gives the
#    round's loss and bits per byte = loss x tokens / ln 2 / the targets' bytes, recomputed here;
#  - hp export --tokenizer: the HF folder holds tokenizer.model (the same bytes) and names
#    <s> 1 </s> 2; the GGUF file's tokenizer.ggml.tokens/scores/token_type are the model's
#    pieces (spm_export_vocab), its bos/eos/unk 1 2 0.
# Exit 77 (skipped) when hp is built without SentencePiece.
set -eu
hp=$1 docs=$2 dir=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
export OPENBLAS_NUM_THREADS=1
# (with the library the probe ends at once too: 260 pieces are fewer than the text's characters need)
if "$hp" tokenize "$docs/cli.md" --out "$dir/probe" --vocab-size 260 2>&1 | grep -q "built without SentencePiece"; then
  echo "SKIP: hp was built without SentencePiece"; exit 77
fi
# the Markdown files, a few of them one folder down (the walk is recursive, in bytewise order)
mkdir -p "$dir/docs/sub"
cp "$docs"/*.md "$dir/docs/"
mv "$dir/docs/torch.md" "$dir/docs/data.md" "$dir/docs/sub/"
"$hp" tokenize "$dir/docs" --out "$dir/a" --vocab-size 512 --val-fraction 0.1 >"$dir/a.out" || fail "hp tokenize"
"$hp" tokenize "$dir/docs" --out "$dir/b" --vocab-size 512 --val-fraction 0.1 >"$dir/b.out" || fail "hp tokenize again"
cat "$dir/a.out"
for f in tokenizer.model train_000000.bin val_000000.bin; do
  cmp -s "$dir/a/$f" "$dir/b/$f" || fail "two runs on the same text: $f differs"
done
have_spm=1
command -v spm_decode >/dev/null && command -v spm_export_vocab >/dev/null || have_spm=0
[ "$have_spm" = 1 ] && spm_export_vocab --model="$dir/a/tokenizer.model" >"$dir/vocab.tsv"
python3 - "$dir" "$have_spm" <<'PY'
import os, re, struct, subprocess, sys
d, have_spm = sys.argv[1], sys.argv[2] == "1"
line = open(f"{d}/a.out").read()
m = re.search(r"(\d+) files \((\d+) skipped\), (\d+) bytes -> (\d+) tokens .* vocab (\d+) \| train (\d+) tokens in 1 shard, val (\d+) in 1", line)
assert m, f"summary line: {line!r}"
files, skipped, nbytes, tokens, vocab, ntrain, nval = map(int, m.groups())
def shard(p):
    raw = open(p, "rb").read()
    h = struct.unpack("<256i", raw[:1024])
    assert h[0] == 20240520 and h[1] == 1 and not any(h[3:]), f"{p}: header {h[:4]}"
    assert len(raw) == 1024 + 2 * h[2], f"{p}: size {len(raw)}, header count {h[2]}"
    return list(struct.unpack(f"<{h[2]}H", raw[1024:]))
train, val = shard(f"{d}/a/train_000000.bin"), shard(f"{d}/a/val_000000.bin")
assert (len(train), len(val)) == (ntrain, nval), f"headers {len(train)}, {len(val)}; the line {ntrain}, {nval}"
assert ntrain + nval == tokens and nval == round(0.1 * tokens), (ntrain, nval, tokens)
assert vocab == 512 and max(train + val) < 512
paths = []
for root, dirs, names in os.walk(f"{d}/docs"):
    paths += [os.path.join(root, n) for n in names]
paths.sort(key=lambda p: p.encode())
texts = [open(p, "rb").read() for p in paths]
assert files == len(paths) and skipped == 0 and nbytes == sum(map(len, texts)), (files, len(paths), nbytes)
stream = train + val
starts = [i for i, t in enumerate(stream) if t == 1]
assert len(starts) == files and starts[0] == 0, f"{len(starts)} <s> for {files} files"
docs = [stream[a + 1:b] for a, b in zip(starts, starts[1:] + [len(stream)])]
if have_spm:
    pieces = [l.split("\t")[0] for l in open(f"{d}/vocab.tsv", encoding="utf-8").read().split("\n") if l]
    assert len(pieces) == 512, len(pieces)
    def nbytes_of(p):
        if re.fullmatch(r"<0x[0-9A-F]{2}>", p): return 1
        if p in ("<unk>", "<s>", "</s>"): return 0
        return len(p.replace("\u2581", " ").encode())
    pb = [nbytes_of(p) for p in pieces]
    got = sum(pb[t] for t in stream)
    # U+2581 in a text is SentencePiece's space mark: 3 bytes of text, one space of a piece
    marks = sum(t.count("\u2581".encode()) for t in texts)
    want = nbytes + sum(1 for t in texts if t) - 2 * marks
    assert got == want, (f"the pieces' bytes {got}, the texts' bytes + one dummy prefix per document "
                         f"- 2 per U+2581 ({marks}) {want}")
    for k in (0, len(docs) // 2, len(docs) - 1):
        out = subprocess.run(["spm_decode", f"--model={d}/a/tokenizer.model", "--input_format=id"],
                             input=(" ".join(map(str, docs[k])) + "\n").encode(), stdout=subprocess.PIPE, check=True).stdout
        want = texts[k].replace("\u2581".encode(), b" ") + b"\n"
        assert out == want, f"spm_decode of document {k} ({paths[k]}) is not the file (U+2581 as a space)"
    open(f"{d}/piece_bytes.txt", "w").write(" ".join(map(str, pb)))
print(f"PASS: {files} files, {nbytes} bytes -> {tokens} tokens ({nbytes / tokens:.3f} bytes/token), "
      f"{ntrain} train + {nval} val; SentencePiece's tools {'agree' if have_spm else 'missing: not compared'}")
PY
printf '{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512, "rope_theta": 10000.0}\n' >"$dir/cfg.json"
"$hp" run --model-config "$dir/cfg.json" --steps 2 --data "$dir/a/train_000000.bin" --validation.enable \
  --validation.dataset_path "$dir/a/val_000000.bin" --validation.freq 2 --validation.steps 3 \
  --checkpoint-dir "$dir/ck" --checkpoint-every 2 --job.dump_folder "$dir/job" --quiet >/dev/null || fail "hp run on the shards"
"$hp" eval --checkpoint "$dir/ck/step-2" --model-config "$dir/cfg.json" --data "$dir/a/val_000000.bin" --batches 3 \
  --tokenizer "$dir/a" --json "$dir/eval.json" >"$dir/eval.out" || fail "hp eval --tokenizer"
grep -q "bits per byte" "$dir/eval.out" || fail "hp eval prints no bits per byte: $(cat "$dir/eval.out")"
"$hp" export "$dir/ck" --format hf --out "$dir/hf" --tokenizer "$dir/a/tokenizer.model" || fail "hp export --format hf --tokenizer"
"$hp" export "$dir/ck" --format gguf --out "$dir/m.gguf" --tokenizer "$dir/a" || fail "hp export --format gguf --tokenizer"
cmp -s "$dir/a/tokenizer.model" "$dir/hf/tokenizer.model" || fail "the HF folder's tokenizer.model is not the run's"
python3 - "$dir" "$have_spm" <<'PY'
import json, math, struct, sys
d, have_spm = sys.argv[1], sys.argv[2] == "1"
val = [json.loads(l) for l in open(f"{d}/job/metrics.jsonl") if json.loads(l).get("type") == "val"]
ev = json.load(open(f"{d}/eval.json"))
assert val and ev["loss"] == val[-1]["loss"], f"hp eval {ev['loss']!r}, the run's round {val[-1]['loss'] if val else None!r}"
if have_spm:
    pb = list(map(int, open(f"{d}/piece_bytes.txt").read().split()))
    raw = open(f"{d}/a/val_000000.bin", "rb").read()
    ids = struct.unpack(f"<{(len(raw) - 1024) // 2}H", raw[1024:])
    S, B = 32, 8
    tb = sum(pb[ids[w * (S + 1) + i]] for w in range(3 * B) for i in range(1, S + 1))
    assert ev["target_bytes"] == tb, (ev["target_bytes"], tb)
    want = ev["loss"] * ev["tokens"] / math.log(2) / tb
    assert abs(ev["bits_per_byte"] - want) <= 1e-12 * want, (ev["bits_per_byte"], want)
for f in ("config.json", "generation_config.json"):
    c = json.load(open(f"{d}/hf/{f}"))
    assert c.get("bos_token_id") == 1 and c.get("eos_token_id") == 2, (f, c)
tc = json.load(open(f"{d}/hf/tokenizer_config.json"))
assert (tc["bos_token"], tc["eos_token"], tc["unk_token"]) == ("<s>", "</s>", "<unk>"), tc
# the GGUF metadata, read with struct (GGUF v3: ggml docs/gguf.md)
b = open(f"{d}/m.gguf", "rb").read()
assert b[:4] == b"GGUF" and struct.unpack_from("<I", b, 4)[0] == 3
n_t, n_kv = struct.unpack_from("<QQ", b, 8)
at = 24
def s():
    global at
    n = struct.unpack_from("<Q", b, at)[0]; at += 8; at += n
    return b[at - n:at].decode()
SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
def value(t):
    global at
    if t == 8: return s()
    if t == 9:
        et, n = struct.unpack_from("<IQ", b, at); at += 12
        return [value(et) for _ in range(n)]
    v = struct.unpack_from(SCALAR[t], b, at)[0]; at += struct.calcsize(SCALAR[t])
    return v
kv = {}
for _ in range(n_kv):
    k = s(); t = struct.unpack_from("<I", b, at)[0]; at += 4
    kv[k] = value(t)
assert kv["tokenizer.ggml.model"] == "llama" and kv["llama.vocab_size"] == 512
toks, types, scores = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.token_type"], kv["tokenizer.ggml.scores"]
assert len(toks) == len(types) == len(scores) == 512
assert types[:3] == [2, 3, 3] and set(types[3:259]) == {6} and set(types[259:]) == {1}, types[:5]
assert (kv["tokenizer.ggml.bos_token_id"], kv["tokenizer.ggml.eos_token_id"], kv["tokenizer.ggml.unknown_token_id"]) == (1, 2, 0)
if have_spm:
    rows = [l.split("\t") for l in open(f"{d}/vocab.tsv", encoding="utf-8").read().split("\n") if l]
    assert toks == [r[0] for r in rows], "tokenizer.ggml.tokens are not the model's pieces"
    assert all(abs(sc - float(r[1])) == 0 for sc, r in zip(scores, rows)), "scores differ"
print(f"PASS: hp run trained on the shards; hp eval loss {ev['loss']:.4f} = the round's, "
      f"{ev['bits_per_byte']:.4f} bits per byte over {ev['target_bytes']} target bytes; "
      f"HF folder and GGUF carry the tokenizer")
PY
