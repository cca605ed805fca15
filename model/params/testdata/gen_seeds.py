#!/usr/bin/env python3
"""Reference safetensors files for the params package tests and fuzz seeds.

Written with the Hugging Face `safetensors` library (pip install safetensors
numpy), an implementation independent of ours. Run from this directory:

    python3 gen_seeds.py           # writes ref_*.safetensors and ref_*.json
    python3 gen_seeds.py --check   # also reads go_written.safetensors (made by
                                   # `go test -run TestGoWrittenGolden -update`)
                                   # and checks it against go_written.json

Each ref_X.json lists, per tensor, dtype, shape and the little-endian bytes
in hex, as the Go test expects them.
"""
import json
import sys

import numpy as np
from safetensors.numpy import save_file, load_file

rng = np.random.default_rng(20240601)


def describe(tensors):
    out = {}
    for name, a in tensors.items():
        out[name] = {
            "dtype": {"float32": "F32", "float64": "F64", "int64": "I64", "int32": "I32",
                      "float16": "F16", "uint8": "U8", "int8": "I8", "bool": "BOOL"}[str(a.dtype)],
            "shape": list(a.shape),
            "hex": np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes().hex(),
        }
    return out


cases = {
    "mixed": {
        "embed.weight": rng.standard_normal((4, 3)).astype(np.float32),
        "norm.weight": np.ones(3, dtype=np.float32),
        "ids": np.arange(5, dtype=np.int64),
        "half": rng.standard_normal((2, 2)).astype(np.float16),
        "mask": np.array([True, False, True]),
        "scalar": np.array(3.25, dtype=np.float64),
        "empty": np.zeros((0, 7), dtype=np.float32),
        "bytes": np.arange(3, dtype=np.uint8),
    },
    "f32_only": {
        "layer.0.w": rng.standard_normal((3, 5)).astype(np.float32),
        "layer.0.b": rng.standard_normal(5).astype(np.float32),
    },
}
metas = {"mixed": {"format": "pt", "note": "spiral seed"}, "f32_only": None}

for name, tensors in cases.items():
    save_file(tensors, f"ref_{name}.safetensors", metadata=metas[name])
    with open(f"ref_{name}.json", "w") as f:
        json.dump({"metadata": metas[name] or {}, "tensors": describe(tensors)}, f, indent=1, sort_keys=True)
        f.write("\n")

if "--check" in sys.argv:
    got = load_file("go_written.safetensors")
    want = json.load(open("go_written.json"))
    assert sorted(got) == sorted(want), (sorted(got), sorted(want))
    for k, spec in want.items():
        a = got[k]
        assert a.dtype == np.float32 and list(a.shape) == spec["shape"], k
        assert np.array_equal(a.ravel().view(np.uint32), np.array(spec["bits"], dtype=np.uint32)), k
    print("go_written.safetensors: OK,", len(want), "tensors read by the reference library")
