/**
 * @file The sharded-update context on one host: two equal halves stand for two devices' slices (sum doubles a
 * partial), so globalNorm, clipByGlobalNorm and scaleByTrustRatio on a half must equal the full computation's half;
 * mask functions see the full shapes; every built-in optimizer declares itself exact on slices, a hand-written one
 * is not known to be.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as tree from "../../src/core/tree.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/index.js";
import { type ShardedUpdate, shardRefusal, shardedUpdate, withShardedUpdate } from "../../src/optim/base.js";
import { ShapeDtypeStruct } from "../../src/transforms/api.js";
import { assertClose } from "../helpers/fixtures.js";

const vals = (n: number, k: number): number[] => globalThis.Array.from({ length: n }, (_, i) => Math.sin(k + 1.7 * i));
const half = { w: jnp.array(vals(6, 1)), b: jnp.array(vals(3, 2)) };
const full = tree.map((x) => jnp.concatenate([x as Array, x as Array]), half) as typeof half;
const pHalf = { w: jnp.array(vals(6, 3)), b: jnp.array(vals(3, 4)) };
const pFull = tree.map((x) => jnp.concatenate([x as Array, x as Array]), pHalf) as typeof pHalf;
const firstHalf = (x: Array): Array => jnp.reshape(jnp.split(x, 2)[0], [-1]);
const shapes = { w: [3, 4], b: [6] };
const ctx: ShardedUpdate = {
  where: "two equal halves",
  sum: (x) => jnp.multiply(x, 2),
  fullShapes: (t) => {
    const o = t as Record<"w" | "b", Array>;
    return { w: new ShapeDtypeStruct(shapes.w, o.w.dtype), b: new ShapeDtypeStruct(shapes.b, o.b.dtype) };
  },
};

test("globalNorm and clipByGlobalNorm on slices equal the full computation", () => {
  const got = withShardedUpdate(ctx, () => optim.globalNorm(half));
  assertClose(got, optim.globalNorm(full), { rtol: 1e-6 });
  assert.equal(shardedUpdate(), null, "the context is restored");
  const clip = optim.clipByGlobalNorm(0.5);
  const [uFull] = clip.update(full, clip.init(full));
  const [uHalf] = withShardedUpdate(ctx, () => clip.update(half, clip.init(half)));
  assertClose(uHalf.w, firstHalf(uFull.w), { rtol: 1e-6 });
  assertClose(uHalf.b, firstHalf(uFull.b), { rtol: 1e-6 });
  assert.ok((optim.globalNorm(full).item() as number) > 0.5, "the clip triggers");
});

test("scaleByTrustRatio (lamb) on slices uses each leaf's full norms", () => {
  const t = optim.scaleByTrustRatio();
  const [uFull] = t.update(full, t.init(full), pFull);
  const [uHalf] = withShardedUpdate(ctx, () => t.update(half, t.init(half), pHalf));
  assertClose(uHalf.w, firstHalf(uFull.w), { rtol: 1e-6 });
  assertClose(uHalf.b, firstHalf(uFull.b), { rtol: 1e-6 });
  // the per-leaf ratios differ from 1, so a wrong norm would show
  assert.ok(Math.abs((uFull.w.dataSync() as Float32Array)[0] - (full.w.dataSync() as Float32Array)[0]) > 1e-3);
});

test("a mask function sees the full shapes under a sharded update", () => {
  const seen: number[][] = [];
  const o = optim.adamw(0.1, {
    weightDecay: 0.5,
    mask: (p: unknown) =>
      tree.map((x) => {
        seen.push([...(x as { shape: number[] }).shape]);
        return (x as { ndim: number }).ndim > 1;
      }, p),
  });
  withShardedUpdate(ctx, () => o.update(half, o.init(half), pHalf));
  assert.deepEqual(seen, [[6], [3, 4], [6], [3, 4]]);
});

test("built-in optimizers declare themselves exact on slices; a hand-written transformation is not known to be", () => {
  for (const o of [
    optim.sgd(0.1, { momentum: 0.9 }),
    optim.adam(0.1),
    optim.adamw(0.1, { mask: () => ({ w: true, b: false }) }),
    optim.lamb(0.1),
    optim.rmsprop(0.1, { centered: true }),
    optim.adagrad(0.1),
    optim.chain(optim.clip(1), optim.clipByGlobalNorm(1), optim.scaleByRss()),
  ])
    assert.equal(shardRefusal(o), null);
  const custom: optim.GradientTransformation = { init: () => ({}), update: (u, s) => [u, s] };
  assert.match(shardRefusal(optim.chain(optim.adam(0.1), custom)) ?? "", /chain's transformation 1 does not declare/);
  assert.match(shardRefusal(optim.masked(custom, { w: true })) ?? "", /masked's inner transformation does not declare/);
});
