/**
 * @file jit with shardings' per-call fast path on the device runtime: a repeated call with the same argument
 * structure, avals, shardings and flags runs its last partitioned call again (same values as the first call and as the
 * unsharded jit); a changed shape, dtype, weak type, unspecified argument's sharding, mesh, config flag, a cleared
 * cache or a disposed argument takes the full path with its values and errors, and the fast path keeps no argument.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertCollected } from "../helpers/collected.js";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import {
  type Array,
  clearCaches,
  devicePut,
  devices,
  grad,
  jit,
  makeMesh,
  nn,
  numpy as jnp,
  sharding,
} from "../../src/index.js";
import { scalarToArray } from "../../src/core/trace.js";
import { gspmdRepeatCount } from "../../src/parallel/gspmd.js";
import { NamedShardingImpl } from "../../src/parallel/sharding.js";
import { deviceRuntimeUnavailable, launchCount, synchronize } from "../../src/runtime/index.js";
import { close, ints, vals } from "./gspmd-cases.js";
const { NamedSharding, P } = sharding;

const skip = deviceRuntimeUnavailable() ?? false;

/** f's outputs, and whether the call took the fast path (the repeat counter moved by one) and made one launch. */
function path<T>(f: () => T): { out: T; fast: boolean; launches: number } {
  const r0 = gspmdRepeatCount(),
    l0 = launchCount();
  const out = f();
  synchronize();
  return { out, fast: gspmdRepeatCount() === r0 + 1, launches: launchCount() - l0 };
}
/** The mesh and the mesh axes each dimension of x is split over (a NamedSharding's meaning, not its spelling). */
function splits(x: Array): [string, string[][]] {
  const s = x.sharding;
  assert.ok(s instanceof NamedShardingImpl, "placed with a NamedSharding");
  return [String(s.mesh), x.shape.map((_, d) => [...s.spec.names(d)])];
}
/** The message f throws (fails when it does not). */
function thrown(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  return assert.fail("expected an error");
}
/** f with spmdRuntime "devices" (restored afterwards). */
function onDevices(f: () => void): void {
  config.update("spmdRuntime", "devices");
  try {
    f();
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
}

type Params = Array[];
const loss = (p: Params, x: Array, y: Array): Array => {
  const h = nn.relu(jnp.add(jnp.matmul(x, p[0]), p[1]));
  const lp = nn.logSoftmax(jnp.add(jnp.matmul(h, p[2]), p[3]));
  return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(lp, nn.oneHot(y, 4)), -1)));
};
/** The small MLP problem the training-step tests run: parameters (12-16-4), a batch of 8 and its labels. */
const mlpProblem = (): { params: Params; x: Array; y: Array } => ({
  params: [vals([12, 16], 1), vals([16], 2), vals([16, 4], 3), vals([4], 4)],
  x: vals([8, 12], 5),
  y: ints([8], 4, 6),
});
const sgd = (p: Params, x: Array, y: Array): Params => {
  const g = grad(loss)(p, x, y) as unknown as Params;
  return p.map((w, i) => jnp.subtract(w, jnp.multiply(g[i], 0.5)));
};

