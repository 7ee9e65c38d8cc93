/** @file The "onnx" backend: registry coverage, backend switching, eager caching, jit programs (one session, fallback splitting, control flow) and the ONNX summary. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { interpreterBackend } from "../../../src/backends/interpreter/interpreter.js";
import {
  clearOnnxCaches,
  compiledFor,
  loweringSummary,
  onnxBackend,
  onnxBackendOptions,
  onnxCacheStats,
  sessionOptionsFor,
} from "../../../src/backends/onnx/onnx-backend.js";
import { availableParallelism } from "node:os";
import "../../../src/index.js";
import { ArrayImpl } from "../../../src/core/array-impl.js";
import type { Array } from "../../../src/core/array.js";
import { ShapedArray } from "../../../src/core/aval.js";
import { config } from "../../../src/core/config.js";
import { traceToJaxpr } from "../../../src/core/jaxpr-trace.js";
import { Primitive, allPrimitives } from "../../../src/core/primitive.js";
import { evalTrace, getBackend, withTrace } from "../../../src/core/trace.js";
import { lowerFun } from "../../../src/compiler/context.js";
import { summarizeOnnx } from "../../../src/compiler/summary.js";
import * as ops from "../../../src/primitives/ops.js";
import "../../../src/primitives/sort.js";
import "../../../src/primitives/random.js";
import { cond } from "../../../src/transforms/control-flow.js";
import { scan, whileLoop } from "../../../src/transforms/scan.js";
import { jit } from "../../../src/transforms/api.js";
import { stopGradientP } from "../../../src/transforms/stop-gradient.js";
import { customJvp, customVjp } from "../../../src/transforms/custom-derivatives.js";
import { checkpoint, checkpointName } from "../../../src/transforms/checkpoint.js";
import { assertSame, arr, checkProgram } from "../../compiler/harness.js";
import { binaryFloatCases, binaryIntCases, unaryFloatCases, unaryIntCases } from "../../compiler/cases-elementwise.js";
import { STRUCTURAL_GROUPS } from "../../compiler/cases-structural.js";

void stopGradientP;

/** Primitives exercised through whole programs below rather than the per-primitive tables. */
const PROGRAM_TESTED = new Set([
  "pjit",
  "cond",
  "while",
  "scan",
  "stop_gradient",
  "custom_jvp_call",
  "custom_vjp_call",
  "checkpoint",
  "name",
  // an identity outside a partitioned jit: test/parallel/gspmd.test.ts compiles it in a plain jit against eager values
  "sharding_constraint",
]);

test("every registered primitive has an ONNX lowering or a written reason for falling back", () => {
  const missing = allPrimitives().filter(
    (p) => !p.rules.lower && p.opts.callJaxprParam === undefined && !p.rules.missing?.lower,
  );
  assert.deepEqual(
    missing.map((p) => p.name),
    [],
    "primitives with neither a lower rule nor missing.lower",
  );
});

test("every registered primitive is covered by the backend-agreement tables", () => {
  const cases = [
    unaryFloatCases(),
    unaryIntCases(),
    binaryFloatCases(),
    binaryIntCases(),
    ...Object.values(STRUCTURAL_GROUPS).map((g) => g()),
  ].flat();
  const covered = new Set(cases.map((c) => c.prim.name));
  // a primitive without a lowering (and a written reason) runs its reference impl on both backends
  const fallsBack = (p: Primitive) => !p.rules.lower && p.opts.callJaxprParam === undefined && !!p.rules.missing?.lower;
  // collectives lower only inside a device program (per mesh): test/parallel/shard-map-devices.test.ts checks each against the emulation
  const spmdTested = (p: Primitive) => p.collective;
  const untested = allPrimitives()
    .filter((p) => !covered.has(p.name) && !PROGRAM_TESTED.has(p.name) && !fallsBack(p) && !spmdTested(p))
    .map((p) => p.name);
  assert.deepEqual(untested, [], "primitives without a case");
});

test("config.update('backend') switches between the interpreter and onnx", () => {
  const prev = config.backend;
  try {
    config.update("backend", "interpreter");
    assert.equal(getBackend().name, "interpreter");
    config.update("backend", "onnx");
    assert.equal(getBackend().name, "onnx");
    const x = arr("float32", [3], [1, 2, 3]);
    assert.deepEqual(ops.add(x, x).tolist(), [2, 4, 6]);
  } finally {
    config.update("backend", prev);
  }
});

