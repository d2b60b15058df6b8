#!/usr/bin/env python3
"""Compares two model.safetensors files of fp32 tensors, tensor by tensor (standard library only).

usage: same_weights.py A B [TOL] [--except SUFFIX...]
  exit 0 when both hold the same tensors with the same shapes and max|A - B| <= TOL * max|B| per
  tensor (TOL 1e-5); else one line per difference and exit 1. Tensors whose names end in a SUFFIX
  are compared for presence and shape only: the attention key biases, whose true gradient is zero
  (softmax ignores a shift shared by every key), so their gradient is summation noise that AdamW
  turns into full-size steps of either sign (tests/golden's zero_true_grad).
"""
import array
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {info['dtype']}, not F32")
        begin, end = info["data_offsets"]
        values = array.array("f")
        values.frombytes(body[begin:end])
        if sys.byteorder != "little":
            values.byteswap()
        tensors[name] = (tuple(info["shape"]), values)
    return tensors


def main():
    args = sys.argv[1:]
    excepted = tuple(args[args.index("--except") + 1 :]) if "--except" in args else ()
    if "--except" in args:
        args = args[: args.index("--except")]
    a, b = read(args[0]), read(args[1])
    tol = float(args[2]) if len(args) > 2 else 1e-5
    bad = 0
    worst = 0.0
    for name, (shape, vb) in b.items():
        if name not in a or a[name][0] != shape:
            print(f"{name}: missing or another shape in {args[0]}")
            bad += 1
            continue
        if excepted and name.endswith(excepted):
            continue
        va = a[name][1]
        scale = max(max((abs(x) for x in vb), default=0.0), 1e-30)
        rel = max((abs(x - y) for x, y in zip(va, vb)), default=0.0) / scale
        worst = max(worst, rel)
        if not rel <= tol:
            print(f"{name}: max |a - b| = {rel:.3g} x max |b| > {tol:g}")
            bad += 1
    if len(a) != len(b):
        print(f"{len(a)} tensors in {args[0]}, {len(b)} in {args[1]}")
        bad += 1
    print(f"{len(b)} tensors, worst {worst:.3g} x max |b|" + ("" if bad == 0 else f", {bad} differ"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
