#!/usr/bin/env python3
"""Generates test/fixtures/repr-cases.json: how JAX prints arrays, for test/core/format.test.ts.

Run from the repository root with a Python that has NumPy (>= 2.3) and ml_dtypes (JAX's own dependencies):
    python3 scripts/gen-repr-fixtures.py

jax.Array.__repr__ (jax/_src/array.py) is NumPy's array2string of the value with prefix 'Array(', suffix ','
and separator ', ', followed by ', dtype=...)' (six spaces instead of one when the last line is long), with
', weak_type=True' for weak types and '[], shape=(0, 3)' for empty arrays; `jax_repr` below restates it.

A case is {"name", "dtype", "shape", "data", "weak", "array2string", "repr"}. `data` is the flat row-major
list of values, each exactly the element stored (float32/float16/bfloat16 values are written as the Python
float of the element, which JS reads back to the same double); "nan"/"inf"/"-inf" stand for non-finite
floats, int64/uint64 values are decimal strings. `scalars` lists single 0-d values per dtype (the repr of a
0-d array shows the element's own shortest digits), as {"dtype", "data": [...], "repr": [...]}. `strs` holds
str(jax_array) cases (np.array2string with its defaults), as {"name", "dtype", "shape", "data", "str"}.
"""
import json
import math
import os

import ml_dtypes
import numpy as np

OUT = os.path.join("test", "fixtures", "repr-cases.json")
BF16 = ml_dtypes.bfloat16
rng = np.random.default_rng(20261201)


