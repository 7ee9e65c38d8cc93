/** @file The programs of the jit-with-shardings table: each with its shardings per mesh and the expected collectives. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
import { type Array, grad, jit, lax, nn, numpy as jnp, optim } from "../../src/index.js";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";
import type { SpecEntry } from "../../src/parallel/sharding.js";
const JSArray = globalThis.Array;

/** Deterministic floats in (-1, 1), distinct per seed. */
export function vals(shape: number[], seed = 0): Array {
  const n = shape.reduce((a, b) => a * b, 1);
  return jnp.reshape(jnp.array(JSArray.from({ length: n }, (_, i) => Math.sin(i * 1.37 + seed * 2.1) * 0.9)), shape);
}
/** Deterministic int32 values in [0, m). */
export function ints(shape: number[], m: number, seed = 0): Array {
  const n = shape.reduce((a, b) => a * b, 1);
  return jnp.reshape(
    jnp.array(
      JSArray.from({ length: n }, (_, i) => (i * 7919 + seed * 31) % m),
      { dtype: "int32" },
    ),
    shape,
  );
}

/** The SPMD runtimes the gspmd tests run on: the device runtime where the addon loads, and the emulation. */
export const RUNTIMES = (["devices", "emulation"] as const).filter(
  (r) => r === "emulation" || !deviceRuntimeUnavailable(),
);
/** One test per runtime, with config.spmdRuntime set to it for the body and restored after. */
export function onEach(name: string, body: () => void): void {
  for (const rt of RUNTIMES)
    test(`${name} (${rt})`, () => {
      const before = config.spmdRuntime;
      config.update("spmdRuntime", rt);
      try {
        body();
      } finally {
        config.update("spmdRuntime", before);
      }
    });
}
/** Same shape, and every element within tol + tol * |want|. */
export function close(what: string, got: Array, want: Array, tol = 1e-5): void {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  const g = got.dataSync() as ArrayLike<number>,
    w = want.dataSync() as ArrayLike<number>;
  for (let i = 0; i < w.length; i++)
    if (!(Math.abs(g[i] - w[i]) <= tol + tol * Math.abs(w[i])))
      assert.fail(`${what}: element ${i} is ${g[i]}, want ${w[i]}`);
}

export type Spec = SpecEntry[];
export interface Config {
  /** Mesh shape and axis names. */
  mesh: [number[], string[]];
  /** One spec per argument (a pytree argument takes one spec for all its leaves). */
  in: Spec[];
  /** Output sharding (a single output), or undefined to let propagation decide. */
  out?: Spec;
  /** Expected collectives of one device's program, counted by kind. */
  coll: Record<string, number>;
  /** Expected bytes of each collective, in program order (when given). */
  bytes?: number[];
}
export interface Case {
  name: string;
  f: (...a: never[]) => unknown;
  args: () => unknown[];
  configs: Config[];
  /** Integer outputs: compared exactly. */
  exact?: boolean;
}

const mlp = (p: { w1: Array; b1: Array; w2: Array; b2: Array }, x: Array): Array =>
  jnp.add(jnp.matmul(nn.relu(jnp.add(jnp.matmul(x, p.w1), p.b1)), p.w2), p.b2);
const mlpParams = (d: number, h: number, o: number) => ({
  w1: vals([d, h], 1),
  b1: vals([h], 2),
  w2: vals([h, o], 3),
  b2: vals([o], 4),
});
const mse = (p: { w1: Array; b1: Array; w2: Array; b2: Array }, x: Array): Array => jnp.mean(jnp.square(mlp(p, x)));
const softmax = (x: Array): Array => nn.softmax(x, -1);
const layerNorm = (x: Array, g: Array, b: Array): Array => {
  const m = jnp.mean(x, -1, { keepdims: true });
  const v = jnp.mean(jnp.square(jnp.subtract(x, m)), -1, { keepdims: true });
  return jnp.add(jnp.multiply(jnp.divide(jnp.subtract(x, m), jnp.sqrt(jnp.add(v, 1e-5))), g), b);
};
const attention = (q: Array, k: Array, v: Array): Array => {
  const s = jnp.divide(jnp.einsum("bhqd,bhkd->bhqk", q, k), Math.sqrt(q.shape[3]));
  return jnp.einsum("bhqk,bhkd->bhqd", nn.softmax(s, -1), v);
};
const crossEntropy = (logits: Array, labels: Array): Array =>
  jnp.negative(jnp.mean(jnp.squeeze(jnp.takeAlongAxis(nn.logSoftmax(logits, -1), jnp.expandDims(labels, 1), 1), 1)));
