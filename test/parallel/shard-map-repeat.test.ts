/**
 * @file shardMap's per-closure fast path on the device runtime: a repeated call with the same mesh, options, argument
 * structure and avals reuses the last call's entry; a changed shape, dtype, weak type, sharding, structure, config flag
 * or a disposed argument takes the full path (right values, the full path's named errors), and the cache keeps no
 * argument or output alive.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertCollected, gc } from "../helpers/collected.js";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, devicePut, lax, makeMesh, numpy as jnp, shardMap, sharding } from "../../src/index.js";
import { scalarToArray } from "../../src/core/trace.js";
import { deviceRuntimeUnavailable, launchCount, runtimeDevice, synchronize } from "../../src/runtime/index.js";
const { NamedSharding, P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;

/** Row-major float64 values 0.5 * (i + 1) of `shape`, as dtype. */
const ramp = (shape: number[], dtype: "float32" | "int32" = "float32", scale = 0.5): Array =>
  jnp.astype(jnp.reshape(jnp.multiply(jnp.add(jnp.arange(shape.reduce((a, b) => a * b, 1)), 1), scale), shape), dtype);
/** The float64 reference of f below: out[i][j] = w[j] * sum over all rows r of x[r][j] (psum of the per-device column sums, replicated). */
function reference(x: number[][], w: number[]): number[] {
  return w.map((wj, j) => wj * x.reduce((s, row) => s + row[j], 0));
}
const rows = (a: Array): number[][] => a.tolist() as number[][];