test(
  "a repeated jit training step with shardings repeats its partitioned call with the unsharded jit's values",
  { skip },
  () =>
    onDevices(() => {
      const { params, x, y } = mlpProblem();
      const plain = jit(sgd);
      // data parallel (2) and data x tensor parallel (2 x 2, w1 by columns and w2 by rows over "model")
      const layouts: [number[], string[], (string | null)[][]][] = [
        [[2], ["data"], [[], [], [], []]],
        [
          [2, 2],
          ["data", "model"],
          [[null, "model"], ["model"], ["model", null], []],
        ],
      ];
      for (const [shape, names, specs] of layouts) {
        const mesh = makeMesh(shape, names);
        const S = (e: (string | null)[]) => new NamedSharding(mesh, P(...e));
        const pS = specs.map(S);
        const step = jit(sgd, { inShardings: [pS, S(["data"]), S(["data"])], outShardings: pS });
        const xs = devicePut(x, S(["data"])),
          ys = devicePut(y, S(["data"]));
        const p0 = params.map((w, i) => devicePut(w, pS[i]));
        const first = path(() => step(p0, xs, ys));
        assert.equal(first.fast, false, `${mesh}: the first call partitions`);
        assert.equal(first.launches, 1, `${mesh}: the first call is one launch on the devices`);
        const again = path(() => step(p0, xs, ys));
        assert.ok(again.fast, `${mesh}: the same call again takes the fast path`);
        assert.equal(again.launches, 1, `${mesh}: one launch`);
        again.out.forEach((w, i) => {
          assert.deepEqual(w.tolist(), first.out[i].tolist(), `${mesh}: parameter ${i} as the first call's`);
          assert.deepEqual(
            splits(w),
            splits(devicePut(params[i], pS[i])),
            `${mesh}: parameter ${i} placed per outShardings`,
          );
        });
        // a loop of steps on resident parameters, each step against the unsharded jit's step
        let p = first.out,
          q = plain(params, x, y);
        for (let k = 1; k < 5; k++) {
          p.forEach((w, i) => close(`${mesh} step ${k} parameter ${i}`, w, q[i], 1e-5));
          const next = path(() => step(p, xs, ys));
          assert.ok(next.fast, `${mesh}: step ${k + 1} takes the fast path`);
          p = next.out;
          q = plain(q, x, y);
        }
        p.forEach((w, i) => close(`${mesh} last step parameter ${i}`, w, q[i], 1e-5));
      }
    }),
);

