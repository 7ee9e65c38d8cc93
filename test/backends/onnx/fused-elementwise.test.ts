/** @file Fused elementwise kernels (native and WebAssembly): which jaxprs fuse, agreement with the interpreter (case tables, special values, wide random ranges), native = WebAssembly bit for bit, helper threads, donation and the buffer pool. */
import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { compiledFor, onnxBackend, onnxBackendOptions } from "../../../src/backends/onnx/onnx-backend.js";
import { bufferPoolStats } from "../../../src/backends/onnx/buffer-pool.js";
import { ParallelKernel, fusedThreadOptions } from "../../../src/backends/onnx/fused-workers.js";
import { NativeFusedKernel } from "../../../src/backends/onnx/native-fused.js";
import { nativeFusedApi } from "../../../src/backends/onnx/ort-runtime.js";
import { WasmKernel } from "../../../src/backends/onnx/wasm-kernel.js";
import "../../../src/index.js";
import { ArrayImpl } from "../../../src/core/array-impl.js";
import type { Array } from "../../../src/core/array.js";
import { config } from "../../../src/core/config.js";
import { type Jaxpr, evalJaxpr } from "../../../src/core/jaxpr.js";
import { traceToJaxpr } from "../../../src/core/jaxpr-trace.js";
import type { Params, Primitive } from "../../../src/core/primitive.js";
import { bind, evalTrace, withTrace } from "../../../src/core/trace.js";
import { type FusedSpec, fuseElementwise } from "../../../src/compiler/fuse-elementwise.js";
import * as ops from "../../../src/primitives/ops.js";
import { jit } from "../../../src/transforms/api.js";
import { binaryFloatCases, unaryFloatCases } from "../../compiler/cases-elementwise.js";
import { arr, assertSame } from "../../compiler/harness.js";
import { FUSED_EDGE_VALUES, type FusedProgram, fusedSpec, operationPrograms } from "./fused-kernel-programs.js";

onnxBackendOptions.fuseElementwise = true;

/** Runs the jaxpr of f on the interpreter and through the backend's jit path; returns [actual, expected, fused?]. */
function both(
  f: (...xs: Array[]) => Array[],
  args: ArrayImpl[],
): { actual: ArrayImpl[]; expected: ArrayImpl[]; jaxpr: Jaxpr } {
  const { jaxpr, consts } = traceToJaxpr(
    f,
    args.map((a) => a.aval),
    "fused",
  );
  assert.equal(consts.length, 0);
  const prev = config.backend;
  config.update("backend", "interpreter");
  let expected: ArrayImpl[];
  try {
    expected = withTrace(evalTrace, () => evalJaxpr(jaxpr, [], args)) as ArrayImpl[];
  } finally {
    config.update("backend", prev);
  }
  const actual = onnxBackend.executeJaxpr!(jaxpr, [], args, { name: "fused" });
  return { actual, expected, jaxpr };
}

/** The kernels under test: the native one (when the addon is built) and the WebAssembly one. */
const KINDS: readonly ("native" | "wasm")[] = nativeFusedApi() ? ["native", "wasm"] : ["wasm"];
function withKind<T>(kind: "native" | "wasm", f: () => T): T {
  const prev = onnxBackendOptions.nativeFused;
  onnxBackendOptions.nativeFused = kind === "native";
  try {
    return f();
  } finally {
    onnxBackendOptions.nativeFused = prev;
  }
}

/** Checks f's fused result against the interpreter on every kernel kind. */
function checkFused(f: (...xs: Array[]) => Array[], args: ArrayImpl[], label: string, fused = true): void {
  for (const kind of KINDS) {
    withKind(kind, () => {
      const { actual, expected, jaxpr } = both(f, args);
      const exe = compiledFor(jaxpr);
      assert.equal(exe.isFused, fused, `${label}: fused`);
      if (fused)
        assert.equal(exe.fusedKernel instanceof NativeFusedKernel, kind === "native", `${label}: ${kind} kernel`);
      assert.equal(actual.length, expected.length);
      actual.forEach((a, i) => assertSame(a, expected[i], `${label} (${kind}) out ${i}`));
    });
  }
}

