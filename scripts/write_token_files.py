#!/usr/bin/env python3
"""write_token_files.py - the same token ids in every format hp reads (docs/data.md,
docs/data.md), and the bad files of tests/bad_inputs/cases.txt; python3 stdlib only.

  scripts/write_token_files.py formats TEXT DIR   # DIR/same.{llmc1.bin, llmc7.bin, u16, u32},
                                                  # DIR/same_meg.{bin,idx}: TEXT's bytes as ids
  scripts/write_token_files.py bad DIR            # DIR/bad_*, ...: one broken file per refusal,
                                                  # DIR/good.bin, good.u16 (a resume on another dataset)

Layouts: llm.c shard (LLMC dev/data/data_common.py): 256 LE int32 header (magic, version, count),
then uint16 (v1) or uint32 (v7) tokens. Megatron (MEG megatron/core/datasets/indexed_dataset.py):
PREFIX.idx = "MMIDIDX\\0\\0", u64 version 1, u8 dtype code, u64 sequences n, u64 documents m,
int32[n] lengths, int64[n] byte pointers into PREFIX.bin, int64[m] document indices 0..n.
Raw (nanoGPT's train.bin): LE uint16 or uint32, no header.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from text_to_llmc import shard_bytes  # noqa: E402

MEG_CODES = {1: "B", 2: "b", 3: "h", 4: "i", 5: "q", 8: "H"}


def megatron(prefix, ids, seq_len=1000, code=8, version=1, bin_gap=0):
    """PREFIX.bin / .idx of ids cut into sequences of seq_len (two per document)."""
    fmt = MEG_CODES.get(code, "H")
    w = struct.calcsize("<" + fmt)
    seqs = [ids[i:i + seq_len] for i in range(0, len(ids), seq_len)]
    binary, pointers = b"", []
    for s in seqs:
        binary += b"\0" * (bin_gap * w)
        pointers.append(len(binary))
        binary += struct.pack("<%d%s" % (len(s), fmt), *s)
    docs = list(range(0, len(seqs), 2)) + [len(seqs)]
    idx = b"MMIDIDX\0\0" + struct.pack("<QBQQ", version, code, len(seqs), len(docs))
    idx += struct.pack("<%di" % len(seqs), *[len(s) for s in seqs])
    idx += struct.pack("<%dq" % len(seqs), *pointers)
    idx += struct.pack("<%dq" % len(docs), *docs)
    with open(prefix + ".bin", "wb") as f:
        f.write(binary)
    with open(prefix + ".idx", "wb") as f:
        f.write(idx)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def formats(text, out):
    with open(text, "rb") as f:
        ids = list(f.read())
    write(os.path.join(out, "same.llmc1.bin"), shard_bytes(ids, 1))
    write(os.path.join(out, "same.llmc7.bin"), shard_bytes(ids, 7))
    write(os.path.join(out, "same.u16"), struct.pack("<%dH" % len(ids), *ids))
    write(os.path.join(out, "same.u32"), struct.pack("<%dI" % len(ids), *ids))
    megatron(os.path.join(out, "same_meg"), ids, seq_len=997, code=4, bin_gap=3)   # int32, gaps


def bad(out):
    ids = [i * 7 % 256 for i in range(4000)]
    p = lambda name: os.path.join(out, name)  # noqa: E731
    good = shard_bytes(ids, 1)
    write(p("bad_magic.bin"), struct.pack("<i", 20240521) + good[4:])
    write(p("bad_version.bin"), good[:4] + struct.pack("<i", 7) + good[8:])
    write(p("bad_size.bin"), good[:-6])                        # 3 tokens short
    write(p("bad_vocab.bin"), shard_bytes(ids[:100] + [300] + ids[100:], 1))   # 300 >= tiny's 256
    write(p("headerless.u16"), struct.pack("<%dH" % len(ids), *ids))
    write(p("few.bin"), shard_bytes(ids[:100], 1))            # 3 windows of 33 tokens
    write(p("good.bin"), good)                                 # a checkpoint's dataset, and
    write(p("good.u16"), struct.pack("<%dH" % len(ids), *ids))  # the same ids, another format
    megatron(p("bad_idx"), ids, seq_len=1000)
    with open(p("bad_idx.idx"), "r+b") as f:                    # sequence 3's pointer past the .bin
        f.seek(34 + 4 * 4 + 3 * 8)
        f.write(struct.pack("<q", 2 * 4000))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "formats":
        formats(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "bad":
        bad(sys.argv[2])
    else:
        sys.exit("usage: write_token_files.py formats TEXT DIR | bad DIR")


if __name__ == "__main__":
    main()
