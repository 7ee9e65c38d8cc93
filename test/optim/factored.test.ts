/**
 * @file optim.scaleByFactoredRms / adafactor state layouts (which leaves are factored at the default
 * minDimSizeToFactor 128 and over which dims), decayRatePow's values, and the per-leaf norms (clipByBlockRms,
 * scaleByParamBlockRms / Norm, scaleByNovograd) on ZeRO-like slices: two equal halves stand for two devices' slices
 * (sum doubles a partial), so a half's result must equal the full computation's half.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as tree from "../../src/core/tree.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/public.js";
import { type ShardedUpdate, withShardedUpdate } from "../../src/optim/base.js";
import { ShapeDtypeStruct } from "../../src/transforms/api.js";
import { assertClose } from "../helpers/fixtures.js";

const shapeOf = (t: unknown): unknown => tree.map((x) => (x as Array).shape, t);

test("factoredDims: the two largest dims when both reach minDim (ties in index order), else null", () => {
  assert.deepEqual(optim.factoredDims([128, 130], true, 128), [0, 1]);
  assert.deepEqual(optim.factoredDims([130, 128], true, 128), [1, 0]);
  assert.deepEqual(optim.factoredDims([4, 256, 128], true, 128), [2, 1]);
  assert.deepEqual(optim.factoredDims([3, 3], true, 3), [0, 1]);
  assert.equal(optim.factoredDims([127, 4096], true, 128), null);
  assert.equal(optim.factoredDims([512], true, 128), null);
  assert.equal(optim.factoredDims([256, 256], false, 128), null);
});

test("adafactor's state at the defaults: a factored (128, 130) and (4, 256, 128) leaf, unfactored (127, 200) and (5,)", () => {
  const params = {
    a: jnp.zeros([128, 130]),
    c: jnp.zeros([4, 256, 128]),
    u: jnp.zeros([127, 200]),
    v: jnp.zeros([5]),
  };
  const st = (optim.adafactor(0.1).init(params) as unknown[])[0] as optim.FactoredState;
  assert.deepEqual(shapeOf(st.vRow), { a: [128], c: [4, 128], u: [1], v: [1] });
  assert.deepEqual(shapeOf(st.vCol), { a: [130], c: [4, 256], u: [1], v: [1] });
  assert.deepEqual(shapeOf(st.v), { a: [1], c: [1], u: [127, 200], v: [5] });
  // a gradient of ones: every factor and the clipping are 1, so the first update is -lr * max(rms(p), 1e-3), and
  // with p = 0 that is -0.1 * 1e-3 everywhere
  const opt = optim.adafactor(0.1);
  const g = tree.map((x) => jnp.onesLike(x as Array), params);
  const [u] = opt.update(g, opt.init(params), params) as [typeof params, unknown];
  for (const k of ["a", "c", "u", "v"] as const)
    assertClose(u[k], jnp.fullLike(params[k], -1e-4), { rtol: 1e-5, msg: `update of ${k}` });
});

test("decayRatePow: 1 - (step + 1)^-decayRate in float32", () => {
  const d = optim.decayRatePow(jnp.array([0, 1, 9], { dtype: "int32" }), 0.8);
  assert.equal(d.dtype, "float32");
  assertClose(d, jnp.array([0, 1 - 2 ** -0.8, 1 - 10 ** -0.8]), { rtol: 1e-6, atol: 1e-7 });
});

// ---------------------------------------------------------------- per-leaf norms on slices

const vals = (n: number, k: number): number[] => globalThis.Array.from({ length: n }, (_, i) => Math.sin(k + 1.7 * i));
const half = { w: jnp.array(vals(6, 1)), b: jnp.array(vals(3, 2)) };
const full = tree.map((x) => jnp.concatenate([x as Array, x as Array]), half) as typeof half;
const pHalf = { w: jnp.array(vals(6, 3)), b: jnp.array(vals(3, 4)) };
const pFull = tree.map((x) => jnp.concatenate([x as Array, x as Array]), pHalf) as typeof pHalf;
const firstHalf = (x: Array): Array => jnp.reshape(jnp.split(x, 2)[0], [-1]);
const ctx: ShardedUpdate = {
  where: "two equal halves",
  sum: (x) => jnp.multiply(x, 2),
  fullShapes: (t) => {
    const o = t as Record<"w" | "b", Array>;
    return { w: new ShapeDtypeStruct([3, 4], o.w.dtype), b: new ShapeDtypeStruct([6], o.b.dtype) };
  },
};

test("clipByBlockRms, scaleByParamBlockRms / Norm and novograd on slices equal the full computation", () => {
  const cases: [string, optim.GradientTransformation][] = [
    ["clipByBlockRms", optim.clipByBlockRms(0.3)],
    ["scaleByParamBlockRms", optim.scaleByParamBlockRms()],
    ["scaleByParamBlockNorm", optim.scaleByParamBlockNorm()],
    ["scaleByNovograd", optim.scaleByNovograd({ weightDecay: 0.1 })],
    ["lars", optim.lars(0.1, { weightDecay: 0.01 })],
  ];
  for (const [name, t] of cases) {
    let sFull = t.init(pFull),
      sHalf = withShardedUpdate(ctx, () => t.init(pHalf));
    for (let step = 0; step < 2; step++) {
      const gF = tree.map((x) => jnp.multiply(x as Array, step + 1), full) as typeof full;
      const gH = tree.map((x) => jnp.multiply(x as Array, step + 1), half) as typeof half;
      const [uF, nF] = t.update(gF, sFull, pFull);
      const [uH, nH] = withShardedUpdate(ctx, () => t.update(gH, sHalf, pHalf));
      [sFull, sHalf] = [nF, nH];
      for (const k of ["w", "b"] as const)
        assertClose(uH[k], firstHalf(uF[k]), { rtol: 1e-5, atol: 1e-7, msg: `${name} step ${step} ${k}` });
      // a norm (not an rms or a ratio of norms) of a slice alone differs from the full one, so a missing sum shows
      const [uAlone] = t.update(gH, t.init(pHalf), pHalf);
      if (step === 0 && (name === "scaleByParamBlockNorm" || name === "scaleByNovograd"))
        assert.ok(
          Math.abs((uAlone.w.dataSync()[0] as number) - (uH.w.dataSync()[0] as number)) > 1e-6,
          `${name}: the slice alone differs`,
        );
    }
  }
});
