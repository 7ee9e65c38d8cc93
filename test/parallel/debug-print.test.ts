/** @file debug.print / debug.callback eagerly and inside jit, vmap, grad, scan and shardMap (emulation and 2 devices): content and order. */
import { test } from "node:test";
import { INITIAL_SPMD_RUNTIME } from "../helpers/spmd-runtime.js";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 2);
import {
  type Array,
  debug,
  grad,
  jit,
  lax,
  makeMesh,
  numpy as jnp,
  shardMap,
  sharding,
  vmap,
} from "../../src/index.js";
import { deviceRuntimeUnavailable, lastLaunchTimeline } from "../../src/runtime/index.js";
import { onnxCacheStats } from "../../src/backends/onnx/onnx-backend.js";
const { P } = sharding;

/** The lines debug.print writes while f runs. */
function captured(f: () => unknown): string[] {
  const lines: string[] = [];
  const prev = debug.setPrintSink((l) => lines.push(l));
  try {
    f();
  } finally {
    debug.setPrintSink(prev);
  }
  return lines;
}

test("debug.print formats like Python's str.format (NumPy's str of arrays), eagerly", () => {
  const lines = captured(() => {
    debug.print("x: {}", jnp.array(2.5));
    debug.print("{0} {1} {0} {{literal}}", jnp.array(3), jnp.array(true));
    debug.print("v={v} m={m} s={s:.3f} n={n}", {
      v: jnp.array([0.5, 1.25]),
      m: jnp.array(
        [
          [1, 2],
          [3, 4],
        ],
        { dtype: "int32" },
      ),
      s: jnp.array(Math.PI),
      n: 7,
    });
    debug.print("{:8.2f}|{:e}|{:d}", 3.14159, 12345.678, 9.7);
  });
  // NumPy: str(np.float32(2.5)), str(np.array([0.5, 1.25], np.float32)) == '[0.5  1.25]', str(int32 2x2) == '[[1 2]\n [3 4]]'
  assert.deepEqual(lines, [
    "x: 2.5",
    "3 True 3 {literal}",
    "v=[0.5  1.25] m=[[1 2]\n [3 4]] s=3.142 n=7",
    "    3.14|1.234568e+04|9",
  ]);
  // each eager print is a new closure: it must not take (and evict) an eager-op cache entry of the ONNX backend
  const x = jnp.array(1.5, { dtype: "float32" });
  const before = onnxCacheStats().eagerEntries;
  const many = captured(() => {
    for (let i = 0; i < 50; i++) debug.print("{}", x);
  });
  assert.equal(many.length, 50);
  if (config.backend === "onnx") assert.equal(onnxCacheStats().eagerEntries, before);
});

test("debug.print under jit runs on every call, in program order, between the computations around it", () => {
  const order: string[] = [];
  const f = jit((x: Array) => {
    debug.print("x: {}", x);
    const y = jnp.sin(x);
    debug.callback((v: Array) => order.push(`cb ${(v as Array).item()}`), y);
    debug.print("y: {}", y);
    return jnp.multiply(y, 2);
  });
  const a = captured(() => {
    order.push(String(f(jnp.array(2.0, { dtype: "float32" })).item()));
  });
  const b = captured(() => f(jnp.array(0.5, { dtype: "float32" })));
  // NumPy: str(np.sin(np.float32(2))) == '0.9092974', str(np.sin(np.float32(0.5))) == '0.47942555'
  assert.deepEqual(a, ["x: 2.0", "y: 0.9092974"]);
  assert.deepEqual(b, ["x: 0.5", "y: 0.47942555"], "a cache hit prints again, with the new values");
  const s2 = Math.fround(Math.sin(2));
  assert.deepEqual(
    order,
    [`cb ${s2}`, String(Math.fround(2 * s2)), `cb ${Math.fround(Math.sin(0.5))}`],
    "the callback ran before the call returned",
  );
});

test("under vmap debug.print runs once per batch element, each print over the whole batch before the next (as JAX)", () => {
  const xs = jnp.arange(3, { dtype: "float32" });
  const f = (x: Array) => {
    debug.print("x: {}", x);
    const y = jnp.multiply(x, 10);
    debug.print("y: {}", y);
    return y;
  };
  const want = ["x: 0.0", "x: 1.0", "x: 2.0", "y: 0.0", "y: 10.0", "y: 20.0"];
  assert.deepEqual(
    captured(() => vmap(f)(xs)),
    want,
  );
  assert.deepEqual(
    captured(() => jit(vmap(f))(xs)),
    want,
  );
  // an unbatched value under an unnamed vmap prints once; batch indices reach callbacks
  assert.deepEqual(
    captured(() =>
      vmap((x: Array) => {
        debug.print("c: {}", jnp.array(1));
        return x;
      })(xs),
    ),
    ["c: 1"],
  );
  const seen: number[][] = [];
  vmap(
    vmap((x: Array) => {
      debug.callback(() => seen.push([...debug.callbackContext()!.batchIndices]));
      debug.callback((v: Array) => seen.push([(v as Array).item() as number]), x);
      return x;
    }),
  )(jnp.reshape(jnp.arange(4, { dtype: "float32" }), [2, 2]));
  assert.deepEqual(seen.filter((s) => s.length === 2).length, 0, "a callback with no values is not batched");
  assert.deepEqual(
    seen
      .filter((s) => s.length === 1)
      .map((s) => s[0])
      .sort(),
    [0, 1, 2, 3],
  );
});

