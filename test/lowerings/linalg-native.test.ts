/** @file The native linalg custom ops (jaxts.Lu, TriangularSolve, Cholesky, Qr, Eigh, Svd; src/lowerings/linalg-native.ts): chosen in native sessions, bit-equal to the interpreter, Loop lowerings elsewhere. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import "../../src/index.js";
import { compiledFor, onnxBackend } from "../../src/backends/onnx/onnx-backend.js";
import { nativeLinalgOps } from "../../src/backends/onnx/ort-runtime.js";
import { type GraphProto, decodeModel } from "../../src/backends/onnx/onnx-proto.js";
import { type HostStep, type OnnxStep, compileJaxpr } from "../../src/compiler/compile.js";
import type { ArrayImpl } from "../../src/core/array-impl.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import type { DType } from "../../src/core/dtype.js";
import type { Jaxpr } from "../../src/core/jaxpr.js";
import { traceToJaxpr } from "../../src/core/jaxpr-trace.js";
import { linalgNativeOptions } from "../../src/lowerings/linalg-native.js";
import * as ops from "../../src/primitives/ops.js";
import * as P from "../../src/primitives/linalg.js";
import { foriLoop } from "../../src/transforms/scan.js";
import { arr } from "../compiler/harness.js";
import { seededUniform, sizeOf } from "../helpers/seeded-random.js";
import { interpreterOutputs } from "../helpers/interpreter-reference.js";

const skip = nativeLinalgOps() ? false : "the native runner's linalg ops are unavailable (no addon)";
// these tests are about the custom ops, whatever JAXTS_NATIVE_LINALG says (the Loop lowerings have their own tests)
linalgNativeOptions.enabled = true;

const rand = seededUniform,
  size = sizeOf;
const DTYPES: DType[] = ["float32", "float64"];

/** "domain.opType" of every node of a graph and of its subgraphs (Loop bodies), "" the ai.onnx domain. */
function opsOf(g: GraphProto | undefined, out: Set<string> = new Set()): Set<string> {
  for (const n of g?.node ?? []) {
    out.add(`${n.domain ?? ""}.${n.opType ?? ""}`);
    for (const a of n.attribute ?? []) opsOf(a.g, out);
  }
  return out;
}
/** The ops of a program's ONNX steps (it must be ONNX only). */
function programOps(steps: readonly (OnnxStep | HostStep)[]): Set<string> {
  const out = new Set<string>();
  for (const s of steps) {
    assert.equal(s.kind, "onnx", "every step is ONNX");
    if (s.kind === "onnx") opsOf(decodeModel(s.model).graph, out);
  }
  return out;
}
const compiledOps = (jaxpr: Jaxpr): Set<string> => programOps(compiledFor(jaxpr).program.steps);

/**
 * Traces f, checks which lowering its one ONNX graph holds (the custom op `op` of domain jaxts, or a Loop without
 * it), runs it on ONNX and on the interpreter, and asserts every output is bit-equal (NaN where NaN).
 */
function exact(f: (...xs: Array[]) => Array[], args: ArrayImpl[], label: string, op: string, native = true): void {
  const { jaxpr, consts } = traceToJaxpr(
    f,
    args.map((a) => a.aval),
    label,
  );
  const got0 = compiledOps(jaxpr as Jaxpr);
  if (native) {
    assert.ok(got0.has(`jaxts.${op}`), `${label}: the graph holds jaxts.${op}: ${[...got0]}`);
  } else {
    assert.ok(
      !got0.has(`jaxts.${op}`) && got0.has(".Loop"),
      `${label}: the Loop lowering, no jaxts.${op}: ${[...got0]}`,
    );
  }
  const want = interpreterOutputs(jaxpr, consts as ArrayImpl[], args);
  const got = onnxBackend.executeJaxpr!(jaxpr, consts as ArrayImpl[], args, { name: label });
  assert.equal(got.length, want.length);
  got.forEach((g, o) => {
    assert.equal(g.dtype, want[o].dtype, `${label} out ${o}: dtype`);
    assert.deepEqual([...g.shape], [...want[o].shape], `${label} out ${o}: shape`);
    const gv = [...g.dataSync()].map(Number),
      wv = [...want[o].dataSync()].map(Number);
    const bad = gv.findIndex((v, i) => !(Object.is(v, wv[i]) || (Number.isNaN(v) && Number.isNaN(wv[i]))));
    assert.equal(bad, -1, `${label} out ${o}: element ${bad} is ${gv[bad]}, the interpreter has ${wv[bad]}`);
  });
}

