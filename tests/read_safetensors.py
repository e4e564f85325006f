#!/usr/bin/env python3
"""read_safetensors.py - an independent safetensors reader (python3 stdlib only: struct + json).

Written against the file format alone, not against hyperpar's C code, so that it can prove that
what hyperpar writes is a real safetensors file. It applies the rules of the reference
(Rust) implementation: u64 little-endian header length N, N bytes of a UTF-8 JSON object,
offsets relative to the data section, tensors contiguous from 0 with no gaps or overlaps and
together covering the data section exactly, byte counts = numel * dtype size.

usage: read_safetensors.py FILE [--expect-sum NAME=VALUE] [--expect-shape NAME=2x3]
                                [--expect-meta KEY=VALUE] [--expect-count N]
Prints each tensor's name, dtype, shape and first values; exits non-zero on any inconsistency.
"""
import json
import math
import struct
import sys

SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2,
         "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
# BF16 values are their raw 16-bit patterns (Python has no bfloat16): callers widen them
FORMATS = {"F32": "<f", "I32": "<i", "F64": "<d", "I64": "<q", "U8": "<B", "I8": "<b", "BF16": "<H"}


def fail(msg):
    print("read_safetensors: " + msg)
    sys.exit(1)


def read(path):
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        fail(f"{path}: {len(buf)} bytes, shorter than the header length field")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > len(buf) - 8:
        fail(f"{path}: header length {n} exceeds the {len(buf) - 8} bytes after it")
    try:
        header = json.loads(buf[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        fail(f"{path}: header is not UTF-8 JSON: {e}")
    if not isinstance(header, dict):
        fail(f"{path}: header is not a JSON object")
    data = buf[8 + n:]
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        fail(f"{path}: __metadata__ is not a string->string map")
    tensors = {}
    for name, e in header.items():
        if not isinstance(e, dict):
            fail(f"{path}: tensor {name!r}: entry is not an object")
        dt, shape, offs = e.get("dtype"), e.get("shape"), e.get("data_offsets")
        if dt not in SIZES:
            fail(f"{path}: tensor {name!r}: bad dtype {dt!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            fail(f"{path}: tensor {name!r}: bad shape {shape!r}")
        if (not isinstance(offs, list) or len(offs) != 2 or
                not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offs)):
            fail(f"{path}: tensor {name!r}: bad data_offsets {offs!r}")
        b, end = offs
        numel = math.prod(shape)
        if end < b or end - b != numel * SIZES[dt]:
            fail(f"{path}: tensor {name!r}: data_offsets {offs} do not hold shape {shape} of {dt}")
        tensors[name] = (dt, shape, b, end)
    # contiguous from 0, no gaps, no overlaps, covering the data section exactly
    pos = 0
    for name, (dt, shape, b, end) in sorted(tensors.items(), key=lambda kv: (kv[1][2], kv[1][3])):
        if b != pos:
            fail(f"{path}: tensor {name!r} starts at {b}, expected {pos} (gap or overlap)")
        pos = end
    if pos != len(data):
        fail(f"{path}: tensors cover {pos} bytes but the data section has {len(data)}")
    values = {}
    for name, (dt, shape, b, end) in tensors.items():
        fmt = FORMATS.get(dt)
        values[name] = ([struct.unpack_from(fmt, data, b + i * SIZES[dt])[0] for i in range((end - b) // SIZES[dt])]
                        if fmt else None)
    return n, meta, tensors, values


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    path = argv[1]
    n, meta, tensors, values = read(path)
    print(f"{path}: header {n} bytes, {len(tensors)} tensors, metadata {meta}")
    for name, (dt, shape, b, end) in tensors.items():
        v = values[name]
        first = "" if v is None else " first " + ", ".join(f"{x:.6g}" for x in v[:4]) + f"; sum {math.fsum(v):.9g}"
        print(f"  {name} {dt} {shape} [{b}, {end}){first}")
    ok = True
    args = argv[2:]
    if len(args) % 2:
        fail("options come in pairs: --expect-xxx VALUE")
    for opt, val in zip(args[::2], args[1::2]):
        if opt == "--expect-count":
            good = len(tensors) == int(val)
            got = len(tensors)
        else:
            key, _, want = val.partition("=")
            if opt == "--expect-sum":
                got = None if values.get(key) is None else math.fsum(values[key])
                good = got is not None and abs(got - float(want)) <= 1e-6 * max(1.0, abs(float(want)))
            elif opt == "--expect-shape":
                got = tensors[key][1] if key in tensors else None
                good = got is not None and "x".join(map(str, got)) == want
            elif opt == "--expect-meta":
                got = meta.get(key)
                good = got == want
            else:
                fail(f"unknown option {opt}")
        print(f"  check {opt} {val}: {'ok' if good else 'FAILED, got ' + repr(got)}")
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
