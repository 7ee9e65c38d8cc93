/** @file Case tables for shape, reduction, indexing, sorting, random and linalg primitives (run by structural.test.ts; read by the coverage test). */
import type { DType } from "../../src/core/dtype.js";
import { DTYPES, isComplex } from "../../src/core/dtype.js";
import { getPrimitive } from "../../src/core/primitive.js";
import "../../src/primitives/ops.js";
import "../../src/primitives/sort.js";
import "../../src/primitives/random.js";
import "../../src/random/gamma.js";
import "../../src/primitives/linalg.js";
import "../../src/primitives/conv.js";
import "../../src/primitives/windowed.js";
import { type Case, FLOATS, INTS, arr, vec } from "./harness.js";

const P = getPrimitive;
const seq = (n: number, f: (i: number) => number = (i) => i): number[] => Array.from({ length: n }, (_, i) => f(i));
/** Representative values for any dtype (64-bit ints as bigints). */
function vals(d: DType, n: number): (number | bigint | boolean)[] {
  if (d === "bool") return seq(n, (i) => (i * 7) % 3).map((v) => v === 0);
  if (d === "int64" || d === "uint64")
    return seq(n, (i) => (i * 37) % 11).map(
      (v) => BigInt(d === "int64" ? v - 5 : v) * (d === "uint64" ? 2n ** 60n + 1n : 2n ** 40n + 3n),
    );
  if (d.startsWith("u")) return seq(n, (i) => ((i * 37) % 11) + (d === "uint32" ? 4e9 * (i % 2) : 200 * (i % 2)));
  if (d.startsWith("int")) return seq(n, (i) => ((i * 37) % 11) - 5);
  return seq(n, (i) => ((i * 37) % 11) * 0.75 - 3.3);
}
const some = (d: DType, shape: number[]) =>
  arr(
    d,
    shape,
    vals(
      d,
      shape.reduce((a, b) => a * b, 1),
    ),
  );
/**
 * Small values (|v| <= 5): for primitives whose reference impl computes in doubles (so 64-bit values above 2^53
 * and large integer products lose precision) or saturates instead of wrapping (scatter add/mul).
 */
const small = (d: DType, shape: number[]) =>
  arr(
    d,
    shape,
    seq(
      shape.reduce((a, b) => a * b, 1),
      (i) => ((i * 7) % 6) - (d.startsWith("u") ? 0 : 2),
    ).map((v) => (d === "bool" ? v > 1 : d.endsWith("64") && !isFloatD(d) ? BigInt(v) : isFloatD(d) ? v * 0.75 : v)),
  );
// complex values never enter ONNX graphs (their equations run on the interpreter; notes/complex.md)
const ALL = DTYPES.filter((d) => !isComplex(d));