test("a repeated jit call with shardings takes the full path for every changed input, with its values", { skip }, () =>
  onDevices(() => {
    const mesh = makeMesh([2], ["x"]);
    const S = (...e: (string | null)[]) => new NamedSharding(mesh, P(...e));
    // x split by rows (given); w unspecified: its own sharding decides how the plan takes it
    const body = (x: Array, w: Array) => jnp.multiply(w, jnp.sum(jnp.sin(x), 0));
    const f = jit(body, { inShardings: [S("x"), null] });
    const ref = jit(body);
    const expect = (x: Array, w: Array, fast: boolean, what: string): Array => {
      const r = path(() => f(x, w));
      assert.equal(r.fast, fast, `${what}: ${fast ? "the fast path" : "the full path"}`);
      assert.equal(r.launches, 1, `${what}: one launch on the devices`);
      const want = ref(x, w);
      assert.equal(r.out.dtype, want.dtype, `${what}: dtype`);
      assert.equal(r.out.weakType, want.weakType, `${what}: weak type`);
      close(what, r.out, want, 1e-5);
      return r.out;
    };
    const w = vals([4], 1);
    expect(vals([4, 4], 2), w, false, "first call");
    expect(vals([4, 4], 3), w, true, "same avals, other values");
    expect(vals([6, 4], 2), w, false, "another shape");
    expect(vals([4, 4], 2), w, false, "the first shape again (the latest call is the fast path's)");
    expect(vals([4, 4], 4), w, true, "repeated");
    expect(ints([4, 4], 7), w, false, "another dtype");
    expect(vals([4, 4], 2), w, false, "float32 again");
    // x's sharding is given by inShardings: how it is placed changes nothing in the plan (the runtime moves it)
    const xv = vals([4, 4], 5);
    expect(devicePut(xv, S("x")), w, true, "x resident as its inSharding");
    expect(devicePut(xv, S()), w, true, "x resident replicated");
    expect(devicePut(xv, S(null, "x")), w, true, "x split by columns");
    // w's own sharding decides its plan: a change takes the full path, the same again the fast one
    expect(xv, devicePut(w, S()), false, "w replicated on the mesh");
    expect(xv, devicePut(w, S()), true, "w replicated again (another NamedSharding object, the same spec)");
    expect(xv, devicePut(vals([4], 1), S("x")), false, "w split over x");
    expect(xv, devicePut(vals([4], 2), S("x")), true, "w split again");
    expect(xv, vals([4], 1), false, "w on the host");
    const other = makeMesh([2], ["x"], { devices: devices().slice(2, 4) });
    expect(xv, devicePut(vals([4], 1), new NamedSharding(other, P("x"))), false, "w on another mesh");
    expect(xv, devicePut(vals([4], 3), new NamedSharding(other, P("x"))), true, "w on that mesh again");
    // weak types: a scalar weight strong, weak, strong (the output's weak type follows it)
    const s32 = jnp.array(2, { dtype: "float32" });
    assert.equal(expect(xv, s32, false, "strong scalar").weakType, false);
    assert.equal(expect(xv, s32, true, "strong scalar again").weakType, false);
    const wk = expect(xv, scalarToArray(2, "float32", true), false, "weak scalar");
    assert.equal(wk.weakType, ref(xv, scalarToArray(2, "float32", true)).weakType);
    expect(xv, s32, false, "strong scalar after the weak one");
    // config flags of the staged program's key, and the caches
    expect(xv, w, false, "back to w");
    expect(xv, w, true, "w again");
    config.update("spmdShardUpdates", true);
    try {
      expect(xv, w, false, "spmdShardUpdates on");
    } finally {
      config.update("spmdShardUpdates", false);
    }
    expect(xv, w, false, "spmdShardUpdates off again");
    f.clearCache();
    expect(xv, w, false, "after clearCache");
    expect(xv, w, true, "then repeated");
    clearCaches();
    expect(xv, w, false, "after clearCaches");
    // another argument structure: a list where the array was
    const g = jit((a: Array | Array[]) => (globalThis.Array.isArray(a) ? jnp.add(a[0], a[1]) : jnp.multiply(a, 2)), {
      inShardings: S("x"),
    });
    const a = vals([4], 1);
    close("array", g(a) as Array, jnp.multiply(a, 2));
    assert.ok(path(() => g(a)).fast, "array again");
    const l = path(() => g([a, a]));
    assert.equal(l.fast, false, "a list: the full path");
    close("list", l.out as Array, jnp.add(a, a));
  }),
);

test("jit with shardings raises the full path's errors after its fast path ran", { skip }, () =>
  onDevices(() => {
    const mesh = makeMesh([2], ["x"]);
    const S = (...e: (string | null)[]) => new NamedSharding(mesh, P(...e));
    const body = (x: Array, w: Array) => jnp.multiply(jnp.sum(x, 0), w);
    const opts = { inShardings: [S("x"), S()], donateArgnums: 1 };
    const f = jit(body, opts);
    // w is donated: every call gets a fresh one (a donated argument is disposed by the call)
    const x = vals([4, 3], 1),
      w = () => vals([3], 2);
    f(x, w());
    assert.ok(path(() => f(x, w())).fast);
    // each error as a fresh jit (which never took the fast path) raises it
    const same = (what: string, pattern: RegExp, call: (h: typeof f) => unknown) => {
      const want = thrown(() => call(jit(body, opts)));
      assert.match(want, pattern, `${what}: the full path's error`);
      assert.equal(
        thrown(() => call(f)),
        want,
        `${what}: the same error after the fast path`,
      );
    };
    same("a shape the mesh does not divide", /jit\(body\)|NamedSharding|divisible/, (h) => h(vals([5, 3]), w()));
    const d = vals([4, 3], 3);
    d.dispose();
    same("a disposed argument", /use of a disposed array f32\[4,3\]/, (h) => h(d, w()));
    const dw = devicePut(vals([3], 4), S());
    dw.dispose();
    same("a disposed donated argument", /use of a disposed array f32\[3\]/, (h) => h(x, dw));
    same("a leaf that is not an array", /jit\(body\): argument leaf 1 is/, (h) => h(x, "w" as unknown as Array));
    // and the fast path still runs afterwards
    close("after the errors", path(() => f(x, w())).out, body(x, w()));
  }),
);