test("under grad debug.print shows the primal values once (forward pass); the gradient is unchanged", () => {
  const f = (x: Array) => {
    debug.print("x: {}", x);
    const y = jnp.multiply(x, x);
    debug.print("y: {}", y);
    return y;
  };
  let g: Array | null = null;
  assert.deepEqual(
    captured(() => {
      g = grad(f)(jnp.array(3.0, { dtype: "float32" }));
    }),
    ["x: 3.0", "y: 9.0"],
  );
  assert.equal(g!.item(), 6);
  assert.deepEqual(
    captured(() => {
      g = jit(grad(f))(jnp.array(1.5, { dtype: "float32" }));
    }),
    ["x: 1.5", "y: 2.25"],
  );
  assert.equal(g!.item(), 3);
});

test("inside lax.scan debug.print runs once per iteration in order, eagerly and under jit", () => {
  const run = (xs: Array) =>
    lax.scan(
      (c: Array, x: Array) => {
        debug.print("c={} x={}", c, x);
        return [jnp.add(c, x), c];
      },
      jnp.array(0, { dtype: "float32" }),
      xs,
    )[0];
  const xs = jnp.array([1, 2, 3], { dtype: "float32" });
  const want = ["c=0.0 x=1.0", "c=1.0 x=2.0", "c=3.0 x=3.0"];
  assert.deepEqual(
    captured(() => run(xs)),
    want,
  );
  assert.deepEqual(
    captured(() => assert.equal(jit(run)(xs).item(), 6)),
    want,
  );
});

const devicesSkip = deviceRuntimeUnavailable() ?? false;
for (const runtime of ["emulation", "devices"] as const) {
  test(
    `inside shardMap on 2 devices (${runtime}): each device prints its block in program order, with its axis index`,
    { skip: runtime === "devices" ? devicesSkip : false },
    () => {
      const mesh = makeMesh([2], ["i"]);
      const ctxs: string[] = [];
      const body = (b: Array) => {
        debug.print("dev {axis_index[i]} in: {}", b);
        const s = lax.psum(b, "i");
        debug.callback((v: Array) => {
          const c = debug.callbackContext()!;
          ctxs.push(`${c.axisIndices.i}:${c.device ?? "-"}:${(v as Array).tolist()}`);
        }, s);
        debug.print("dev {axis_index[i]} sum: {}", s);
        return s;
      };
      const f = shardMap(body, { mesh, inSpecs: P("i"), outSpecs: P() });
      const x = jnp.arange(4, { dtype: "float32" });
      config.update("spmdRuntime", runtime);
      try {
        for (const g of [f, jit(f)]) {
          ctxs.length = 0;
          const before = lastLaunchTimeline();
          let out: Array | null = null;
          const lines = captured(() => {
            out = g(x);
          });
          assert.deepEqual((out as unknown as Array).tolist(), [2, 4]);
          // per device: in, then sum (program order); devices in index order at each print
          assert.deepEqual(lines, [
            "dev 0 in: [0. 1.]",
            "dev 1 in: [2. 3.]",
            "dev 0 sum: [2. 4.]",
            "dev 1 sum: [2. 4.]",
          ]);
          const dev = (i: number) => (runtime === "devices" ? String(mesh.deviceIds[i]) : "-");
          assert.deepEqual(ctxs, [`0:${dev(0)}:2,4`, `1:${dev(1)}:2,4`]);
          if (runtime === "devices")
            assert.notEqual(lastLaunchTimeline(), before, "ran on the device runtime (no fallback)");
        }
      } finally {
        config.update("spmdRuntime", INITIAL_SPMD_RUNTIME);
      }
    },
  );
}

test("debug.callback passes pytrees through with concrete arrays; bad formats fail where print is called", () => {
  let got: unknown = null;
  jit((x: Array) => {
    debug.callback(
      (t: { a: Array; b: [Array, number] }) => {
        got = { a: t.a.tolist(), b: [t.b[0].tolist(), t.b[1]] };
      },
      { a: x, b: [jnp.add(x, 1), 5] },
    );
    return x;
  })(jnp.array([1, 2], { dtype: "float32" }));
  assert.deepEqual(got, { a: [1, 2], b: [[2, 3], 5] });
  assert.throws(
    () => debug.print("{} {}", jnp.array(1)),
    /debug\.print: the format needs positional value 1 but 1 value\(s\) were given/,
  );
  assert.throws(() => debug.print("{nope}", jnp.array(1)), /debug\.print: the format names \{nope\}/);
  assert.throws(() => debug.print("a } b"), /debug\.print: single '}' encountered/);
  assert.throws(() => debug.print("{} {0}", 1, 2), /cannot switch from automatic field numbering/);
  assert.throws(
    () =>
      jit((x: Array) => {
        debug.print("{:.2f}", x);
        return x;
      })(jnp.ones([2])),
    /format spec ':.2f' applies to scalars only/,
  );
  assert.throws(() => debug.callback(3 as unknown as () => void), /debug\.callback: expected a function/);
});

test("inside cond and whileLoop under jit, only the branch taken prints, and each loop iteration prints", () => {
  const f = jit((x: Array) =>
    lax.cond(
      jnp.greater(x, 0),
      (v: Array) => {
        debug.print("pos {}", v);
        return v;
      },
      (v: Array) => {
        debug.print("neg {}", v);
        return jnp.negative(v);
      },
      x,
    ),
  );
  assert.deepEqual(
    captured(() => {
      f(jnp.array(-1.5, { dtype: "float32" }));
      f(jnp.array(3.5, { dtype: "float32" }));
    }),
    ["neg -1.5", "pos 3.5"],
  );
  const w = jit((x: Array) =>
    lax.whileLoop(
      (c: Array) => jnp.less(c, 3),
      (c: Array) => {
        debug.print("it {}", c);
        return jnp.add(c, 1);
      },
      x,
    ),
  );
  assert.deepEqual(
    captured(() => assert.equal(w(jnp.array(0)).item(), 3)),
    ["it 0", "it 1", "it 2"],
  );
});