export function shapeCases(): Case[] {
  const c: Case[] = [];
  for (const d of ALL) {
    c.push({
      prim: P("broadcast_in_dim"),
      args: [some(d, [3])],
      params: { shape: [2, 3], broadcast_dimensions: [1], sharding: null },
    });
    c.push({ prim: P("reshape"), args: [some(d, [2, 3])], params: { new_sizes: [3, 2], dimensions: null } });
    c.push({ prim: P("transpose"), args: [some(d, [2, 3, 4])], params: { permutation: [2, 0, 1] } });
    c.push({ prim: P("rev"), args: [some(d, [2, 3])], params: { dimensions: [0, 1] } });
    c.push({
      prim: P("pad"),
      args: [some(d, [2, 3]), some(d, [])],
      params: {
        padding_config: [
          [1, -1, 1],
          [-1, 2, 2],
        ],
      },
    });
    c.push({
      prim: P("concatenate"),
      args: [some(d, [2, 3]), some(d, [2, 1]), some(d, [2, 0])],
      params: { dimension: 1 },
    });
    c.push({
      prim: P("slice"),
      args: [some(d, [4, 5])],
      params: { start_indices: [1, 0], limit_indices: [4, 5], strides: [2, 3] },
    });
    c.push({ prim: P("squeeze"), args: [some(d, [1, 3, 1])], params: { dimensions: [0, 2] } });
    c.push({
      prim: P("select_n"),
      args: [
        vec("bool", [true, false, true, false]),
        some(d, [4]),
        some(
          d,
          [4].map(() => 4),
        ).aval.shape.length
          ? arr(d, [4], [...vals(d, 4)].reverse())
          : some(d, [4]),
      ],
    });
    c.push({
      prim: P("select_n"),
      args: [
        vec("int32", [2, 0, 1, 2]),
        some(d, [4]),
        arr(d, [4], [...vals(d, 4)].reverse()),
        arr(d, [4], vals(d, 8).slice(4)),
      ],
    });
    c.push({
      prim: P("select_n"),
      args: [arr("bool", [], [true]), some(d, [2, 2]), arr(d, [2, 2], [...vals(d, 4)].reverse())],
    });
    if (d !== "bool") c.push({ prim: P("clamp"), args: [arr(d, [], [1]), small(d, [7]), arr(d, [], [3])] });
    c.push({ prim: P("iota"), args: [], params: { dtype: d, shape: [3, 4], dimension: 1, sharding: null } });
  }
  const f = (d: DType, xs: number[]) => vec(d, xs);
  c.push(
    {
      prim: P("broadcast_in_dim"),
      args: [some("float32", [3, 1])],
      params: { shape: [2, 3, 4], broadcast_dimensions: [1, 2], sharding: null },
    },
    {
      prim: P("broadcast_in_dim"),
      args: [arr("float32", [], [2])],
      params: { shape: [2, 2], broadcast_dimensions: [], sharding: null },
    },
    {
      prim: P("broadcast_in_dim"),
      args: [arr("float32", [0, 3], [])],
      params: { shape: [2, 0, 3], broadcast_dimensions: [1, 2], sharding: null },
    },
    { prim: P("reshape"), args: [arr("int32", [0, 3], [])], params: { new_sizes: [3, 0], dimensions: null } },
    { prim: P("reshape"), args: [arr("int32", [], [5])], params: { new_sizes: [1, 1], dimensions: null } },
    { prim: P("squeeze"), args: [arr("float32", [1], [3])], params: { dimensions: [0] } },
    { prim: P("rev"), args: [arr("float32", [0, 2], [])], params: { dimensions: [0] } },
    {
      prim: P("pad"),
      args: [f("float32", [1, 2, 3]), arr("float32", [], [9])],
      params: { padding_config: [[1, 2, 0]] },
    },
    {
      prim: P("pad"),
      args: [f("float32", [1, 2, 3]), arr("float32", [], [9])],
      params: { padding_config: [[-2, -1, 3]] },
    },
    {
      prim: P("pad"),
      args: [arr("float32", [0], []), arr("float32", [], [9])],
      params: { padding_config: [[2, 1, 4]] },
    },
    { prim: P("pad"), args: [arr("float32", [], [1]), arr("float32", [], [9])], params: { padding_config: [] } },
    {
      prim: P("slice"),
      args: [some("float32", [4])],
      params: { start_indices: [2], limit_indices: [2], strides: null },
    },
    {
      prim: P("clamp"),
      args: [f("float32", [0, 0, 1, NaN]), f("float32", [-1, 0.5, 2, 3]), f("float32", [1, NaN, 1.5, 4])],
    },
    { prim: P("clamp"), args: [arr("bool", [], [false]), vec("bool", [true, false]), arr("bool", [], [true])] },
    { prim: P("iota"), args: [], params: { dtype: "int32", shape: [0, 3], dimension: 1, sharding: null } },
    { prim: P("iota"), args: [], params: { dtype: "float32", shape: [5], dimension: 0, sharding: null } },
  );
  return c;
}