test("the emulation runs jit with shardings on the full path", () => {
  const before = config.spmdRuntime;
  config.update("spmdRuntime", "emulation");
  try {
    const mesh = makeMesh([2], ["x"]);
    const f = jit((x: Array) => jnp.sum(jnp.sin(x), 0), { inShardings: new NamedSharding(mesh, P("x")) });
    const x = vals([4, 3], 1);
    for (let k = 0; k < 3; k++) {
      const r = path(() => f(x));
      assert.equal(r.fast, false, `call ${k}: no fast path on the emulation`);
      close(`call ${k}`, r.out, jnp.sum(jnp.sin(x), 0));
    }
  } finally {
    config.update("spmdRuntime", before);
  }
});

test("the fast path keeps no argument or output alive", { skip }, async () => {
  config.update("spmdRuntime", "devices");
  try {
    const mesh = makeMesh([2], ["x"]);
    const S = new NamedSharding(mesh, P("x"));
    const f = jit((x: Array) => jnp.multiply(x, 2), { inShardings: S, outShardings: S });
    const calls = (): WeakRef<Array>[] => {
      const refs: WeakRef<Array>[] = [];
      for (let k = 0; k < 3; k++) {
        const x = devicePut(vals([64], k), S);
        const out = f(x);
        close(`call ${k}`, out, jnp.multiply(vals([64], k), 2));
        refs.push(new WeakRef(x), new WeakRef(out));
        x.dispose();
        out.dispose();
      }
      return refs;
    };
    let refs = calls();
    assert.ok(path(() => f(vals([64]))).fast, "the record is in place");
    synchronize();
    await assertCollected(refs, "no argument or output is reachable from the jitted function");
    refs = [];
  } finally {
    config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
  }
});

test(
  "donateArgnums with shardings: the donated arguments are disposed after the full path and after each repeat, as without shardings",
  { skip },
  () =>
    onDevices(() => {
      const { params, x, y } = mlpProblem();
      const mesh = makeMesh([2], ["data"]);
      const S = (e: (string | null)[]) => new NamedSharding(mesh, P(...e));
      const pS = params.map(() => S([]));
      const step = jit(sgd, { donateArgnums: 0, inShardings: [pS, S(["data"]), S(["data"])], outShardings: pS });
      const plain = jit(sgd);
      const xs = devicePut(x, S(["data"])),
        ys = devicePut(y, S(["data"]));
      let p = params.map((w, i) => devicePut(w, pS[i]));
      let q = plain(params, x, y);
      const used = devices()[0].memoryStats()!.bytesInUse;
      for (let k = 0; k < 4; k++) {
        const before = p;
        const r = path(() => step(before, xs, ys));
        assert.equal(r.fast, k > 0, `step ${k}: ${k > 0 ? "the fast path" : "the full path"}`);
        for (const w of before)
          assert.match(
            thrown(() => w.tolist()),
            /use of a disposed array .*donated to a jitted call/,
            `step ${k}`,
          );
        // the batch was not donated
        assert.deepEqual(xs.tolist(), x.tolist());
        p = r.out;
        if (k > 0) q = plain(q, x, y);
        p.forEach((w, i) => close(`step ${k} parameter ${i}`, w, q[i], 1e-5));
      }
      // the donated parameters went back to the pool: one set of parameters stays resident, not one per step
      synchronize();
      assert.ok(
        devices()[0].memoryStats()!.bytesInUse <= used,
        `device 0 holds ${devices()[0].memoryStats()!.bytesInUse} bytes after 4 donated steps, ${used} before`,
      );
    }),
);