test("eager ops reuse cached sessions (elementwise sessions serve every shape) and wrap ORT's buffers", () => {
  const x = arr("float32", [4096], [1, 2, 3]);
  const add = getPrim("add");
  const a = onnxBackend.execute(add, [x, x], {})[0];
  const before = onnxCacheStats().sessionsCreated;
  for (let i = 0; i < 200; i++) onnxBackend.execute(add, [x, x], {});
  for (const n of [5, 7, 300]) onnxBackend.execute(add, [arr("float32", [n], [1]), arr("float32", [n], [2])], {});
  assert.equal(onnxCacheStats().sessionsCreated, before, "no new session for new shapes of the same rank");
  assert.equal(a.size, 4096);
  assert.equal(a.elementAt(2), 6);
  assert.equal(onnxCacheStats().sessionsCreated, before, "200 repeated calls reuse the one session");
});

function getPrim(name: string): Primitive {
  return allPrimitives().find((p) => p.name === name)!;
}

test("thread counts follow the work: small steps one thread, big eager ops and jitted programs every core (eager ones without spinning), config.intraOpThreads wins", () => {
  const big = onnxBackendOptions.parallelWork,
    cores = availableParallelism();
  const small = { work: 100, nodeCount: 1 },
    large = { work: 4 * big, nodeCount: 1 };
  assert.equal(sessionOptionsFor(small, false).intraOpNumThreads, 1);
  assert.equal(sessionOptionsFor(small, true).intraOpNumThreads, 1);
  const eager = sessionOptionsFor(large, false),
    jitted = sessionOptionsFor(large, true);
  assert.equal(eager.intraOpNumThreads, cores);
  assert.equal(jitted.intraOpNumThreads, cores);
  if (cores > 1)
    assert.equal(eager.configEntries?.["session.intra_op.allow_spinning"], "0", "eager workers sleep between calls");
  assert.equal(
    jitted.configEntries?.["session.intra_op.allow_spinning"],
    undefined,
    "jitted programs keep ORT's spinning",
  );
  const prev = config.intraOpThreads;
  config.update("intraOpThreads", 3);
  try {
    assert.equal(sessionOptionsFor(small, false).intraOpNumThreads, 3);
    assert.equal(sessionOptionsFor(large, true).intraOpNumThreads, 3);
  } finally {
    config.update("intraOpThreads", prev);
  }
});

test("jit: a whole program compiles to one ONNX session and matches the interpreter", () => {
  const w = arr("float32", [4, 3], [0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 0.8, -0.9, 1.0, 1.1, -1.2]);
  const x = arr("float32", [2, 4], [1, 2, 3, 4, -1, 0.5, 2, -3]);
  const j = checkProgram(
    (xs) => {
      const h = ops.tanh(
        ops.dotGeneral(xs, w, [
          [[1], [0]],
          [[], []],
        ]),
      );
      const s = ops.reduceSum(ops.mul(h, h), [1]);
      return [h, s, xs, s];
    },
    [x],
    "mlp",
  );
  const exe = compiledFor(j);
  assert.equal(exe.program.steps.length, 1);
  assert.equal(exe.program.steps[0].kind, "onnx");
  const text = summarizeOnnx(exe.program);
  assert.match(text, /Gemm/);
  assert.match(text, /Tanh/);
});

