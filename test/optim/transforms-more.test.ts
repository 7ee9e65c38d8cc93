/**
 * @file optim.addNoise / noisySgd (src/optim/transforms-more.ts; its other transformations are checked against NumPy
 * in alias-more.test.ts): the updates are g + sqrt(eta / t^gamma) * normal(key_i) with the keys split as optax does
 * (state key -> [next, sample], sample -> one key per leaf), checked against random.split / random.normal called
 * directly, eagerly and under jit, over 3 steps; the spread of the noise follows the annealing; ZeRO refusal.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/public.js";
import * as random from "../../src/random/index.js";
import { jit } from "../../src/transforms/api.js";
import { assertClose } from "../helpers/fixtures.js";

const row = (k: Array, i: number): Array => jnp.reshape(jnp.take(k, i, { axis: 0 }), [2]);

test("addNoise: the noise optax's key splitting gives, eager and under jit", () => {
  const eta = 0.3,
    gamma = 0.55;
  const params = { a: jnp.zeros([3, 2]), b: jnp.zeros([5]) };
  const g = { a: jnp.ones([3, 2]), b: jnp.full([5], -2.5, "float32") };
  // the reference: the same splits done by hand
  let key = random.PRNGKey(42);
  const want: { a: Array; b: Array }[] = [];
  for (let t = 1; t <= 3; t++) {
    const two = random.split(key) as Array;
    const keys = random.split(row(two, 1), 2) as Array;
    const std = Math.sqrt(eta / t ** gamma);
    want.push({
      a: jnp.add(g.a, jnp.multiply(std, random.normal(row(keys, 0), [3, 2]))),
      b: jnp.add(g.b, jnp.multiply(std, random.normal(row(keys, 1), [5]))),
    });
    key = row(two, 0);
  }
  for (const useJit of [false, true]) {
    const t = optim.addNoise(eta, gamma, random.PRNGKey(42));
    const f = useJit
      ? jit((u: typeof g, s: unknown) => t.update(u, s, params))
      : (u: typeof g, s: unknown) => t.update(u, s, params);
    let s = t.init(params);
    for (let i = 0; i < 3; i++) {
      const [u, ns] = f(g, s) as [typeof g, unknown];
      s = ns;
      assertClose(u.a, want[i].a, { rtol: 1e-6, atol: 1e-6, msg: `jit=${useJit} step ${i} a` });
      assertClose(u.b, want[i].b, { rtol: 1e-6, atol: 1e-6, msg: `jit=${useJit} step ${i} b` });
    }
  }
});

test("noisySgd: the noise's spread anneals as sqrt(eta / t^gamma); an integer key is a seed", () => {
  const p = { w: jnp.zeros([4000]) };
  const opt = optim.noisySgd(1.0, { eta: 0.5, gamma: 1, key: 7 });
  let s = opt.init(p);
  const stds: number[] = [];
  for (let t = 1; t <= 4; t++) {
    const [u, ns] = opt.update({ w: jnp.zeros([4000]) }, s, p) as [{ w: Array }, unknown];
    s = ns;
    stds.push(jnp.std(u.w).item() as number);
  }
  stds.forEach((sd, i) => {
    const want = Math.sqrt(0.5 / (i + 1));
    assert.ok(Math.abs(sd - want) < 0.05 * want, `step ${i + 1}: std ${sd} vs ${want}`);
  });
  const same = optim.noisySgd(1.0, { eta: 0.5, gamma: 1, key: random.PRNGKey(7) });
  const [a] = same.update({ w: jnp.zeros([4000]) }, same.init(p), p) as [{ w: Array }, unknown];
  const [b] = opt.update({ w: jnp.zeros([4000]) }, opt.init(p), p) as [{ w: Array }, unknown];
  assertClose(a.w, b.w, { rtol: 0, atol: 0 });
});

test("addNoise refuses ZeRO shards and bad keys", () => {
  assert.equal(optim.noisySgd(0.1).shards?.exact, false);
  assert.match((optim.addNoise(0.1, 0.5).shards as { reason: string }).reason, /optim\.addNoise: the noise of a flat/);
  assert.throws(
    () => optim.addNoise(0.1, 0.5, jnp.zeros([3]) as never),
    /optim\.addNoise: key must be an integer seed or a raw PRNGKey/,
  );
});
