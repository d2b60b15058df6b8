#!/usr/bin/env python3
"""Compares two model.safetensors files tensor by tensor (fp32 and bf16 only).

usage: same_weights.py A B [TOL]   exit 0 when every tensor of B is in A with the same shape and
                                   max|A - B| <= TOL * max|B| (TOL 1e-5); else one line per
                                   difference and exit 1.
"""
import json
import struct
import sys

import numpy as np


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
        begin, end = info["data_offsets"]
        raw = np.frombuffer(body[begin:end], dtype={"F32": np.float32, "BF16": np.uint16}[info["dtype"]])
        if info["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = raw.astype(np.float64).reshape(info["shape"])
    return tensors


def main():
    a, b = read(sys.argv[1]), read(sys.argv[2])
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
    bad = 0
    worst = 0.0
    for name, tb in b.items():
        ta = a.get(name)
        if ta is None or ta.shape != tb.shape:
            print(f"{name}: missing or another shape in {sys.argv[1]}")
            bad += 1
            continue
        scale = max(np.abs(tb).max(), 1e-30)
        rel = np.abs(ta - tb).max() / scale
        worst = max(worst, rel)
        if not rel <= tol:
            print(f"{name}: max |a - b| = {rel:.3g} x max |b| > {tol:g}")
            bad += 1
    if len(a) != len(b):
        print(f"{len(a)} tensors in {sys.argv[1]}, {len(b)} in {sys.argv[2]}")
        bad += 1
    print(f"{len(b)} tensors, worst {worst:.3g} x max |b|" + ("" if bad == 0 else f", {bad} differ"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