const rand = (n: number, lo: number, hi: number, seed: number): number[] => {
  let s = seed >>> 0;
  return globalThis.Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return lo + ((hi - lo) * s) / 4294967296;
  });
};

test("pure float32 elementwise jaxprs fuse; anything else is left to ONNX Runtime", () => {
  const spec = (f: (...xs: Array[]) => Array[], ...avals: ArrayImpl[]) =>
    fuseElementwise(
      traceToJaxpr(
        f,
        avals.map((a) => a.aval),
        "t",
      ).jaxpr,
    );
  const x = arr("float32", [2, 3], [1, 2, 3, 4, 5, 6]);
  const s = spec((v) => [ops.tanh(ops.add(ops.mul(v, ops.scalarLike(v, 2)), ops.scalarLike(v, 1)))], x);
  assert.ok(s);
  assert.deepEqual(s.shape, [2, 3]);
  assert.equal(s.numInputs, 1);
  // relu through a comparison and a select, scalars broadcast, several outputs
  assert.ok(
    spec((v) => {
      const z = ops.full(v.shape, 0, "float32");
      return [ops.select(ops.le(v, z), z, v), ops.exp(v)];
    }, x),
  );
  assert.ok(
    spec((v, k) => [ops.mul(v, k)], x, arr("float32", [], [3])),
    "a rank-0 input is a scalar operand",
  );
  assert.equal(
    spec(
      (v) => [
        ops.dotGeneral(v, ops.transpose(v, [1, 0]), [
          [[1], [0]],
          [[], []],
        ]),
      ],
      x,
    ),
    null,
    "dot_general",
  );
  assert.equal(
    spec((v) => [ops.gt(v, ops.scalarLike(v, 0))], x),
    null,
    "a bool output",
  );
  assert.equal(
    spec((v) => [ops.add(v, v)], arr("int32", [3], [1, 2, 3])),
    null,
    "int32",
  );
  assert.equal(
    spec((v) => [ops.add(v, v)], arr("float64", [3], [1, 2, 3])),
    null,
    "float64",
  );
  assert.equal(
    spec((v) => [ops.add(v, ops.broadcastInDim(ops.slice(v, [0, 0], [1, 3]), [2, 3], [0, 1]))], x),
    null,
    "a broadcast of a non-scalar",
  );
  assert.equal(
    spec((v) => [ops.exp(v)], arr("float32", [], [1])),
    null,
    "rank-0 only",
  );
  assert.equal(
    spec((v) => [ops.sin(v)], x),
    null,
    "a primitive without a fused form",
  );
});

test("fused unary and binary float32 primitives match the interpreter (case tables: special values, empty arrays)", () => {
  const cases = [...unaryFloatCases(), ...binaryFloatCases()].filter(
    (c) => c.args.every((a) => a.dtype === "float32") && c.args.some((a) => a.ndim > 0),
  );
  let fusedCount = 0;
  const fails: string[] = [];
  for (const c of cases) {
    const f = (...xs: Array[]) => bind(c.prim as Primitive<Params>, xs, c.params ?? {});
    const { jaxpr } = traceToJaxpr(
      f,
      c.args.map((a) => a.aval),
      c.prim.name,
    );
    if (!fuseElementwise(jaxpr)) continue;
    fusedCount++;
    try {
      checkFused(
        f,
        c.args,
        `${c.prim.name}(${c.args.map((a) => a.aval.str()).join(", ")}) ${JSON.stringify(c.params ?? {})}`,
      );
    } catch (e) {
      fails.push((e as Error).message);
    }
  }
  assert.ok(fusedCount >= 60, `only ${fusedCount} fused cases`);
  if (fails.length) assert.fail(fails.slice(0, 20).join("\n"));
});