const CONVERT_VALUES = [
  -300.7,
  -129,
  -1.5,
  -0.5,
  -0,
  0,
  0.49,
  1,
  2.5,
  127.9,
  255.5,
  65535.9,
  3e9,
  -3e9,
  1e20,
  -1e20,
  NaN,
  Infinity,
  -Infinity,
];
export function convertCases(): Case[] {
  const c: Case[] = [];
  for (const from of ALL) {
    const x =
      from === "bool"
        ? vec("bool", [true, false, true])
        : INTS.includes(from)
          ? vec(from, vals(from, 9))
          : vec(from, CONVERT_VALUES);
    for (const to of ALL) {
      // the interpreter converts 64-bit integers through doubles; keep those to exactly representable values
      c.push({
        prim: P("convert_element_type"),
        args: [x],
        params: { new_dtype: to, weak_type: false, sharding: null },
      });
    }
  }
  c.push({
    prim: P("convert_element_type"),
    args: [vec("int32", [1, 2])],
    params: { new_dtype: "float32", weak_type: true, sharding: null },
  });
  c.push({
    prim: P("convert_element_type"),
    args: [arr("float32", [], [2.7])],
    params: { new_dtype: "int8", weak_type: false, sharding: null },
  });
  const pairs: [DType, DType][] = [
    ["float32", "int32"],
    ["float32", "uint32"],
    ["int32", "float32"],
    ["uint32", "int32"],
    ["float16", "int16"],
    ["uint16", "float16"],
    ["bfloat16", "uint16"],
    ["int16", "bfloat16"],
    ["float64", "int64"],
    ["uint64", "float64"],
    ["int8", "uint8"],
    ["uint8", "bool"],
    ["bool", "int8"],
    ["int64", "uint64"],
  ];
  for (const [from, to] of pairs) {
    const x = isFloatD(from) ? vec(from, [1, -2.5, 0, -0, NaN, Infinity, 1e-3, 3]) : vec(from, vals(from, 6));
    c.push({ prim: P("bitcast_convert_type"), args: [x], params: { new_dtype: to } });
  }
  return c;
}
const isFloatD = (d: DType) => d.startsWith("float") || d === "bfloat16";

