#!/usr/bin/env python3
"""text_to_llmc.py - a text file -> llm.c shards (docs/data.md), python3
stdlib only. The tokenizer is the byte tokenizer: each byte of the file is one token id in
0..255, so `hp run --data OUT_train.bin` trains on the same ids as `hp run --data TEXT` (bytes).

  scripts/text_to_llmc.py TEXT OUT [--val-fraction F] [--version 1|7]

writes OUT_train.bin, and with --val-fraction F > 0 also OUT_val.bin holding the last F of the
bytes (the split is at a byte: the two files hold every byte once). An llm.c shard (LLMC
dev/data/data_common.py) is a 1024-byte header of 256 little-endian int32 - magic 20240520,
version 1, the token count, the rest 0 - then the tokens as uint16 (version 7: magic 20240801,
uint32). Prints one line per file written: its path, tokens and bytes.
"""
import argparse
import os
import struct
import sys

MAGIC = {1: (20240520, "<H", 2), 7: (20240801, "<I", 4)}


def shard_bytes(ids, version=1):
    """The bytes of an llm.c shard holding ids."""
    magic, fmt, _ = MAGIC[version]
    header = struct.pack("<256i", magic, version, len(ids), *([0] * 253))
    return header + struct.pack("<%d%s" % (len(ids), fmt[1]), *ids)


def write_shard(path, ids, version=1):
    data = shard_bytes(ids, version)
    with open(path, "wb") as f:
        f.write(data)
    print("%s: %d tokens, %d bytes" % (path, len(ids), len(data)))


def main():
    ap = argparse.ArgumentParser(description="a text file -> llm.c shards of byte tokens (ids 0..255)")
    ap.add_argument("text", help="the text file (read as bytes)")
    ap.add_argument("out", help="output prefix: OUT_train.bin, OUT_val.bin")
    ap.add_argument("--val-fraction", type=float, default=0.0,
                    help="the last fraction of the bytes goes to OUT_val.bin (default 0: no val file)")
    ap.add_argument("--version", type=int, choices=(1, 7), default=1,
                    help="1: uint16 tokens (default), 7: uint32")
    a = ap.parse_args()
    if not 0.0 <= a.val_fraction < 1.0:
        sys.exit("text_to_llmc.py: --val-fraction must be in [0, 1), got %g" % a.val_fraction)
    try:
        with open(a.text, "rb") as f:
            ids = list(f.read())
    except OSError as e:
        sys.exit("text_to_llmc.py: %s: %s" % (a.text, e.strerror))
    if not ids:
        sys.exit("text_to_llmc.py: %s is empty" % a.text)
    n_val = int(len(ids) * a.val_fraction)
    folder = os.path.dirname(a.out)
    if folder:   # `data/vim` makes data/ as needed
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            sys.exit("text_to_llmc.py: cannot make folder %s: %s" % (folder, e.strerror))
    write_shard(a.out + "_train.bin", ids[:len(ids) - n_val], a.version)
    if n_val:
        write_shard(a.out + "_val.bin", ids[len(ids) - n_val:], a.version)


if __name__ == "__main__":
    main()