test("fused exp/log/tanh/logistic/rsqrt agree with the interpreter over wide random ranges and around the edges", () => {
  const n = 300_007; // several native chunks (threads), not a multiple of any block or vector width
  const a = new Float32Array([...rand(n, -120, 120, 11), ...FUSED_EDGE_VALUES]),
    b = new Float32Array([...rand(n, -3, 3, 12), ...[...FUSED_EDGE_VALUES].reverse()]);
  const len = a.length;
  const spec = (values: FusedSpec["values"], outputs: number[], numInputs: number): FusedSpec =>
    fusedSpec(values, outputs, numInputs, len);
  const progs: FusedProgram[] = [
    ...operationPrograms(a, b),
    [
      "tanh(2x+1)",
      spec(
        [
          { kind: "input", index: 0 },
          { kind: "const", value: 2 },
          { kind: "op", op: "mul", args: [0, 1] },
          { kind: "const", value: 1 },
          { kind: "op", op: "add", args: [2, 3] },
          { kind: "op", op: "tanh", args: [4] },
        ],
        [5],
        1,
      ),
      [a],
      [],
    ],
  ];
  for (const [label, sp, ins, scalars] of progs) {
    const nat = NativeFusedKernel.create(sp)!,
      wasm = WasmKernel.create(sp)!;
    const want = sp.outputs.map(() => new Float32Array(len)),
      got = sp.outputs.map(() => new Float32Array(len));
    wasm.run(ins, scalars, want, len);
    nat.run(ins, scalars, got, len);
    for (let j = 0; j < got.length; j++) {
      const gb = new Uint32Array(got[j].buffer),
        wb = new Uint32Array(want[j].buffer);
      for (let i = 0; i < len; i++) {
        // NaN payloads may differ; everything else is bit-identical
        if (gb[i] !== wb[i] && !(Number.isNaN(got[j][i]) && Number.isNaN(want[j][i])))
          assert.fail(
            `${label} out ${j} at ${i}: x=${ins[0][i]} y=${ins[1]?.[i]}: native ${got[j][i]} vs wasm ${want[j][i]}`,
          );
      }
    }
    // small calls (one thread) agree with large ones, and outputs may be the inputs' own storage
    const head = sp.outputs.map(() => new Float32Array(1000));
    nat.run(
      ins.map((x) => x.subarray(0, 1000)),
      scalars,
      head,
      1000,
    );
    head.forEach((h, j) =>
      assert.deepEqual(new Uint32Array(h.buffer), new Uint32Array(got[j].buffer, 0, 1000), `${label}: small call`),
    );
    if (sp.outputs.length === 1) {
      const inPlace = ins[0].slice();
      nat.run([inPlace, ...ins.slice(1)], scalars, [inPlace], len);
      assert.deepEqual(
        new Uint32Array(inPlace.buffer).filter((_, i) => !Number.isNaN(inPlace[i])),
        new Uint32Array(got[0].buffer).filter((_, i) => !Number.isNaN(got[0][i])),
        `${label}: in place`,
      );
    }
  }
  const sp = progs[0][1];
  assert.throws(
    () => NativeFusedKernel.create(sp)!.run([], [], [new Float32Array(len)], len),
    /inputs: expected 1 Float32Arrays/,
  );
  assert.throws(
    () => NativeFusedKernel.create(sp)!.run([a.subarray(0, 10)], [], [new Float32Array(len)], len),
    /input 0 must be a Float32Array of at least/,
  );
});

test("large calls are shared with helper threads and agree bit for bit with one thread", async (t) => {
  if (fusedThreadOptions.helpers === 0) {
    t.skip("one core: no helper threads");
    return;
  }
  const prevMin = fusedThreadOptions.minElements,
    prevNative = onnxBackendOptions.nativeFused;
  fusedThreadOptions.minElements = 1 << 14;
  onnxBackendOptions.nativeFused = false; // the WebAssembly kernel's helper threads
  try {
    const xs = arr("float32", [300_001], rand(300_001, -6, 6, 4));
    const f = jit((v: Array) => ops.tanh(ops.add(ops.mul(v, ops.scalarLike(v, 2)), ops.scalarLike(v, 1))));
    const first = f(xs) as ArrayImpl;
    const exe = compiledFor(f.lower(xs).jaxpr.jaxpr);
    const k = exe.fusedKernel!;
    assert.ok(k instanceof ParallelKernel, "fused, WebAssembly");
    // helpers instantiate the kernel asynchronously; until then calls run on this thread
    for (let i = 0; i < 200 && k.stats.helperChunks === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      (f(xs) as ArrayImpl).dispose();
    }
    assert.ok(k.stats.helperChunks > 0, "a helper evaluated chunks");
    const single = new Float32Array(xs.size);
    k.kernel.run([xs.buffer as Float32Array], [], [single], xs.size);
    const again = f(xs) as ArrayImpl;
    assert.deepEqual(again.buffer, single);
    assert.deepEqual(first.buffer, single);
  } finally {
    fusedThreadOptions.minElements = prevMin;
    onnxBackendOptions.nativeFused = prevNative;
  }
});