export function reductionCases(): Case[] {
  const c: Case[] = [];
  const red = (name: string, x: ReturnType<typeof arr>, axes: number[], extra: Record<string, unknown> = {}) =>
    c.push({ prim: P(name), args: [x], params: { axes, out_sharding: null, ...extra } });
  for (const d of ALL) {
    const x = some(d, [3, 5]);
    for (const name of ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]) {
      if (d === "bool" && (name === "reduce_sum" || name === "reduce_prod")) continue;
      if (name === "reduce_prod" && (d === "int64" || d === "uint64")) continue;
      red(name, x, [1]);
      red(name, x, [0, 1]);
      red(name, arr(d, [0, 3], []), [0]);
    }
    if (!isFloatD(d))
      for (const name of ["reduce_and", "reduce_or", "reduce_xor"]) {
        red(name, x, [1]);
        red(name, x, [0]);
        red(name, some(d, [2, 3, 7]), [0, 2]);
      }
  }
  // integer reductions wrap (ORT's own integer ReduceSum/ReduceProd saturate through doubles)
  red("reduce_sum", vec("int32", [2147483647, 2147483647, 5]), [0]);
  red("reduce_sum", vec("uint32", [4e9, 4e9, 7]), [0]);
  red("reduce_sum", vec("int64", [2n ** 62n + 3n, 2n ** 62n + 5n, 7n]), [0]);
  red("reduce_sum", vec("uint64", [2n ** 63n + 3n, 2n ** 63n + 5n, 7n]), [0]);
  red("reduce_sum", vec("int8", [100, 100, 100]), [0]);
  red("reduce_prod", vec("int32", [100000, 100000, 7]), [0]);
  red("reduce_prod", vec("uint8", [16, 16, 3]), [0]);
  c.push({ prim: P("cumsum"), args: [vec("int32", [2147483647, 1, 5])], params: { axis: 0, reverse: false } });
  c.push({ prim: P("cumsum"), args: [vec("uint8", [200, 100, 5])], params: { axis: 0, reverse: true } });
  const nanx = vec("float32", [1, NaN, 3, -Infinity, 2, 5]);
  for (const name of ["reduce_max", "reduce_min", "reduce_sum"])
    for (const d of FLOATS) red(name, arr(d, [2, 3], [1, NaN, 3, 4, 2, Infinity]), [1]);
  red("reduce_max", nanx, [0]);
  for (const name of ["argmax", "argmin"]) {
    for (const d of ALL) {
      c.push({ prim: P(name), args: [some(d, [3, 5])], params: { axes: [1], index_dtype: "int32" } });
      c.push({ prim: P(name), args: [some(d, [3, 5])], params: { axes: [0], index_dtype: "int64" } });
    }
    for (const d of FLOATS)
      c.push({
        prim: P(name),
        args: [arr(d, [2, 4], [1, NaN, 3, NaN, 2, 2, -1, 2])],
        params: { axes: [1], index_dtype: "int32" },
      });
  }
  for (const name of ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]) {
    const dts =
      name === "cumlogsumexp"
        ? FLOATS
        : ALL.filter((d) => d !== "bool" && !(name === "cumprod" && d.endsWith("64") && !isFloatD(d)));
    for (const d of dts)
      for (const reverse of [false, true]) {
        const big = !d.endsWith("64") || isFloatD(d);
        c.push({ prim: P(name), args: [big ? some(d, [3, 7]) : small(d, [3, 7])], params: { axis: 1, reverse } });
        c.push({ prim: P(name), args: [small(d, [5, 2])], params: { axis: 0, reverse } });
      }
    for (const d of FLOATS)
      if (name !== "cumprod")
        c.push({
          prim: P(name),
          args: [vec(d, [1, NaN, 3, -Infinity, 2, Infinity, 0])],
          params: { axis: 0, reverse: false },
        });
    c.push({ prim: P(name), args: [arr("float32", [0, 3], [])], params: { axis: 0, reverse: false } });
  }
  const dot = (
    a: ReturnType<typeof arr>,
    b: ReturnType<typeof arr>,
    dn: [[number[], number[]], [number[], number[]]],
    pe: DType | null = null,
  ) =>
    c.push({
      prim: P("dot_general"),
      args: [a, b],
      params: { dimension_numbers: dn, precision: null, preferred_element_type: pe, out_sharding: null },
    });
  for (const d of ALL) {
    if (d === "uint64" || d === "int64") continue;
    dot(small(d, [2, 3]), small(d, [3, 4]), [
      [[1], [0]],
      [[], []],
    ]);
    dot(small(d, [2, 2, 3]), small(d, [2, 3, 2]), [
      [[2], [1]],
      [[0], [0]],
    ]);
  }
  dot(small("int64", [2, 3]), small("int64", [3, 2]), [
    [[1], [0]],
    [[], []],
  ]);
  dot(small("uint64", [2, 3]), small("uint64", [3, 2]), [
    [[1], [0]],
    [[], []],
  ]);
  dot(
    small("float32", [2, 3]),
    small("float32", [3, 2]),
    [
      [[1], [0]],
      [[], []],
    ],
    "float32",
  );
  dot(small("bool", [2, 3]), small("bool", [3, 2]), [
    [[1], [0]],
    [[], []],
  ]);
  dot(some("float32", [3, 2, 4]), some("float32", [4, 3, 2]), [
    [
      [1, 2],
      [2, 0],
    ],
    [[], []],
  ]);
  dot(some("float32", [3]), some("float32", [3]), [
    [[0], [0]],
    [[], []],
  ]);
  dot(some("float32", [2]), some("float32", [3]), [
    [[], []],
    [[], []],
  ]);
  dot(arr("float32", [2, 0], []), arr("float32", [0, 3], []), [
    [[1], [0]],
    [[], []],
  ]);
  dot(
    some("int8", [2, 3]),
    some("int8", [3, 2]),
    [
      [[1], [0]],
      [[], []],
    ],
    "int32",
  );
  dot(
    some("float16", [2, 3]),
    some("float16", [3, 2]),
    [
      [[1], [0]],
      [[], []],
    ],
    "float32",
  );
  dot(
    some("bfloat16", [4, 3, 2]),
    some("bfloat16", [2, 4]),
    [
      [[2], [0]],
      [[0], [1]],
    ],
    "float32",
  );
  return c;
}

