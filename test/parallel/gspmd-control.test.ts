/**
 * @file jit with shardings through control flow: scan (Megatron layers with stacked weights, a data-parallel training
 * loop), while_loop, cond, custom_jvp and custom_vjp calls, and grad of each, on 1-D and 2-D meshes and both SPMD
 * runtimes; values equal the single-device jit, collectives are pinned by kind, bytes and where they run.
 */
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import {
  type Array,
  customJvp,
  customVjp,
  grad,
  jit,
  lax,
  makeMesh,
  nn,
  numpy as jnp,
  sharding,
  valueAndGrad,
} from "../../src/index.js";
import type { CollectiveCost, CostAnalysis } from "../../src/parallel/cost-model.js";
import type { Mesh } from "../../src/parallel/mesh.js";
import { close, onEach, vals } from "./gspmd-cases.js";
const { P, NamedSharding } = sharding;

type Fn = (...a: Array[]) => Array;
type Compiled = { costAnalysis: () => CostAnalysis; asText: () => string };
/** Collectives as "kind@where:bytes" (where: "top" or the enclosing primitives), sorted. */
const colls = (f: { lower: (...a: Array[]) => { compile: () => unknown } }, args: Array[]): string[] =>
  (f.lower(...args).compile() as Compiled)
    .costAnalysis()
    .collectives.map((c: CollectiveCost) => `${c.kind}@${c.within ? c.within.join(">") : "top"}:${c.bytes}`)
    .sort();
/** jit(f) with shardings equals jit(f); returns the sharded jitted function. */
function check(what: string, f: Fn, mesh: Mesh, specs: (string | null | string[])[][], args: Array[]) {
  const jf = jit(f, { inShardings: specs.map((s) => NamedSharding(mesh, P(...s))) });
  close(what, jf(...args), jit(f)(...args));
  return jf;
}

const MESHES: [number[], string[]][] = [
  [[4], ["model"]],
  [
    [2, 2],
    ["data", "model"],
  ],
];

/** A Megatron MLP per layer (w1 column-parallel, w2 row-parallel) scanned over stacked weights. */
const layers = (w1s: Array, w2s: Array, x: Array): Array =>
  (
    lax.scan(
      (h: Array, w: [Array, Array]) => [jnp.add(h, jnp.matmul(nn.relu(jnp.matmul(h, w[0])), w[1])), jnp.sum(h)],
      x,
      [w1s, w2s],
    ) as [Array, Array]
  )[0];

onEach("scan over Megatron layers with stacked weights: one psum per layer inside the body, none outside", () => {
  for (const [shape, names] of MESHES) {
    const mesh = makeMesh(shape, names);
    const [L, b, d, h] = [3, 8, 8, 16];
    const args: [Array, Array, Array] = [vals([L, d, h], 1), vals([L, h, d], 2), vals([b, d], 3)];
    const x: string[] = names.length === 2 ? ["data"] : [];
    const jf = check(`layers on ${shape}`, layers, mesh, [[null, null, "model"], [null, "model"], x], args);
    // the row-parallel matmul's partial sum, [b or b/2, d] float32, reduced inside the scanned body
    assert.deepEqual(colls(jf, args), [`psum@scan:${(b / (x.length ? 2 : 1)) * d * 4}`], `${shape}`);
    // grad through the scan: the backward scan holds the per-layer reductions
    const loss = (w1s: Array, w2s: Array, xx: Array) => jnp.sum(jnp.square(layers(w1s, w2s, xx)));
    const want = jit(grad(loss, { argnums: [0, 1] }))(...args) as Array[];
    const jl = jit(loss, {
      inShardings: [[null, null, "model"], [null, "model"], x].map((s) => NamedSharding(mesh, P(...s))),
    });
    const got = grad(jl, { argnums: [0, 1] })(...args) as Array[];
    got.forEach((g, i) => close(`grad(jit(layers)) ${i} on ${shape}`, g, want[i], 1e-4));
  }
});

onEach("a data-parallel training loop as a scan: the gradient all-reduce runs inside the body", () => {
  for (const [shape, names] of MESHES) {
    const mesh = makeMesh(shape, names);
    const dp: (string | string[])[] = names.length === 2 ? [["data", "model"]] : ["model"];
    const loss = (w: Array, x: Array, y: Array) => jnp.mean(jnp.square(jnp.subtract(jnp.tanh(jnp.matmul(x, w)), y)));
    const train = (w: Array, xs: Array, ys: Array): Array => {
      const [wEnd, losses] = lax.scan(
        (wc: Array, xy: [Array, Array]) => {
          const [l, g] = valueAndGrad(loss)(wc, xy[0], xy[1]) as [Array, Array];
          return [jnp.subtract(wc, jnp.multiply(g, 0.5)), l];
        },
        w,
        [xs, ys],
      ) as [Array, Array];
      return jnp.concatenate([jnp.reshape(wEnd, [-1]), losses]);
    };
    const [S, B, d, o] = [4, 16, 8, 4];
    const args = [vals([d, o], 1), vals([S, B, d], 2), vals([S, B, o], 3)];
    const jf = check(`dp loop on ${shape}`, train, mesh, [[], [null, ...dp], [null, ...dp]], args);
    // the gradient ([d, o] float32) all-reduced inside the body; the per-step losses reduced once after the loop
    assert.deepEqual(colls(jf, args), [`psum@scan:${d * o * 4}`, `psum@top:${S * 4}`], `${shape}`);
  }
});