def dtype_of(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def jax_repr(a, weak=False):
    """jax.Array.__repr__ on a NumPy array, with JAX's default print options."""
    prefix = "Array("
    dtype_str = f"dtype={a.dtype.name}" + (", weak_type=True)" if weak else ")")
    line_width = np.get_printoptions()["linewidth"]
    if a.size == 0:
        s = f"[], shape={a.shape}"
    else:
        s = np.array2string(a, prefix=prefix, suffix=",", separator=", ", max_line_width=line_width)
    last_line_len = len(s) - s.rfind("\n") + 1
    sep = " " * len(prefix) if last_line_len + len(dtype_str) + 1 > line_width else " "
    return f"{prefix}{s},{sep}{dtype_str}"


def encode(v, name):
    if name == "bool":
        return bool(v)
    if name in ("int64", "uint64"):
        return str(int(v))
    if name.startswith("int") or name.startswith("uint"):
        return int(v)
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f


cases = []


def case(name, values, dtype, shape=None, weak=False):
    a = np.asarray(values, dtype=dtype_of(dtype))
    if shape is not None:
        a = a.reshape(shape)
    s = "[]" if a.size == 0 else np.array2string(a, prefix="Array(", suffix=",", separator=", ")
    cases.append({
        "name": name, "dtype": dtype, "shape": list(a.shape), "weak": weak,
        "data": [encode(v, dtype) for v in a.reshape(-1)],
        "array2string": s, "repr": jax_repr(a, weak),
    })


f32 = np.float32
nan, inf = float("nan"), float("inf")

# the README tour: JAX's grad of sum(tanh(w * w)) at [[1, 2, 3], [4, 5, 6]] (tanh(9) is 1 in float32)
case("tour grad", [[0.83994865, 0.005364418, 0.0], [0.0, 0.0, 0.0]], "float32")
case("integral floats", [[1, 2], [3, 4]], "float32")
case("arange", np.arange(6), "float32")
case("float32 0.1", 0.1, "float32")
case("fractions", [0.1, 0.25, 1 / 3], "float32")
case("mixed signs", rng.standard_normal((3, 4)), "float32")
case("mixed signs 1-d", rng.standard_normal(5), "float32")
case("integral and negative", [-1.0, 10.0, 100.0], "float32")
case("small magnitudes", rng.standard_normal(4) * 1e-5, "float32")
case("large magnitudes", rng.standard_normal(4) * 1e7, "float32")
case("ratio over 1000", [1e-3, 2.0], "float32")
case("ratio under 1000", [1e-3, 0.5], "float32")
case("float32 1e-4 is not below 1e-4", [1e-4, 1.0], "float32")
case("just below 1e-4", [9.9e-5, 1.0], "float32")
case("float32 999999", [999999.0, 1.0], "float32")
case("float32 1e6", [1e6], "float32")
case("sci mantissa precision", [0.1, 1.2345678e-5], "float32")
case("sci short mantissas", [0.1, 1.5e-5, -2.0], "float32")
case("cutoff tie to even", [0.001953125, 1.0], "float32")
case("cutoff tie odd", [0.005859375, 1.0], "float32")
case("cutoff rounding", [0.123456789, 1.0, 2.0000001], "float32")
case("nan inf", [nan, 1.0, -inf], "float32")
case("all nan", [nan, nan], "float32")
case("infinities", [inf, -inf], "float32")
case("inf only", [inf], "float32")
case("signed zeros", [-0.0, 0.0, 1.5], "float32")
case("zeros", np.zeros((2, 2)), "float32")
case("sci with non-finite", [1e-5, nan, -inf, 3.0], "float32")
case("sci with zero", [0.0, -0.0, 1e-7], "float32")
case("float32 extremes", [3.4028235e38, 1e-45, -1.1754944e-38], "float32")
case("long row wraps", np.arange(30) * 1.5, "float32")
case("random row wraps", rng.standard_normal(40), "float32")
case("wide matrix", rng.standard_normal((4, 20)), "float32")
case("dtype on its own line", rng.standard_normal((2, 6)) * 10, "float32")
case("seven wide", rng.standard_normal(7), "float32")
case("3-d", rng.standard_normal((2, 3, 4)), "float32")
case("4-d", np.arange(24), "int32", (2, 2, 2, 3))
case("4-d floats", rng.uniform(-5, 5, (2, 1, 2, 3)), "float32")
case("summarized 1-d", np.arange(1100) * 0.5, "float32")
case("summarized matrix", rng.standard_normal((40, 30)), "float32")
case("summarized last axis only", rng.standard_normal((3, 400)), "float32")
case("summarized 3-d", np.arange(1320), "float32", (11, 12, 10))
case("summarized ints", np.arange(1100) - 550, "int32")
case("summarized bool", np.arange(1001) % 3 == 0, "bool")
case("summarized exactly 7", np.arange(150 * 7) % 97, "int32", (7, 150))
case("not summarized at 1000", np.arange(1000), "int32")
case("int8", [-128, 0, 127], "int8")
case("uint8", [0, 7, 255], "uint8")
case("int16", [[-32768, 1], [2, 32767]], "int16")
case("uint16", [65535, 0], "uint16")
case("int32", [-2147483648, 5, 2147483647], "int32")
case("uint32", [4294967295, 0, 12], "uint32")
case("int64", [-9223372036854775808, 0, 9223372036854775807], "int64")
case("uint64", [18446744073709551615, 1], "uint64")
case("int32 scalar", 7, "int32")
case("weak int", 3, "int32", weak=True)
case("weak float", 2.5, "float32", weak=True)
case("weak vector", [1.0, 2.0], "float32", weak=True)
case("negative ints", [-5, 12, -300], "int32")
case("bool matrix", [[True, False], [False, True]], "bool")
case("bool scalar true", True, "bool")
case("bool scalar false", False, "bool")
case("bool all true", [True, True], "bool")
case("float16 fractions", [0.1, 0.2, 1.5], "float16")
case("float16 1000", [1000.0, 1.0], "float16")
case("float16 999", [999.0, 1.0], "float16")
case("float16 extremes", [65504.0, -65504.0], "float16")
case("float16 subnormal", [6e-8, 1.0], "float16")
case("float16 random", rng.standard_normal((3, 5)), "float16")
case("float16 scalar", 3.14159, "float16")
case("float64 classic", [0.1, 0.2, 0.1 + 0.2], "float64")
case("float64 thirds", [1 / 3, 2 / 3], "float64")
case("float64 tiny", [1e-300, 1.0], "float64")
case("float64 huge", [1e300, -1e-300], "float64")
case("float64 pi", math.pi, "float64")
case("float64 1e7", [1e7, 12345678.0], "float64")
case("float64 carry in sci", [0.9999999999, 1e-5], "float64")
case("float64 carry positional", [0.999999999, 2.0], "float64")
case("float64 tie", [0.000244140625 * 3 + 1, 2.0], "float64")
case("float64 random", rng.standard_normal((2, 3)), "float64")
case("bfloat16 ints", [1, 2, 3], "bfloat16")
case("bfloat16 fractions", [0.1, 1.5, -2.0], "bfloat16")
case("bfloat16 %g tie", [13 / 128, 1.0], "bfloat16")
case("bfloat16 magnitudes", [1e6, 123456.0, 1.2e-5, 1e-4, 3e38], "bfloat16")
case("bfloat16 specials", [-0.0, nan, inf, -inf], "bfloat16")
case("bfloat16 matrix", rng.standard_normal((3, 4)), "bfloat16")
case("bfloat16 long row", rng.standard_normal(30), "bfloat16")
case("bfloat16 scalar", 0.1, "bfloat16")
case("empty 1-d", [], "float32", (0,))
case("empty 2-d", [], "float32", (0, 3))
case("empty int", [], "int32", (2, 0))
case("empty weak", [], "float32", (0,), weak=True)
case("empty bool", [], "bool", (1, 0, 2))


# str(jax_array), which PRNG key arrays print after "overlaying:": np.array2string with its defaults
strs = []
for name, values, dtype, shape in [
    ("key", [0, 42], "uint32", (2,)),
    ("split keys", rng.integers(0, 2**32, 6, dtype=np.uint32), "uint32", (3, 2)),
    ("key grid", rng.integers(0, 2**32, 8, dtype=np.uint32), "uint32", (2, 2, 2)),
    ("long key row", rng.integers(0, 2**32, 40, dtype=np.uint32), "uint32", (20, 2)),
    ("many keys", rng.integers(0, 2**32, 1200, dtype=np.uint32), "uint32", (600, 2)),
    ("floats", rng.standard_normal(20), "float32", (20,)),
]:
    a = np.asarray(values, dtype=dtype).reshape(shape)
    strs.append({"name": name, "dtype": dtype, "shape": list(shape), "data": [encode(v, dtype) for v in a.reshape(-1)],
                 "str": np.array2string(a)})


def scalars(dtype, values):
    a = np.asarray(values, dtype=dtype_of(dtype))
    return {"dtype": dtype, "data": [encode(v, dtype) for v in a], "repr": [jax_repr(np.asarray(v)) for v in a]}


# shortest round-trip digits, one 0-d array at a time: log-uniform magnitudes, powers of two, random bits
log_uniform = np.sign(rng.standard_normal(300)) * 10.0 ** rng.uniform(-44, 38, 300)
powers32 = [2.0 ** e for e in range(-149, 128)]
bits16 = rng.integers(0, 0x7C00, 300, dtype=np.uint16)
powers16 = [2.0 ** e for e in range(-24, 16)]
bits_bf16 = rng.integers(0, 0x7F80, 300, dtype=np.uint16)
scalar_sets = [
    scalars("float32", np.concatenate([log_uniform, powers32, rng.standard_normal(100)])),
    scalars("float16", np.concatenate([bits16.view(np.float16).astype(np.float64), powers16])),
    scalars("float64", np.concatenate([log_uniform, rng.standard_normal(100), [2.0 ** -1074, 2.0 ** 1023]])),
    scalars("bfloat16", bits_bf16.view(BF16).astype(np.float64)),
]

with open(OUT, "w") as f:
    # one case per line keeps the file diffable
    head = json.dumps({"numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__})[:-1]
    lines = lambda items: ",\n".join(json.dumps(x, allow_nan=False) for x in items)
    f.write(f'{head},\n"cases": [\n{lines(cases)}\n],\n"strs": [\n{lines(strs)}\n],\n"scalars": [\n{lines(scalar_sets)}\n]}}\n')
print(f"wrote {len(cases)} cases and {sum(len(s['data']) for s in scalar_sets)} scalars to {OUT}")
