"""Generates test/fixtures/device-arrays.json: each device's block of a global array under a NamedSharding, sliced by NumPy.

The device at flat mesh position k has mesh coordinates np.unravel_index(k, dims); a dimension split over axes
(a1, ..., ak) takes block sum_i c[a_i] * prod(dims[a_{i+1}..]) (JAX's convention: the first named axis is major).
Run: python3 scripts/gen-device-array-fixtures.py
"""
import json
import numpy as np

CASES = [
    ([4], ["x"], [["x"]], [8, 3]),
    ([4], ["x"], [[], ["x"]], [3, 8]),
    ([2, 2], ["x", "y"], [["x"], ["y"]], [4, 6]),
    ([2, 2], ["x", "y"], [["y"], []], [4, 6]),
    ([2, 4], ["x", "y"], [["x", "y"]], [16, 2]),
    ([2, 4], ["x", "y"], [["y", "x"], []], [8, 2]),
    ([8], ["x"], [[], [], ["x"]], [2, 3, 8]),
    ([2], ["x"], [], [5]),
]

out = []
for dims, names, spec, shape in CASES:
    g = (np.arange(int(np.prod(shape)), dtype=np.float32) * 0.5 - 3.0).reshape(shape)
    blocks = []
    for k in range(int(np.prod(dims))):
        c = np.unravel_index(k, dims)
        sl = []
        for d, n in enumerate(shape):
            axes = spec[d] if d < len(spec) else []
            b, parts = 0, 1
            for a in axes:
                i = names.index(a)
                b = b * dims[i] + int(c[i])
                parts *= dims[i]
            size = n // parts
            sl.append(slice(b * size, (b + 1) * size))
        blocks.append({"index": [[s.start, s.stop] for s in sl], "data": g[tuple(sl)].tolist()})
    out.append({"dims": dims, "names": names, "spec": spec, "shape": shape, "global": g.tolist(), "blocks": blocks})

with open("test/fixtures/device-arrays.json", "w") as f:
    json.dump(out, f)