test("donated pooled inputs become the output in place; donated arrays are invalid afterwards", () => {
  const n = 50_000;
  const src = arr("float32", [n], rand(n, -1, 1, 5));
  const f = jit((v: Array) => ops.mul(ops.tanh(v), ops.scalarLike(v, 2)), { donateArgnums: 0 });
  // a fused output owns pooled storage: donating it lets the next call write into it
  const x1 = jit((v: Array) => ops.add(v, ops.scalarLike(v, 1)))(src) as ArrayImpl;
  const storage = x1.buffer;
  const expected = Float32Array.from(storage as Float32Array, (v) => Math.fround(Math.fround(Math.tanh(v)) * 2));
  const y = f(x1) as ArrayImpl;
  assert.equal(y.buffer, storage, "the output reuses the donated storage");
  assert.ok(x1.isDisposed);
  assert.throws(() => x1.buffer, /disposed|donated/);
  assert.throws(() => ops.add(x1, x1), /disposed|donated/);
  for (let i = 0; i < n; i += 997) assert.ok(Math.abs((y.buffer[i] as number) - expected[i]) <= 1e-6, `element ${i}`);
  // an array whose storage came from outside the pool is invalidated, never written
  const data = new Float32Array(rand(n, -1, 1, 6));
  const copy = data.slice();
  const ext = new ArrayImpl(src.aval, data);
  const z = f(ext) as ArrayImpl;
  assert.notEqual(z.buffer, data);
  assert.ok(ext.isDisposed);
  assert.deepEqual(data, copy);
});

test("disposed fused outputs hand their storage back to the pool; arrays sharing storage do not", () => {
  const n = 40_000;
  const x = arr("float32", [n], rand(n, -1, 1, 7));
  const f = jit((v: Array) => ops.exp(v));
  const a = f(x) as ArrayImpl;
  const storage = a.buffer;
  const before = bufferPoolStats();
  a.dispose();
  const b = f(x) as ArrayImpl;
  assert.equal(b.buffer, storage, "the next same-size output reuses the storage");
  assert.equal(bufferPoolStats().reused, before.reused + 1);
  // an array viewing the same storage (not its owner) does not recycle it
  const view = new ArrayImpl(b.aval, b.buffer);
  view.dispose();
  const c = f(x) as ArrayImpl;
  assert.notEqual(c.buffer, b.buffer);
  assert.equal(b.elementAt(0), c.elementAt(0));
});

test("fused outputs dropped without dispose are recycled after garbage collection, within the pool's bounds", async () => {
  v8.setFlagsFromString("--expose-gc");
  const collect = vm.runInNewContext("gc") as () => void;
  const n = 100_000;
  const x = arr("float32", [n], rand(n, -1, 1, 8));
  const f = jit((v: Array) => ops.logistic(v));
  const before = bufferPoolStats();
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 20; i++) f(x);
    collect();
    await new Promise((r) => setTimeout(r, 5));
  }
  const after = bufferPoolStats();
  // through the pool's finalization registry, or (storage from the native arena) the arena's free list
  assert.ok(
    after.collected + after.arenaReturned > before.collected + before.arenaReturned,
    "storage of collected outputs came back to the pool",
  );
  assert.ok(after.reused + after.arenaReused > before.reused + before.arenaReused, "and was reused");
  assert.ok(after.watchedBytes <= 128 * 2 ** 20 && after.pooledBytes <= 256 * 2 ** 20);
});