export function indexingCases(): Case[] {
  const c: Case[] = [];
  const idx = (d: DType, shape: number[], v: number[]) => arr(d, shape, v);
  for (const d of ALL) {
    const x = some(d, [5, 4]);
    for (const mode of ["clip", "fill", "drop", "promise_in_bounds"]) {
      c.push({
        prim: P("gather"),
        args: [x, idx("int32", [4, 1], [1, 3, -1, 7])],
        params: { axes: [0], mode, fill_value: null },
      });
    }
    c.push({
      prim: P("gather"),
      args: [x, idx("int64", [2, 2, 2], [1, 2, 4, 3, 0, 0, 5, 1])],
      params: { axes: [1, 0], mode: "fill", fill_value: null },
    });
    c.push({
      prim: P("dynamic_slice"),
      args: [x, arr("int32", [], [4]), arr("int32", [], [-1])],
      params: { slice_sizes: [2, 3] },
    });
    c.push({
      prim: P("dynamic_update_slice"),
      args: [x, some(d, [2, 3]), arr("int32", [], [4]), arr("uint8", [], [1])],
    });
    for (const reduce of ["none", "add", "mul", "min", "max"]) {
      for (const mode of ["clip", "drop"]) {
        c.push({
          prim: P("scatter"),
          args: [small(d, [5, 4]), idx("int32", [3, 1], [1, 6, 1]), small(d, [3, 4])],
          params: { axes: [0], reduce, mode },
        });
      }
    }
  }
  const x = some("float32", [5, 4]);
  c.push(
    {
      prim: P("gather"),
      args: [x, idx("uint8", [3, 1], [0, 3, 200])],
      params: { axes: [1], mode: "fill", fill_value: -7 },
    },
    {
      prim: P("gather"),
      args: [arr("float32", [3], [1, 2, 3]), idx("int32", [1], [2])],
      params: { axes: [0], mode: "clip", fill_value: null },
    },
    {
      prim: P("scatter"),
      args: [x, idx("int32", [2, 2], [0, 1, 4, 3]), vec("float32", [10, 20])],
      params: { axes: [0, 1], reduce: "add", mode: "fill" },
    },
    {
      prim: P("scatter"),
      args: [x, idx("int32", [2, 1], [3, 1]), some("float32", [2, 5])],
      params: { axes: [1], reduce: "none", mode: "clip" },
    },
    { prim: P("dynamic_slice"), args: [arr("float32", [], [3])], params: { slice_sizes: [] } },
    {
      prim: P("dynamic_update_slice"),
      args: [x, arr("float32", [0, 2], []), arr("int32", [], [1]), arr("int32", [], [1])],
    },
  );
  return c;
}

export function sortCases(): Case[] {
  const c: Case[] = [];
  for (const d of ALL) {
    c.push({ prim: P("sort"), args: [some(d, [3, 6])], params: { dimension: 1, is_stable: true, num_keys: 1 } });
    c.push({ prim: P("sort"), args: [some(d, [6, 2])], params: { dimension: 0, is_stable: true, num_keys: 1 } });
    if (d !== "bool") c.push({ prim: P("top_k"), args: [some(d, [2, 7])], params: { k: 3 } });
  }
  for (const d of FLOATS) {
    const x = vec(d, [3, NaN, -0, 0, -Infinity, 1, NaN, Infinity, -2, 1]);
    c.push({
      prim: P("sort"),
      args: [x, vec("int32", seq(10))],
      params: { dimension: 0, is_stable: true, num_keys: 1 },
    });
    c.push({ prim: P("top_k"), args: [x], params: { k: 4 } });
  }
  const k1 = vec("int32", [2, 1, 2, 1, 2, 0]),
    k2 = vec("float32", [5, 6, 4, 6, 4, 9]),
    v = vec("uint8", seq(6));
  c.push({ prim: P("sort"), args: [k1, k2, v], params: { dimension: 0, is_stable: true, num_keys: 2 } });
  c.push({ prim: P("top_k"), args: [vec("int32", [1, 5, 5, 2])], params: { k: 4 } });
  return c;
}