test("jit: closed-over constants, literal outputs and lower().asText()'s ONNX summary", () => {
  const w = arr("float32", [3], [0.5, -1, 2]);
  const j = checkProgram(
    (x) => [ops.mul(ops.add(x, w), 3), ops.full([], 7, "int32")],
    [arr("float32", [3], [1, 2, 3])],
    "consts",
  );
  const text = loweringSummary(j, "consts");
  assert.match(text, /ONNX model, IR \d+, opset ai\.onnx 26/);
  // with the native runner the float32 add and multiply are one fused node
  if (/jaxts\.Fused/.test(text))
    assert.match(text, /jaxts\.Fused\[program=\[[-\d,]+\] num_inputs=2 num_scalars=0\]\(in0, in1\)/);
  else {
    assert.match(text, /Add\(/);
    assert.match(text, /Mul\(/);
  }
});

test("gather/scatter with no indexed axes address the whole operand (the interpreter disagrees; checked by hand)", () => {
  const x = arr("float32", [2, 2], [1, 2, 3, 4]);
  const g = onnxBackend.execute(getPrim("gather"), [x, arr("int32", [3, 0], [])], {
    axes: [],
    mode: "clip",
    fill_value: null,
  })[0];
  assert.deepEqual(g.tolist(), [
    [
      [1, 2],
      [3, 4],
    ],
    [
      [1, 2],
      [3, 4],
    ],
    [
      [1, 2],
      [3, 4],
    ],
  ]);
  const u = arr("float32", [2, 2, 2], [1, 1, 1, 1, 10, 20, 30, 40]);
  const s = onnxBackend.execute(getPrim("scatter"), [x, arr("int32", [2, 0], []), u], {
    axes: [],
    reduce: "add",
    mode: "clip",
  })[0];
  assert.deepEqual(s.tolist(), [
    [12, 23],
    [34, 45],
  ]);
});

test("jit: programs with no equations, literals and bfloat16 / int64 / bool boundaries", () => {
  checkProgram((x) => [x, x], [arr("float32", [2], [1, 2])], "identity");
  checkProgram((x) => [ops.add(x, 1.5), ops.convert(x, "bfloat16")], [arr("bfloat16", [3], [1, 2.5, -3])], "bf16");
  config.update("enableX64", true);
  try {
    checkProgram(
      (x, m) => [ops.select(m, ops.mul(x, x), ops.neg(x))],
      [arr("int64", [3], [2n ** 40n, -3n, 7n]), arr("bool", [3], [true, false, true])],
      "i64",
    );
  } finally {
    config.update("enableX64", false);
  }
});

test("jit: an unlowerable primitive splits the program and runs on the interpreter", () => {
  // a host-only primitive (squares float32 values on the interpreter), defined here so no library primitive is needed
  const hostOnly = new Primitive("test_host_only", {
    abstractEval: ([x]) => [x],
    impl: ([x]) => [
      new ArrayImpl(
        x.aval,
        Float32Array.from(x.dataSync() as Float32Array, (v) => v * v),
      ),
    ],
    missing: { lower: "test primitive without a lowering" },
  });
  const a = arr("float32", [2, 2], [4, 1, 1, 3]);
  const j = checkProgram(
    (x) => {
      const s = ops.add(ops.mul(x, 2), ops.transpose(x, [1, 0]));
      const [l] = ops.bindN(hostOnly as Primitive, [s]);
      return [ops.exp(ops.mul(l, 0.5))];
    },
    [a],
    "split",
  );
  const p = compiledFor(j).program;
  assert.deepEqual(
    p.steps.map((s) => s.kind),
    ["onnx", "host", "onnx"],
  );
  assert.match(p.notes[0], /test_host_only runs on the interpreter/);
});

test("jit: a lowering rule that throws falls back to the interpreter unless strict, and says so once", async () => {
  const bad = new Primitive("test_bad_lowering", {
    abstractEval: ([x]) => [x],
    impl: ([x]) => [x],
    lower: () => {
      throw new Error("boom");
    },
  });
  const x = arr("float32", [3], [1, 2, 3]);
  const warnings: string[] = [];
  const onWarning = (w: Error & { code?: string }) => {
    if (w.code === "JAXTS_FALLBACK") warnings.push(w.message);
  };
  process.on("warning", onWarning);
  onnxBackendOptions.strict = false;
  try {
    const y = onnxBackend.execute(bad as Primitive, [x], {});
    assert.deepEqual(y[0].tolist(), [1, 2, 3]);
    const { jaxpr } = traceToJaxpr((v) => [ops.exp(ops.bindN(bad as Primitive, [ops.add(v, 1)])[0])], [x.aval], "bad");
    const exe = compiledFor(jaxpr);
    assert.match(exe.program.notes.join("\n"), /test_bad_lowering runs on the interpreter: .*boom/);
    assertSame(exe.run([x])[0], arr("float32", [3], [Math.exp(2), Math.exp(3), Math.exp(4)]), "fallback");
    onnxBackend.execute(bad as Primitive, [x], {}); // the same fallback again: no second warning
    await new Promise((r) => setImmediate(r));
    assert.equal(warnings.length, 2, warnings.join("\n"));
    assert.match(
      warnings[0],
      /^test_bad_lowering on f32\[3\]: test_bad_lowering: no ONNX lowering \(its lowering failed: boom\); it runs on the reference interpreter instead$/,
    );
    assert.match(
      warnings[1],
      /^jit\(jit\): test_bad_lowering: no ONNX lowering \(its lowering failed: boom\); it runs on the reference interpreter instead$/,
    );
  } finally {
    onnxBackendOptions.strict = true;
    process.off("warning", onWarning);
  }
});

test("lowerFun lowers a primitive by tracing a function of ops (as JAX's mlir.lower_fun)", () => {
  const p = new Primitive("test_lower_fun", {
    abstractEval: ([x]) => [x],
    impl: ([x]) => [withTrace(evalTrace, () => ops.sin(ops.mul(x, 2))) as ArrayImpl],
    lower: (ctx, ins, _params, avals) => lowerFun(ctx, (x) => [ops.sin(ops.mul(x, 2))], avals, ins),
  });
  const x = arr("float32", [3], [0.1, 0.2, 0.3]);
  assertSame(
    onnxBackend.execute(p as Primitive, [x], {})[0],
    arr("float32", [3], [Math.sin(0.2), Math.sin(0.4), Math.sin(0.6)]),
    "lowerFun",
  );
});

test("jit: cond, while_loop and scan lower to If / Loop", () => {
  const x = arr("float32", [3], [1, 2, 3]);
  const j1 = checkProgram(
    (v, p) => [
      cond(
        p,
        (a: Array) => ops.mul(a, 2),
        (a: Array) => ops.sin(a),
        v,
      ) as Array,
    ],
    [x, arr("bool", [], [true])],
    "cond",
  );
  assert.match(summarizeOnnx(compiledFor(j1).program), /If/);
  checkProgram(
    (v, p) => [
      cond(
        p,
        (a: Array) => ops.mul(a, 2),
        (a: Array) => ops.sin(a),
        v,
      ) as Array,
    ],
    [x, arr("bool", [], [false])],
    "cond2",
  );
  const j2 = checkProgram(
    (v) => [
      whileLoop(
        (c: Array[]) => ops.lt(c[0], 10),
        (c: Array[]) => [ops.add(c[0], 1), ops.mul(c[1], 1.5)],
        [ops.full([], 0, "int32"), v],
      )[1] as Array,
    ],
    [x],
    "while",
  );
  assert.match(summarizeOnnx(compiledFor(j2).program), /Loop/);
  for (const reverse of [false, true]) {
    checkProgram(
      (v, xs) => {
        const [c, ys] = scan(
          (carry: Array, xi: Array) => [ops.add(carry, xi), ops.mul(carry, xi)] as [Array, Array],
          v,
          xs,
          { reverse },
        );
        return [c, ys];
      },
      [x, arr("float32", [4, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])],
      `scan${reverse ? "_rev" : ""}`,
    );
  }
});

test("jit: custom_jvp / custom_vjp calls, checkpoint, checkpoint names and stop_gradient are inlined", () => {
  const cj = customJvp((a: Array) => ops.sin(a));
  cj.defjvp(([a], [t]) => [ops.sin(a), ops.mul(ops.cos(a), t)] as [Array, Array]);
  const cv = customVjp((a: Array) => ops.exp(a));
  cv.defvjp(
    (a: Array) => [ops.exp(a), ops.exp(a)] as [Array, Array],
    (r: Array, ct: Array) => [ops.mul(r, ct)],
  );
  const ck = checkpoint((a: Array) => ops.tanh(checkpointName(ops.mul(a, a), "sq")));
  const j = checkProgram(
    (x) => [cj(x), cv(x), ck(x), ops.bindN(stopGradientP, [x])[0]],
    [arr("float32", [3], [0.1, 0.5, 2])],
    "custom",
  );
  const names = compiledFor(j).program.steps.map((s) => s.kind);
  assert.deepEqual(names, ["onnx"]);
});

test("jit() end to end on the onnx backend: cached executable, nested jit (pjit inlined), weak types", () => {
  const prev = config.backend;
  config.update("backend", "onnx");
  try {
    const inner = jit((a: Array) => ops.mul(a, a));
    const f = jit((a: Array, b: Array) => ops.add(inner(a) as Array, ops.sin(b)));
    const x = arr("float32", [3], [1, 2, 3]),
      y = arr("float32", [3], [0, 1, 2]);
    const r = f(x, y) as ArrayImpl;
    const want = [1 + Math.sin(0), 4 + Math.sin(1), 9 + Math.sin(2)];
    r.tolist();
    assertSame(r, arr("float32", [3], want), "jit");
    const r2 = f(y, x) as ArrayImpl;
    assertSame(r2, arr("float32", [3], [0 + Math.sin(1), 1 + Math.sin(2), 4 + Math.sin(3)]), "jit again");
    assert.equal(f.cacheSize(), 1);
  } finally {
    config.update("backend", prev);
  }
});

test("eager results agree with the interpreter for a short chain of ops on both backends", () => {
  const x = arr("float32", [5], [0.5, -1, 2, 3, -4]);
  const run = () => ops.reduceMax(ops.exp(ops.mul(ops.sin(x), 2)), [0]) as ArrayImpl;
  const prev = config.backend;
  config.update("backend", "onnx");
  const a = run();
  config.update("backend", "interpreter");
  const b = run();
  config.update("backend", prev);
  assertSame(a, b, "chain");
  void interpreterBackend;
  clearOnnxCaches();
  assert.ok(new ShapedArray([1], "float32"));
});