/** [batch, n, n] values with a dominant diagonal shifted by `shift` (positive definite for cholesky at shift n). */
function matrices(shape: readonly number[], seed: number, shift: number): number[] {
  const n = shape[shape.length - 1],
    v = rand(size(shape), seed);
  for (let i = 0; i < v.length; i++) if (Math.floor(i / n) % n === i % n) v[i] += shift;
  return v;
}

test(
  "cholesky: jaxts.Cholesky, bit-equal to the interpreter (float32/64, batches, n up to 70; non-PD and NaN matrices)",
  { skip },
  () => {
    for (const dt of DTYPES) {
      for (const n of [1, 5, 33, 70]) {
        const sh = [2, 3, n, n];
        // symmetric positive definite: the lower triangle of (r + r^T)/2 + n I is read
        const a = matrices(sh, 7 * n + 1, n);
        exact((x) => [P.cholesky(x)], [arr(dt, sh, a)], `cholesky ${dt} n=${n}`, "Cholesky");
      }
      // not positive definite (a negative pivot at step 1), a NaN entry, a zero matrix, an Inf diagonal
      const special = [4, 0, 2, 1, 1, 0, 0, 0, NaN, 1, 0, 2, 0, 0, 0, 0, Infinity, 0, 0, 0, 1];
      const sp = [...special, 0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 3, 0, 0, 0, 4, 0, 1, 5, 2, 1, 9];
      exact((x) => [P.cholesky(x)], [arr(dt, [6, 2, 2], sp.slice(0, 24))], `cholesky special 2x2 ${dt}`, "Cholesky");
      exact((x) => [P.cholesky(x)], [arr(dt, [4, 3, 3], sp.slice(0, 36))], `cholesky special 3x3 ${dt}`, "Cholesky");
    }
  },
);

test(
  "triangular_solve: jaxts.TriangularSolve, bit-equal for every (left_side, lower, transpose_a, unit_diagonal), wide and tall b",
  { skip },
  () => {
    for (const dt of DTYPES) {
      // [k, other, batch]: one 110 x 110 solve with 90 right-hand sides is split into column bands over the threads
      for (const [k, other, nb] of [
        [4, 3, 2],
        [70, 130, 2],
        [33, 1, 2],
        [110, 90, 1],
      ]) {
        const a = arr(dt, [nb, k, k], matrices([nb, k, k], 3 * k, 2));
        for (const left of [true, false]) {
          const b = arr(dt, left ? [nb, k, other] : [nb, other, k], rand(nb * k * other, 5 * k + other));
          for (const lower of [true, false])
            for (const transposeA of [true, false])
              for (const unitDiagonal of [true, false]) {
                const o = { leftSide: left, lower, transposeA, unitDiagonal };
                exact(
                  (x, y) => [P.triangularSolve(x, y, o)],
                  [a, b],
                  `triangular_solve ${dt} k=${k} ${JSON.stringify(o)}`,
                  "TriangularSolve",
                );
              }
        }
      }
      // a zero on the diagonal gives the reference's Inf/NaN; unit_diagonal never reads it
      const sing = arr(dt, [1, 3, 3], [1, 0, 0, 2, 0, 0, 3, 4, 5]);
      const b = arr(dt, [1, 3, 2], [1, 2, 3, 4, 5, 6]);
      for (const unitDiagonal of [true, false])
        exact(
          (x, y) => [P.triangularSolve(x, y, { leftSide: true, lower: true, unitDiagonal })],
          [sing, b],
          `singular ${dt}`,
          "TriangularSolve",
        );
    }
  },
);