export function randomCases(): Case[] {
  const u = (shape: number[], v: number[]) => arr("uint32", shape, v);
  return [
    { prim: P("threefry2x32"), args: [u([], [0]), u([], [42]), u([4], [0, 1, 2, 3]), u([4], [4, 5, 6, 7])] },
    {
      prim: P("threefry2x32"),
      args: [
        u([], [0x12345678]),
        u([], [0xdeadbeef]),
        u(
          [2, 3],
          seq(6, (i) => i * 0x9e3779b9),
        ),
        u([3], [7, 8, 9]),
      ],
    },
    { prim: P("random_gamma_grad"), args: [vec("float32", [0.5, 1, 2.5, 10]), vec("float32", [0.3, 1, 2, 12])] },
    {
      prim: P("random_gamma_grad"),
      args: [
        vec("float64", [1e-3, 0.5, 3, 3, 100, NaN, -1, 2, 2, 2]),
        vec("float64", [1e-5, 2, 50, 1e-3, 95, 1, 1, 0, -1, Infinity]),
      ],
    },
    { prim: P("random_gamma_grad"), args: [arr("float32", [], [2.5]), arr("float32", [2, 2], [0.1, 1, 4, 30])] },
    { prim: P("random_gamma_grad"), args: [arr("float16", [3], [0.5, 2, 8]), arr("float16", [], [1.5])] },
    // the special functions lowered as programs (src/lowerings/special-functions.ts)
    { prim: P("igamma"), args: [vec("float32", [0.5, 2.5, 10, 0, NaN]), vec("float32", [0.3, 1.5, 11.5, 2, 1])] },
    { prim: P("igammac"), args: [vec("float64", [0.5, 2.5, 100, 2, 1]), vec("float64", [0.3, 8, 90, Infinity, 0])] },
    { prim: P("igamma_grad_a"), args: [arr("float32", [], [2.5]), vec("float32", [0.1, 1.5, 4, 0])] },
    {
      prim: P("regularized_incomplete_beta"),
      args: [vec("float32", [0.5, 2, 0, 5]), vec("float32", [0.5, 3, 3, 1]), vec("float32", [0.3, 0.2, 0.5, 0.99])],
    },
    { prim: P("bessel_i0e"), args: [vec("float32", [0, -2.5, 30, Infinity, NaN])] },
    { prim: P("bessel_i1e"), args: [vec("float64", [0, -2.5, 30, -Infinity, NaN])] },
    { prim: P("zeta"), args: [vec("float32", [2, 1.5, 1, 2.5]), vec("float32", [1, 0.5, 1, -0.5])] },
    {
      prim: P("random_gamma"),
      args: [u([2], [0, 42]), vec("float32", [0.3, 1, 2.5, 10])],
      params: { log_space: false },
    },
    {
      prim: P("random_gamma"),
      args: [u([2, 2], [0, 42, 1, 7]), arr("float64", [2, 3], [0.3, 1, 2.5, 10, 0.01, 4])],
      params: { log_space: true },
    },
  ];
}

export function linalgCases(): Case[] {
  const spd = arr("float32", [2, 2], [4, 1, 1, 3]);
  const m = arr("float32", [3, 3], [2, 1, 0, 1, 3, 1, 0, 1, 4]);
  return [
    { prim: P("cholesky"), args: [spd] },
    {
      prim: P("triangular_solve"),
      args: [arr("float32", [2, 2], [2, 0, 1, 3]), arr("float32", [2, 2], [1, 2, 3, 4])],
      params: { left_side: true, lower: true, transpose_a: false, conjugate_a: false, unit_diagonal: false },
    },
    { prim: P("lu"), args: [m] },
    { prim: P("qr"), args: [m], params: { full_matrices: false } },
    { prim: P("eigh"), args: [m], params: { lower: true, sort_eigenvalues: true } },
    { prim: P("svd"), args: [m], params: { full_matrices: false, compute_uv: true } },
  ];
}

