/** @file pmap staticBroadcastedArgnums: static values are broadcast (not mapped) and keyed by value/identity, so a changed static function retraces. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
import type { Array } from "../../src/core/array.js";
import { pmap } from "../../src/parallel/pmap.js";
import { array } from "../../src/numpy/core.js";
import * as jnp from "../../src/numpy/index.js";
import { assertClose } from "../helpers/fixtures.js";

config.update("numCpuDevices", 2);

test("static broadcasted numbers and functions select their own program", () => {
  const x = array([0.5, -1], { dtype: "float32" });
  const scale = pmap((v: Array, k: number) => jnp.multiply(v, k), { staticBroadcastedArgnums: 1 });
  assert.deepEqual(scale(x, 3).tolist(), [1.5, -3]);
  assert.deepEqual(scale(x, -2).tolist(), [-1, 2]);
  const act = pmap((v: Array, o: { f: (a: Array) => Array }) => o.f(v), { staticBroadcastedArgnums: [1] });
  assertClose(act(x, { f: jnp.tanh }), array([Math.tanh(0.5), Math.tanh(-1)], { dtype: "float32" }));
  assertClose(act(x, { f: jnp.sin }), array([Math.sin(0.5), Math.sin(-1)], { dtype: "float32" }));
  // inAxes lists every positional argument; the static one's entry is dropped, as in JAX
  const rows = pmap((v: Array, k: number, w: Array) => jnp.add(jnp.multiply(v, k), w), {
    inAxes: [0, null, 1],
    staticBroadcastedArgnums: 1,
  });
  assert.deepEqual(
    rows(
      x,
      10,
      array(
        [
          [1, 2],
          [3, 4],
        ],
        { dtype: "float32" },
      ),
    ).tolist(),
    [
      [6, 8],
      [-8, -6],
    ],
  );
  assert.throws(
    () => act(x, { f: array([1]) } as never),
    /non-hashable static arguments are not supported: static argument 1 \(at f\) is a jaxts Array/,
  );
});