onEach("while_loop with a sharded carry keeps it sharded; a predicate over it is reduced inside the cond", () => {
  for (const [shape, names] of MESHES) {
    const mesh = makeMesh(shape, names);
    const f = (x: Array): Array =>
      (
        lax.whileLoop(
          (c: [Array, Array]) => jnp.logicalAnd(jnp.less(c[0], 6), jnp.less(jnp.sum(jnp.square(c[1])), 4000)),
          (c: [Array, Array]) => [jnp.add(c[0], 1), jnp.add(jnp.multiply(c[1], 1.5), jnp.sin(c[1]))],
          [jnp.array(0, { dtype: "int32" }), x],
        ) as [Array, Array]
      )[1];
    const spec = names.length === 2 ? ["data", "model"] : ["model"];
    const args: [Array] = [vals([8, 16], 4)];
    const jf = check(`while on ${shape}`, f, mesh, [spec], args);
    assert.equal(String(jf(...args).sharding), String(NamedSharding(mesh, P(...spec))));
    // one scalar psum per step (the sum of squares in the predicate), none in the body
    assert.deepEqual(colls(jf, args), [`psum@while:4`]);
    // (reverse-mode differentiation of while_loop is not defined, as in JAX)
  }
});

onEach("cond with sharded operands: both branches keep the operands' sharding", () => {
  for (const [shape, names] of MESHES) {
    const mesh = makeMesh(shape, names);
    const spec = names.length === 2 ? ["data", "model"] : [null, "model"];
    const f = (x: Array, s: Array): Array =>
      lax.cond(
        jnp.greater(jnp.sum(s), 0),
        (a: Array) => jnp.multiply(a, 2),
        (a: Array) => jnp.sin(a),
        x,
      ) as Array;
    for (const sign of [1, -1]) {
      const args = [vals([8, 16], 5), jnp.multiply(vals([8], 6), sign)];
      const jf = check(`cond (${sign}) on ${shape}`, f, mesh, [spec, []], args);
      assert.equal(String(jf(...args).sharding), String(NamedSharding(mesh, P(...spec))));
      assert.deepEqual(colls(jf, args), []);
    }
  }
});

/** A stable softplus with its own jvp (sigmoid x tangent). */
const softplus = customJvp((x: Array) => jnp.add(jnp.log1p(jnp.exp(jnp.negative(jnp.abs(x)))), jnp.maximum(x, 0)));
softplus.defjvp(([x], [t]) => [softplus(x), jnp.multiply(nn.sigmoid(x), t)]);
/** sin with a deliberately scaled backward rule (0.5 cos), so the custom rule is visibly the one used. */
const halfSin = customVjp((x: Array) => jnp.sin(x));
halfSin.defvjp(
  (x: Array) => [jnp.sin(x), jnp.cos(x)],
  (c: Array, ct: Array) => [jnp.multiply(jnp.multiply(c, ct), 0.5)],
);

onEach("custom_jvp and custom_vjp functions inside sharded jit, and grad through them", () => {
  for (const [shape, names] of MESHES) {
    const mesh = makeMesh(shape, names);
    const spec = names.length === 2 ? ["data", "model"] : ["model"];
    const S = NamedSharding(mesh, P(...spec));
    for (const [name, fn] of [
      ["custom_jvp softplus", (x: Array) => softplus(x) as Array],
      ["custom_vjp halfSin", (x: Array) => halfSin(x) as Array],
    ] as const) {
      const args: [Array] = [jnp.multiply(vals([8, 16], 7), 30)];
      const f = (x: Array) => jnp.multiply(fn(x), x);
      const jf = check(`${name} on ${shape}`, f, mesh, [spec], args);
      assert.equal(String(jf(...args).sharding), String(S));
      assert.deepEqual(colls(jf, args), []);
      const loss = (x: Array) => jnp.sum(f(x));
      const want = grad(loss)(...args);
      // grad of the jitted sharded function (the per-device body's custom rule) and jit of its grad
      close(`grad(jit(${name})) on ${shape}`, grad(jit(loss, { inShardings: S }))(...args), want, 1e-4);
      close(
        `jit(grad(${name})) on ${shape}`,
        jit(grad(loss), { inShardings: S, outShardings: S })(...args),
        want,
        1e-4,
      );
    }
  }
});

onEach(
  "rev, dynamic_slice / dynamic_update_slice along unsharded dims and a batch-sharded conv need no collectives",
  () => {
    for (const [shape, names] of MESHES) {
      const mesh = makeMesh(shape, names);
      const rows: string | string[] = names.length === 2 ? ["data", "model"] : "model";
      const S = NamedSharding(mesh, P(rows));
      const i = jnp.array(5, { dtype: "int32" });
      const cases: [string, Fn, Array[], (string | null | string[])[][]][] = [
        ["rev", (x) => jnp.multiply(lax.rev(x, [1]), 2), [vals([8, 16], 8)], [[rows]]],
        [
          "dynamic_slice",
          (x, k) => jnp.sin(lax.dynamicSlice(x, [jnp.array(0, { dtype: "int32" }), k], [8, 4])),
          [vals([8, 16], 9), i],
          [[rows], []],
        ],
        [
          "dynamic_update_slice",
          (x, u, k) => lax.dynamicUpdateSlice(x, jnp.exp(u), [jnp.array(0, { dtype: "int32" }), k]),
          [vals([8, 16], 10), vals([8, 4], 11), i],
          [[rows], [rows], []],
        ],
        [
          "conv",
          (x, w) => nn.relu(lax.conv(x, w, [1, 1], "SAME")),
          [vals([8, 3, 6, 6], 12), vals([4, 3, 3, 3], 13)],
          [[rows], []],
        ],
      ];
      for (const [name, f, args, specs] of cases) {
        const jf = check(`${name} on ${shape}`, f, mesh, specs, args);
        assert.equal(String(jf(...args).sharding), String(S), `${name}: rows stay split`);
        assert.deepEqual(colls(jf, args), [], name);
      }
    }
  },
);