test(
  "lu: jaxts.Lu, bit-equal lu, pivots and permutation (square, tall, wide; ties, zero columns, NaN, Inf)",
  { skip },
  () => {
    for (const dt of DTYPES) {
      for (const [m, n] of [
        [5, 5],
        [70, 70],
        [9, 4],
        [4, 9],
      ]) {
        const sh = [2, 2, m, n];
        exact((x) => P.lu(x), [arr(dt, sh, rand(size(sh), 13 * m + n))], `lu ${dt} ${m}x${n}`, "Lu");
      }
      // |1| ties (the first row wins), a zero matrix, a zero first column, NaN below and on the diagonal, an Inf
      const special = [1, 2, 3, -1, 5, 6, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 0, 5, 6];
      const more = [1, 2, 3, NaN, 5, 6, 7, 8, 9, NaN, 1, 2, 3, 4, 5, 6, 7, 8, 2, 1, 0, Infinity, 3, 1, -4, 0, 2];
      exact((x) => P.lu(x), [arr(dt, [6, 3, 3], [...special, ...more])], `lu special ${dt}`, "Lu");
    }
  },
);

test(
  "qr: jaxts.Qr, bit-equal q and r (reduced and full; square, tall, wide; zero columns, -0, NaN, Inf)",
  { skip },
  () => {
    for (const dt of DTYPES) {
      for (const [m, n] of [
        [5, 5],
        [40, 40],
        [9, 4],
        [4, 9],
        [1, 3],
        [3, 0],
        [0, 3],
      ])
        for (const full of [false, true]) {
          const sh = [2, m, n];
          exact(
            (x) => P.qr(x, full),
            [arr(dt, sh, rand(size(sh), 17 * m + n))],
            `qr ${dt} ${m}x${n} full=${full}`,
            "Qr",
          );
        }
      // a zero column below the diagonal (tau = 0), alpha = -0, a NaN, an Inf, a zero matrix
      const special = [1, 2, 0, 3, 0, 4, -0, 1, 2, 0, 5, 6, 1, NaN, 2, 3, 0, 1, Infinity, 1, 0, 2, 3, 4];
      exact((x) => P.qr(x, false), [arr(dt, [2, 4, 3], special)], `qr special ${dt}`, "Qr");
      exact(
        (x) => P.qr(x, true),
        [arr(dt, [2, 3, 3], [...special.slice(0, 9), 0, 0, 0, 0, 0, 0, 0, 0, 0])],
        `qr zero ${dt}`,
        "Qr",
      );
      // alpha = -0 with a nonzero column below: beta = +hypot (LAPACK's sign of -0)
      exact((x) => P.qr(x, false), [arr(dt, [2, 2, 2], [-0, 1, 2, 3, 0, 1, -2, 3])], `qr alpha=-0 ${dt}`, "Qr");
    }
  },
);

test(
  "eigh: jaxts.Eigh, bit-equal v and w (lower/upper, sorted or not; n up to 120 and a host-step size; repeated eigenvalues, NaN, Inf)",
  { skip },
  () => {
    for (const dt of DTYPES) {
      for (const n of [1, 2, 5, 17, 40, 120]) {
        const sh = [2, n, n];
        // not symmetric: the op reads only the triangle named by `lower`
        const a = arr(dt, sh, matrices(sh, 11 * n + 3, 0.5));
        for (const lower of [true, false])
          for (const sort of [true, false])
            exact((x) => P.eigh(x, lower, sort), [a], `eigh ${dt} n=${n} lower=${lower} sort=${sort}`, "Eigh");
      }
      // the identity (ties in the sort), a zero matrix, a NaN and an Inf matrix, a diagonal with -0, a 2x2 block
      const special = [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, NaN, 0, 2, 1, 0, 0, 0, 1];
      const more = [Infinity, 0, 0, 0, 1, 0, 0, 0, 1, -0, 0, 0, 0, 3, 0, 0, 0, -2, 2, 1, 0, 1, 2, 0, 0, 0, 2];
      exact((x) => P.eigh(x), [arr(dt, [6, 3, 3], [...special, ...more])], `eigh special ${dt}`, "Eigh");
    }
  },
);