/** Every case group, by name (the coverage test reads the primitive names). */
/** conv_general_dilated (through ORT Conv where it fits) and reduce_window_{sum,max,min} (MaxPool / AveragePool / pad+slices). */
export function convWindowCases(): Case[] {
  const c: Case[] = [];
  const conv = (a: ReturnType<typeof arr>, b: ReturnType<typeof arr>, over: Record<string, unknown> = {}) => {
    const nsp = a.shape.length - 2,
      id = seq(a.shape.length);
    c.push({
      prim: P("conv_general_dilated"),
      args: [a, b],
      params: {
        window_strides: seq(nsp, () => 1),
        padding: seq(nsp, () => 0).map(() => [0, 0]),
        lhs_dilation: seq(nsp, () => 1),
        rhs_dilation: seq(nsp, () => 1),
        dimension_numbers: { lhs_spec: id, rhs_spec: id, out_spec: id },
        feature_group_count: 1,
        batch_group_count: 1,
        precision: null,
        preferred_element_type: null,
        ...over,
      },
    });
  };
  for (const d of ["float32", "float16", "bfloat16", "float64", "int32"] as DType[]) {
    conv(small(d, [2, 3, 5, 4]), small(d, [2, 3, 2, 2]));
    conv(small(d, [1, 4, 6]), small(d, [4, 2, 3]), {
      window_strides: [2],
      padding: [[2, -1]],
      lhs_dilation: [2],
      rhs_dilation: [2],
      feature_group_count: 2,
    });
  }
  conv(some("float32", [4, 3, 3, 2]), some("float32", [4, 2, 2, 2]), {
    batch_group_count: 2,
    dimension_numbers: { lhs_spec: [0, 3, 1, 2], rhs_spec: [0, 1, 2, 3], out_spec: [0, 1, 2, 3] },
  });
  conv(some("float32", [1, 2, 3, 3, 3]), some("float32", [2, 2, 2, 2, 2]), {
    window_strides: [1, 2, 1],
    padding: [
      [1, 0],
      [0, 1],
      [1, 1],
    ],
    lhs_dilation: [1, 1, 1],
    rhs_dilation: [1, 1, 1],
  });
  conv(some("float16", [2, 2, 4]), some("float16", [3, 2, 2]), { preferred_element_type: "float32" });
  const win = (name: string, x: ReturnType<typeof arr>, over: Record<string, unknown>) => {
    const n = x.shape.length;
    c.push({
      prim: P(name),
      args: [x],
      params: {
        window_dimensions: seq(n, () => 1),
        window_strides: seq(n, () => 1),
        padding: seq(n, () => 0).map(() => [0, 0]),
        base_dilation: seq(n, () => 1),
        window_dilation: seq(n, () => 1),
        ...over,
      },
    });
  };
  for (const name of ["reduce_window_sum", "reduce_window_max", "reduce_window_min"]) {
    for (const d of ["float32", "float16", "bfloat16", "float64", "int32", "int8", "uint8"] as DType[]) {
      win(name, small(d, [2, 4, 5]), { window_dimensions: [1, 2, 2], window_strides: [1, 2, 2] });
      win(name, small(d, [3, 5]), {
        window_dimensions: [2, 3],
        window_strides: [1, 2],
        padding: [
          [1, 0],
          [1, 2],
        ],
        base_dilation: [2, 1],
        window_dilation: [1, 1],
      });
      win(name, small(d, [4, 6]), {
        window_dimensions: [2, 2],
        window_strides: [1, 1],
        padding: [
          [0, 1],
          [-1, 0],
        ],
        window_dilation: [1, 2],
      });
    }
    for (const d of FLOATS)
      win(name, vec(d, [1, NaN, 3, -Infinity, 2, Infinity, 0]), { window_dimensions: [2], window_strides: [1] });
  }
  return c;
}

export const STRUCTURAL_GROUPS: Record<string, () => Case[]> = {
  conv: convWindowCases,
  shapes: shapeCases,
  convert: convertCases,
  reductions: reductionCases,
  indexing: indexingCases,
  sort: sortCases,
  random: randomCases,
  linalg: linalgCases,
};
