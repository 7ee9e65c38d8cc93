/** @file The random flags of jax.config: jax_random_seed_offset (added to every seed) and jax_high_dynamic_range_gumbel (gumbel's default mode). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config, jit, numpy as jnp, random } from "../../src/index.js";
import type { Array } from "../../src/core/array.js";

function withFlag<T>(name: "randomSeedOffset" | "highDynamicRangeGumbel", value: number | boolean, f: () => T): T {
  const old = config.read(name);
  config.update(name, value as never);
  try {
    return f();
  } finally {
    config.update(name, old as never);
  }
}
const data = (k: unknown): number[] => random.keyData(k as Array).tolist() as number[];

test("randomSeedOffset is added to every seed: key, PRNGKey, Array seeds and seeds traced under jit", () => {
  // JAX's random_seed: seeds + jax_random_seed_offset, then the threefry seed words
  const plain8 = data(random.key(8));
  const keyed = withFlag("randomSeedOffset", 5, () => data(random.key(3)));
  assert.deepEqual(keyed, plain8);
  assert.deepEqual(
    withFlag("randomSeedOffset", 5, () => random.PRNGKey(3).tolist()),
    random.PRNGKey(8).tolist(),
  );
  assert.deepEqual(
    withFlag("randomSeedOffset", 5, () => data(random.key(jnp.array(3, { dtype: "int32" })))),
    data(random.key(jnp.array(8, { dtype: "int32" }))),
  );
  // a jitted sampler traced before the flag flips is traced again after it (the flag is part of the trace context)
  const draw = jit((s: Array) => random.uniform(random.key(s), [3]));
  const s3 = jnp.array(3, { dtype: "int32" });
  const before = draw(s3).tolist();
  const withOffset = withFlag("randomSeedOffset", 5, () => draw(s3).tolist());
  assert.deepEqual(withOffset, random.uniform(random.key(8), [3]).tolist());
  assert.notDeepEqual(withOffset, before);
  assert.deepEqual(draw(s3).tolist(), before);
  assert.throws(
    () => config.update("randomSeedOffset", 1.5),
    /config.update: randomSeedOffset must be a non-negative integer/,
  );
});

test("highDynamicRangeGumbel makes gumbel's default mode 'high' (explicit modes are kept)", () => {
  const k = random.key(11);
  const low = random.gumbel(k, [64]).tolist() as number[];
  const high = random.gumbel(k, [64], null, "high").tolist() as number[];
  assert.notDeepEqual(low, high);
  assert.deepEqual(
    withFlag("highDynamicRangeGumbel", true, () => random.gumbel(k, [64]).tolist()),
    high,
  );
  assert.deepEqual(
    withFlag("highDynamicRangeGumbel", true, () => random.gumbel(k, [64], null, "low").tolist()),
    low,
  );
  const viaJit = jit((key: Array) => random.gumbel(key, [64]));
  assert.deepEqual(viaJit(k as unknown as Array).tolist(), low);
  assert.deepEqual(
    withFlag("highDynamicRangeGumbel", true, () => viaJit(k as unknown as Array).tolist()),
    high,
  );
});