test(
  "svd: jaxts.Svd, bit-equal s, u and vt (full/reduced, with and without u/vt; square, tall, wide; rank-deficient, zero, NaN, Inf)",
  { skip },
  () => {
    for (const dt of DTYPES) {
      for (const [m, n] of [
        [5, 5],
        [30, 30],
        [37, 22],
        [9, 4],
        [4, 9],
        [20, 1],
        [1, 3],
        [3, 0],
        [0, 3],
      ])
        for (const full of [false, true])
          for (const uv of [true, false]) {
            const sh = [2, m, n];
            exact(
              (x) => P.svd(x, full, uv),
              [arr(dt, sh, rand(size(sh), 19 * m + n))],
              `svd ${dt} ${m}x${n} full=${full} uv=${uv}`,
              "Svd",
            );
          }
      // rank 1 (zero singular values: u completed), a zero matrix, a NaN, an Inf, huge and tiny scales
      const special = [1, 2, 3, 2, 4, 6, 0, 0, 0, 0, 0, 0, 1, NaN, 2, 3, 4, 5, Infinity, 1, 0, 2, 3, 4];
      const scales = [1e300, 2e300, -3e299, 1e300, 0, 7e299, 1e-300, 3e-310, 0, -2e-300, 5e-301, 1e-305];
      for (const full of [false, true])
        exact(
          (x) => P.svd(x, full),
          [arr("float64", [6, 2, 3], [...special, ...scales])],
          `svd special full=${full} ${dt}`,
          "Svd",
        );
    }
  },
);

test("eigh and svd above n = 16 under jit: one ONNX step holding the native op (no host step)", { skip }, () => {
  // exact() asserts that every compiled step is ONNX; the Loop lowerings run n > 16 as a host step instead
  const a = arr("float64", [24, 24], matrices([24, 24], 5, 1));
  exact((x) => P.eigh(x), [a], "eigh n=24", "Eigh");
  exact((x) => P.svd(x, false), [a], "svd n=24", "Svd");
  exact((x) => P.svd(x, true, false), [arr("float32", [30, 20], rand(600, 8))], "svd s only 30x20", "Svd");
});

test("the custom ops lower inside loop bodies too (a Loop subgraph) and agree bit for bit", { skip }, () => {
  const a = arr("float64", [6, 6], matrices([6, 6], 99, 1));
  const body = (_i: Array, x: Array): Array => {
    const [lu] = P.lu(x);
    return ops.add(P.triangularSolve(lu, x, { leftSide: true, lower: false }), x);
  };
  exact((x) => [foriLoop(0, 3, body, x)], [a], "lu in a loop body", "Lu");
});

test(
  "with the switch off, in portable compiles and for an exported model the Loop lowerings run (same values for lu)",
  { skip },
  () => {
    const a = arr("float64", [2, 5, 5], rand(50, 3));
    const prev = linalgNativeOptions.enabled;
    linalgNativeOptions.enabled = false;
    try {
      // lu's Loop lowering is elementwise, step for step: it matches the reference exactly too
      exact((x) => P.lu(x), [a], "lu, Loop lowering", "Lu", false);
    } finally {
      linalgNativeOptions.enabled = prev;
    }
    const { jaxpr } = traceToJaxpr((x: Array) => [P.cholesky(x)], [a.aval], "portable");
    const prog = compileJaxpr(jaxpr, { portable: true });
    const portable = [...programOps(prog.steps)];
    assert.ok(
      portable.includes(".Loop") && portable.every((o) => o.startsWith(".")),
      `portable: standard ONNX: ${portable}`,
    );
    assert.ok(compiledOps(jaxpr as Jaxpr).has("jaxts.Cholesky"), "the same jaxpr in a native session: jaxts.Cholesky");
  },
);