test("the repeated-call cache keeps no argument or output alive", { skip }, async () => {
  config.update("spmdRuntime", "devices");
  try {
    const mesh = makeMesh([2], ["x"]);
    const f = shardMap((x: Array) => jnp.multiply(lax.psum(x, "x"), 2), { mesh, inSpecs: P("x"), outSpecs: P() });
    const devs = [0, 1].map((id) => runtimeDevice(id));
    const inUse = () => devs.map((d) => d.memoryStats().bytesInUse);
    const first = f(ramp([8])); // compiled and cached
    assert.deepEqual(first.tolist(), [6, 8, 10, 12]);
    first.dispose();
    synchronize();
    gc();
    await new Promise((r) => setImmediate(r)); // finalizers of earlier tests' garbage run before the baseline
    const before = inUse();
    // the calls run in a function of their own: no frame of this async test keeps their values
    const calls = (): WeakRef<Array>[] => {
      const refs: WeakRef<Array>[] = [];
      for (let k = 0; k < 3; k++) {
        const x = devicePut(ramp([1 << 16]), new NamedSharding(mesh, P("x")));
        const out = f(x);
        assert.equal(out.shape[0], 1 << 15);
        refs.push(new WeakRef(x), new WeakRef(out));
        assert.ok(
          inUse().every((b, i) => b > before[i]),
          "the arguments and outputs are resident while alive",
        );
        x.dispose();
        out.dispose();
      }
      return refs;
    };
    let refs = calls();
    synchronize(); // the launches in flight hold their buffers until they settle
    assert.deepEqual(inUse(), before, "disposed arguments and outputs give their device memory back");
    await assertCollected(refs, "no argument or output is reachable from the shardMap closure");
    refs = [];
    assert.deepEqual(f(ramp([8])).tolist(), [6, 8, 10, 12]);
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
});

test(
  "a repeated shardMap call takes the right path for changed shapes, dtypes, weak types, shardings and structures",
  { skip },
  () => {
    config.update("spmdRuntime", "devices");
    try {
      const mesh = makeMesh([2], ["x"]);
      // each device sums its block's rows, psum adds the blocks: w * column sums of the whole x
      const f = shardMap((x: Array, w: Array) => jnp.multiply(w, lax.psum(jnp.sum(x, 0), "x")), {
        mesh,
        inSpecs: [P("x"), P()],
        outSpecs: P(),
      });
      const check = (x: Array, w: Array, what: string): Array => {
        const before = launchCount();
        const out = f(x, w);
        out.blockUntilReady();
        assert.equal(launchCount(), before + 1, `${what}: one launch on the devices`);
        const want = reference(rows(jnp.astype(x, "float32")), jnp.astype(w, "float32").tolist() as number[]);
        const got = jnp.astype(out, "float32").tolist() as number[];
        got.forEach((g, j) =>
          assert.ok(Math.abs(g - want[j]) <= 1e-5 * Math.abs(want[j]), `${what}: [${j}] ${g} vs ${want[j]}`),
        );
        return out;
      };
      const w = ramp([3], "float32", 0.25);
      const a = check(ramp([4, 3]), w, "first call");
      assert.equal(a.dtype, "float32");
      check(ramp([4, 3], "float32", 1.5), w, "same avals, other values");
      check(ramp([6, 3]), w, "another shape");
      check(ramp([4, 3], "float32", 2), w, "back to the first shape");
      const i = check(ramp([4, 3], "int32", 3), jnp.astype(w, "int32"), "int32");
      assert.equal(i.dtype, "int32", "int32 arguments: an int32 result");
      check(ramp([4, 3], "float32", 3), w, "float32 again");
      // an argument already resident with its in_spec's sharding, then one placed otherwise (replicated), then host
      const xs = ramp([4, 3], "float32", 0.75);
      check(devicePut(xs, new NamedSharding(mesh, P("x"))), w, "x resident as its in_spec");
      check(devicePut(xs, new NamedSharding(mesh, P())), w, "x resident replicated");
      check(xs, w, "x on the host");
      // the same values as a weakly typed scalar weight: the output's weak type follows the argument's
      const strong = f(ramp([4, 3]), jnp.array(2, { dtype: "float32" }));
      const weak = f(ramp([4, 3]), scalarToArray(2, "float32", true));
      const strong2 = f(ramp([4, 3]), jnp.array(2, { dtype: "float32" }));
      assert.deepEqual(weak.tolist(), strong.tolist());
      assert.equal(weak.weakType, false, "psum of a float32 block times a weak scalar is float32 (strong)");
      assert.equal(strong.shape.length, 1);
      assert.deepEqual(strong2.tolist(), strong.tolist());
      // the weak type is part of the call signature: a weak-only body keeps it
      const g = shardMap((s: Array) => jnp.multiply(s, 3), { mesh, inSpecs: P(), outSpecs: P() });
      const gs = g(jnp.array(2, { dtype: "float32" })),
        gw = g(scalarToArray(2, "float32", true)),
        gs2 = g(jnp.array(2, { dtype: "float32" }));
      assert.deepEqual([gs.weakType, gw.weakType, gs2.weakType], [false, true, false]);
      assert.deepEqual([gs.item(), gw.item(), gs2.item()], [6, 6, 6]);
    } finally {
      config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
    }
  },
);

test("a repeated shardMap call with bad arguments raises the full path's named errors", { skip }, () => {
  config.update("spmdRuntime", "devices");
  try {
    const mesh = makeMesh([2], ["x"]);
    const f = shardMap((x: Array) => lax.psum(x, "x"), { mesh, inSpecs: P("x"), outSpecs: P() });
    assert.deepEqual(f(ramp([4])).tolist(), [2, 3]);
    assert.deepEqual(f(ramp([4])).tolist(), [2, 3]);
    // a shape the mesh does not divide, after the same closure ran with a divisible one
    assert.throws(
      () => f(ramp([5])),
      /shardMap: argument 0 of shape \(5\) dimension 0 \(size 5\) is not divisible by 2/,
    );
    // a disposed argument
    const d = ramp([4]);
    d.dispose();
    assert.throws(() => f(d), /use of a disposed array f32\[4\]/);
    // another argument structure on the same closure: one, two, then one argument again
    const h = shardMap((...xs: Array[]) => xs.map((x) => lax.psum(x, "x")), { mesh, inSpecs: P("x"), outSpecs: P() });
    assert.deepEqual(
      h(ramp([4])).map((o) => o.tolist()),
      [[2, 3]],
    );
    assert.deepEqual(
      h(ramp([4]), ramp([2], "float32", 3)).map((o) => o.tolist()),
      [[2, 3], [9]],
    );
    assert.deepEqual(
      h(ramp([4])).map((o) => o.tolist()),
      [[2, 3]],
    );
    assert.throws(() => h(ramp([4]), 2 as unknown as Array), /shardMap/);
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
});