const ce = (p: { w1: Array; b1: Array; w2: Array; b2: Array }, x: Array, y: Array): Array => crossEntropy(mlp(p, x), y);
const opt = optim.adamw(1e-2, { weightDecay: 1e-2 });
const adamwStep = (
  p: { w1: Array; b1: Array; w2: Array; b2: Array },
  s: unknown,
  x: Array,
  y: Array,
): [unknown, unknown, Array] => {
  const loss = ce(p, x, y);
  const g = grad(ce)(p, x, y);
  const [u, s2] = opt.update(g, s as never, p);
  return [optim.applyUpdates(p, u), s2, loss];
};

const m1 = (n: number): [number[], string[]] => [[n], ["x"]];
const m2 = (a: number, b: number): [number[], string[]] => [
  [a, b],
  ["x", "y"],
];
const none = {};

export const CASES: Case[] = [
  {
    name: "elementwise chain",
    f: (x: Array, y: Array) => jnp.subtract(jnp.tanh(jnp.add(jnp.multiply(x, y), 1)), jnp.divide(x, 2)),
    args: () => [vals([16, 8]), vals([16, 8], 1)],
    configs: [
      { mesh: m1(2), in: [["x"], ["x"]], coll: none },
      { mesh: m1(8), in: [["x"], ["x"]], coll: none },
      {
        mesh: m2(2, 2),
        in: [
          ["x", "y"],
          ["x", "y"],
        ],
        coll: none,
      },
    ],
  },
  {
    name: "elementwise of differently sharded operands (the smaller is resharded)",
    f: (x: Array, y: Array) => jnp.add(x, jnp.sum(y, 1, { keepdims: true })),
    args: () => [vals([16, 8]), vals([16, 4], 1)],
    configs: [{ mesh: m1(4), in: [["x"], [null, "x"]], coll: { psum: 1 } }],
  },
  {
    name: "elementwise of operands split along different dims: one all_to_all moves the split",
    f: (x: Array, y: Array) => jnp.multiply(x, y),
    args: () => [vals([16, 8]), vals([16, 8], 1)],
    configs: [
      { mesh: m1(4), in: [["x"], [null, "x"]], coll: { all_to_all: 1 }, bytes: [16 * 2 * 4] },
      { mesh: m2(2, 2), in: [[null, "y"], ["y"]], coll: { all_to_all: 1 } },
    ],
  },
  {
    name: "bias add (broadcast of a replicated vector)",
    f: (x: Array, b: Array) => jnp.add(x, b),
    args: () => [vals([16, 8]), vals([8], 1)],
    configs: [
      { mesh: m1(4), in: [["x"], []], coll: none },
      { mesh: m1(4), in: [[null, "x"], ["x"]], coll: none },
      { mesh: m2(2, 4), in: [["x", "y"], ["y"]], coll: none },
    ],
  },
  {
    name: "matmul, batch (lhs rows) sharded",
    f: (x: Array, w: Array) => jnp.matmul(x, w),
    args: () => [vals([16, 8]), vals([8, 4], 1)],
    configs: [
      { mesh: m1(2), in: [["x"], []], coll: none },
      { mesh: m1(8), in: [["x"], []], coll: none },
    ],
  },
  {
    name: "matmul, contracting dim sharded on both sides: local dot + one psum",
    f: (x: Array, w: Array) => jnp.matmul(x, w),
    args: () => [vals([8, 16]), vals([16, 4], 1)],
    configs: [
      { mesh: m1(4), in: [[null, "x"], ["x"]], coll: { psum: 1 }, bytes: [8 * 4 * 4] },
      { mesh: m1(8), in: [[null, "x"], ["x"]], coll: { psum: 1 }, bytes: [8 * 4 * 4] },
      // contracting sharded only on the lhs: the rhs is sliced locally (no communication), then one psum
      { mesh: m1(4), in: [[null, "x"], []], coll: { psum: 1 } },
      // the partial sum reduce-scattered straight into the sharded output
      { mesh: m1(4), in: [[null, "x"], ["x"]], out: ["x"], coll: { reduce_scatter: 1 }, bytes: [8 * 4 * 4] },
    ],
  },
  {
    name: "matmul, free dims sharded (column parallel, 2-D mesh)",
    f: (x: Array, w: Array) => jnp.matmul(x, w),
    args: () => [vals([16, 8]), vals([8, 16], 1)],
    configs: [
      { mesh: m1(4), in: [[], [null, "x"]], coll: none },
      { mesh: m2(2, 4), in: [["x"], [null, "y"]], coll: none },
      { mesh: m2(2, 2), in: [["x", "y"], ["y"]], coll: { psum: 1 }, bytes: [8 * 16 * 4] },
    ],
  },
  {
    name: "batched matmul (einsum), batch sharded",
    f: (a: Array, b: Array) => jnp.einsum("bij,bjk->bik", a, b),
    args: () => [vals([8, 4, 6]), vals([8, 6, 4], 1)],
    configs: [
      { mesh: m1(4), in: [["x"], ["x"]], coll: none },
      {
        mesh: m2(2, 2),
        in: [
          ["x", null, "y"],
          ["x", "y"],
        ],
        coll: { psum: 1 },
      },
    ],
  },
  {
    name: "sum over a sharded dim",
    f: (x: Array) => jnp.sum(x, 0),
    args: () => [vals([16, 8])],
    configs: [
      { mesh: m1(4), in: [["x"]], coll: { psum: 1 }, bytes: [8 * 4] },
      { mesh: m2(2, 2), in: [["x", "y"]], coll: { psum: 1 } },
    ],
  },
  {
    name: "sum over an unsharded dim keeps the other's sharding",
    f: (x: Array) => jnp.sum(x, 1),
    args: () => [vals([16, 8])],
    configs: [{ mesh: m1(8), in: [["x"]], coll: none }],
  },
  {
    name: "max and min over a sharded dim",
    f: (x: Array) => jnp.subtract(jnp.max(x, 0), jnp.min(x, 0)),
    args: () => [vals([16, 8])],
    configs: [{ mesh: m1(4), in: [["x"]], coll: { pmax: 1, pmin: 1 } }],
  },
  {
    name: "mean over everything on a 2-D mesh",
    f: (x: Array) => jnp.mean(x),
    args: () => [vals([16, 8])],
    configs: [{ mesh: m2(2, 4), in: [["x", "y"]], coll: { psum: 1 }, bytes: [4] }],
  },
  {
    name: "argmax over a sharded dim (gathered first)",
    f: (x: Array) => jnp.argmax(x, 1),
    args: () => [vals([8, 16])],
    configs: [{ mesh: m1(4), in: [[null, "x"]], coll: { all_gather: 1 } }],
    exact: true,
  },
  {
    name: "softmax over an unsharded dim",
    f: softmax,
    args: () => [vals([16, 8])],
    configs: [
      { mesh: m1(4), in: [["x"]], coll: none },
      { mesh: m2(2, 2), in: [["x"]], coll: none },
    ],
  },
  {
    name: "softmax over the sharded dim: pmax and psum",
    f: softmax,
    args: () => [vals([4, 16])],
    configs: [{ mesh: m1(4), in: [[null, "x"]], coll: { pmax: 1, psum: 1 } }],
  },
  {
    name: "layer norm, batch sharded",
    f: layerNorm,
    args: () => [vals([16, 8]), vals([8], 1), vals([8], 2)],
    configs: [
      { mesh: m1(8), in: [["x"], [], []], coll: none },
      { mesh: m2(2, 2), in: [[["x", "y"]], [], []], coll: none },
    ],
  },
  {
    name: "attention, heads sharded",
    f: attention,
    args: () => [vals([2, 4, 8, 8]), vals([2, 4, 8, 8], 1), vals([2, 4, 8, 8], 2)],
    configs: [
      {
        mesh: m1(4),
        in: [
          [null, "x"],
          [null, "x"],
          [null, "x"],
        ],
        coll: none,
      },
      {
        mesh: m2(2, 2),
        in: [
          ["x", "y"],
          ["x", "y"],
          ["x", "y"],
        ],
        coll: none,
      },
    ],
  },
  {
    name: "MLP forward, data parallel",
    f: mlp,
    args: () => [mlpParams(8, 16, 4), vals([16, 8], 5)],
    configs: [
      { mesh: m1(2), in: [[], ["x"]], coll: none },
      { mesh: m1(8), in: [[], ["x"]], coll: none },
    ],
  },
  {
    name: "MLP forward, Megatron column-then-row: exactly one all-reduce",
    f: (w1: Array, b1: Array, w2: Array, b2: Array, x: Array) => mlp({ w1, b1, w2, b2 }, x),
    args: () => {
      const p = mlpParams(8, 16, 4);
      return [p.w1, p.b1, p.w2, p.b2, vals([16, 8], 5)];
    },
    configs: [
      { mesh: m1(4), in: [[null, "x"], ["x"], ["x"], [], []], coll: { psum: 1 }, bytes: [16 * 4 * 4] },
      { mesh: m2(2, 2), in: [[null, "y"], ["y"], ["y"], [], ["x"]], coll: { psum: 1 }, bytes: [8 * 4 * 4] },
    ],
  },
  {
    name: "MLP gradient, data parallel: one all-reduce per parameter",
    f: (p: ReturnType<typeof mlpParams>, x: Array) => grad(mse)(p, x),
    args: () => [mlpParams(8, 16, 4), vals([16, 8], 5)],
    configs: [
      { mesh: m1(4), in: [[], ["x"]], coll: { psum: 4 } },
      { mesh: m2(2, 2), in: [[], [["x", "y"]]], coll: { psum: 4 } },
    ],
  },
  {
    name: "matmul gradient under ZeRO: reduce-scatter into the sharded weight",
    f: (w: Array, x: Array) => grad((w: Array, x: Array) => jnp.sum(jnp.square(jnp.matmul(x, w))))(w, x),
    args: () => [vals([8, 4], 1), vals([16, 8], 5)],
    configs: [{ mesh: m1(4), in: [[], ["x"]], out: ["x"], coll: { reduce_scatter: 1 }, bytes: [8 * 4 * 4] }],
  },
  {
    name: "embedding lookup, ids sharded, table replicated",
    f: (t: Array, ids: Array) => jnp.take(t, ids, 0),
    args: () => [vals([32, 8]), ints([16], 32)],
    configs: [{ mesh: m1(4), in: [[], ["x"]], coll: none }],
  },
  {
    name: "embedding lookup, table sharded over vocab rows: masked local lookup + psum",
    f: (t: Array, ids: Array) => jnp.take(t, ids, 0),
    args: () => [vals([32, 8]), ints([16], 32)],
    configs: [{ mesh: m1(4), in: [["x"], []], coll: { psum: 1 }, bytes: [16 * 8 * 4] }],
  },
  {
    name: "cross-entropy, batch sharded",
    f: crossEntropy,
    args: () => [vals([16, 10]), ints([16], 10)],
    configs: [{ mesh: m1(4), in: [["x"], ["x"]], coll: { psum: 1 } }],
  },
  {
    name: "adamw training step, data parallel",
    f: adamwStep,
    args: () => {
      const p = mlpParams(8, 16, 10);
      return [p, opt.init(p), vals([16, 8], 5), ints([16], 10)];
    },
    configs: [{ mesh: m1(4), in: [[], [], ["x"], ["x"]], coll: { psum: 5 } }],
  },
  {
    name: "reshape merging a sharded major dim",
    f: (x: Array) => jnp.reshape(jnp.multiply(x, 2), [32, 6]),
    args: () => [vals([8, 4, 6])],
    configs: [{ mesh: m1(4), in: [["x"]], coll: none }],
  },
  {
    name: "reshape splitting a sharded dim",
    f: (x: Array) => jnp.sum(jnp.reshape(x, [8, 4, 6]), 2),
    args: () => [vals([32, 6])],
    configs: [{ mesh: m1(8), in: [["x"]], coll: none }],
  },
  {
    name: "transpose then matmul",
    f: (x: Array, w: Array) => jnp.matmul(jnp.transpose(x), w),
    args: () => [vals([8, 16]), vals([8, 4], 1)],
    configs: [{ mesh: m1(4), in: [[null, "x"], []], coll: none }],
  },
  {
    name: "cumsum over a sharded dim (gathered first)",
    f: (x: Array) => jnp.cumsum(x, 1),
    args: () => [vals([8, 16])],
    configs: [{ mesh: m1(4), in: [[null, "x"]], coll: { all_gather: 1 } }],
  },
  {
    name: "concatenate, slice and pad along unsharded dims",
    f: (x: Array, y: Array) =>
      jnp.pad(lax.sliceInDim(jnp.concatenate([x, y], 1), 2, 10, 1, 1), [
        [0, 0],
        [1, 2],
      ]),
    args: () => [vals([16, 8]), vals([16, 4], 1)],
    configs: [{ mesh: m1(4), in: [["x"], ["x"]], coll: none }],
  },
  {
    name: "sort along an unsharded dim",
    f: (x: Array) => jnp.sort(x, 1),
    args: () => [vals([16, 8])],
    configs: [{ mesh: m1(4), in: [["x"]], coll: none }],
  },
  {
    name: "integer program (exact)",
    f: (x: Array, y: Array) => jnp.sum(jnp.add(jnp.multiply(x, 3), y), 0),
    args: () => [ints([16, 8], 100), ints([16, 8], 50, 1)],
    configs: [
      { mesh: m1(4), in: [["x"], ["x"]], coll: { psum: 1 } },
      {
        mesh: m2(2, 2),
        in: [
          ["x", "y"],
          ["x", "y"],
        ],
        coll: { psum: 1 },
      },
    ],
    exact: true,
  },
  {
    name: "select_n and convert",
    f: (x: Array) => jnp.where(jnp.greater(x, 0), jnp.astype(jnp.multiply(x, 4), "int32"), -1),
    args: () => [vals([16, 8])],
    configs: [{ mesh: m2(2, 4), in: [["x", "y"]], coll: none }],
    exact: true,
  },
  {
    name: "a nested jit (pjit inlined) and a custom_jvp function",
    f: (x: Array) => jit((z: Array) => nn.gelu(jnp.multiply(z, 2)))(nn.softplus(x)),
    args: () => [vals([16, 8])],
    configs: [{ mesh: m1(4), in: [["x"]], coll: none }],
  },
];