test("without the native addon (JAXTS_NATIVE=0) jit(lu) takes the Loop lowering and equals the interpreter", () => {
  const vals = [1, 2, 3, -1, 5, 6, 1, 0, 2, 4, 0, 1, 2, 2, 7, 3];
  const script = `
    const { jit, lax, numpy: jnp } = await import(${JSON.stringify(new URL("../../src/index.js", import.meta.url).href)});
    const rt = await import(${JSON.stringify(new URL("../../src/backends/onnx/ort-runtime.js", import.meta.url).href)});
    const a = jnp.reshape(jnp.array(${JSON.stringify(vals)}, { dtype: "float32" }), [4, 4]);
    const [lu, piv, perm] = jit((x) => lax.linalg.lu(x))(a);
    console.log(JSON.stringify({ native: rt.nativeLinalgOps(), lu: lu.tolist(), piv: piv.tolist(), perm: perm.tolist() }));
  `;
  const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, JAXTS_NATIVE: "0" },
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
  });
  assert.equal(res.status, 0, res.stderr);
  const got = JSON.parse(res.stdout.trim().split("\n").pop()!) as Record<string, unknown>;
  const prev = config.backend;
  config.update("backend", "interpreter");
  try {
    const [lu, piv, perm] = P.lu(arr("float32", [4, 4], vals));
    assert.deepEqual(got, { native: false, lu: lu.tolist(), piv: piv.tolist(), perm: perm.tolist() });
  } finally {
    config.update("backend", prev);
  }
});

test(
  "per-device shardMap programs on the device runtime run the custom ops: inv of each shard equals the interpreter's bit for bit",
  { skip },
  () => {
    const vals = rand(2 * 40 * 40, 21);
    const script = `
    const { config } = await import(${JSON.stringify(new URL("../../src/core/config.js", import.meta.url).href)});
    config.update("numCpuDevices", 2);
    config.update("spmdRuntime", "devices");
    config.update("enableX64", true);
    const { makeMesh, numpy: jnp, shardMap, sharding } = await import(${JSON.stringify(new URL("../../src/index.js", import.meta.url).href)});
    const rt = await import(${JSON.stringify(new URL("../../src/runtime/index.js", import.meta.url).href)});
    const a = jnp.reshape(jnp.array(${JSON.stringify(vals)}, { dtype: "float64" }), [2, 40, 40]);
    const f = shardMap((b) => jnp.linalg.inv(b), { mesh: makeMesh([2], ["x"]), inSpecs: sharding.P("x"), outSpecs: sharding.P("x") });
    const got = f(a).tolist();
    config.update("backend", "interpreter");
    console.log(JSON.stringify({ devices: rt.deviceRuntimeUnavailable() ?? "ok", same: JSON.stringify(got) === JSON.stringify(jnp.linalg.inv(a).tolist()) }));
  `;
    // float64: the Loop lowering's triangular solves sum in another order, so its shards differ in the last bits
    const run = (native: boolean): unknown => {
      const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
        encoding: "utf8",
        env: { ...process.env, JAXTS_NATIVE_LINALG: native ? "1" : "0" },
        cwd: fileURLToPath(new URL("../..", import.meta.url)),
      });
      assert.equal(res.status, 0, res.stderr);
      return JSON.parse(res.stdout.trim().split("\n").pop()!);
    };
    assert.deepEqual(run(true), { devices: "ok", same: true });
    assert.deepEqual(
      run(false),
      { devices: "ok", same: false },
      "the Loop lowering is not bit-equal here: the test tells them apart",
    );
  },
);
