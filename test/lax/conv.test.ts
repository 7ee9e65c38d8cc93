/** @file lax convolutions and windowed reductions against NumPy loop references (test/fixtures/lax-conv.json): eager (ONNX Runtime), jit, and the interpreter; plus bad-input errors. */
import { describe, it } from "node:test";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import * as lax from "../../src/lax/index.js";
import { grad, jit, makeJaxpr } from "../../src/transforms/api.js";
import { compileJaxpr } from "../../src/compiler/compile.js";
import assert from "node:assert/strict";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { loadFixture } from "../helpers/fixtures.js";
import { type MathCase, assertThrowsWith, checkCase, decodeArg } from "../numpy/math-cases.js";

type Fn = (...a: unknown[]) => Array;
/** lax plus reduce_window with each recognised computation (a function cannot live in JSON). */
const NS: Record<string, Fn> = {
  ...(lax as unknown as Record<string, Fn>),
  reduceWindowAdd: (x, init, ...rest) => (lax.reduceWindow as Fn)(x, init, lax.add, ...rest),
  reduceWindowMaxOp: (x, init, ...rest) => (lax.reduceWindow as Fn)(x, init, lax.max, ...rest),
  reduceWindowMinOp: (x, init, ...rest) => (lax.reduceWindow as Fn)(x, init, lax.min, ...rest),
};
const { cases } = loadFixture<{ cases: MathCase[] }>("lax-conv.json");

function run(c: MathCase, mode: "eager" | "jit"): Array {
  const args = c.args.map(decodeArg);
  if (c.kwargs) args.push(decodeArg(c.kwargs));
  const f = NS[c.fn];
  if (mode === "eager") return f(...args);
  // jit over the first (array) argument; the rest are static
  return jit((x: Array) => f(x, ...args.slice(1)))(args[0] as Array) as Array;
}

for (const backend of ["onnx", "interpreter"] as const) {
  describe(`lax conv / reduce_window fixtures (${backend})`, () => {
    for (const c of cases) {
      for (const mode of backend === "onnx" ? (["eager", "jit"] as const) : (["eager"] as const)) {
        it(`${c.fn}: ${c.name} (${mode})`, () => {
          const prev = config.backend;
          if (backend === "interpreter") config.update("backend", "interpreter");
          try {
            checkCase(c, run(c, mode));
          } finally {
            config.update("backend", prev);
          }
        });
      }
    }
  });
}

describe("every fixture case lowers to ONNX (Conv, MaxPool, AveragePool or pad/slice forms) with no equation on the host", () => {
  for (const c of cases) {
    it(`${c.fn}: ${c.name}`, () => {
      const args = c.args.map(decodeArg);
      if (c.kwargs) args.push(decodeArg(c.kwargs));
      const { jaxpr } = makeJaxpr((x: Array) => NS[c.fn](x, ...args.slice(1)))(args[0] as Array);
      const program = compileJaxpr(jaxpr, { strict: true });
      assert.deepEqual(program.notes, [], program.notes.join("\n"));
    });
  }
});

describe("max/min pooling gradients go to the first extreme element of each window (JAX's chooser rule)", () => {
  const f32 = (v: number[]) => array(v, { dtype: "float32" });
  it("tiling windows (reshape/argmax path)", () => {
    const g = grad((x: Array) => ops.reduceSum(lax.reduceWindowMax(x, [2], [2], "VALID"), [0]))(
      f32([1, 1, 0, 2, 3, 3]),
    ) as Array;
    assert.deepEqual(g.tolist(), [1, 0, 0, 1, 1, 0]);
    const gm = grad((x: Array) => ops.reduceSum(lax.reduceWindowMin(x, [3], [3], "VALID"), [0]))(
      f32([2, 0, 0, 5, 4, 5, 9]),
    ) as Array;
    assert.deepEqual(gm.tolist(), [0, 1, 0, 0, 1, 0, 0]);
  });
  it("overlapping windows (patch path) accumulate per window", () => {
    const g = grad((x: Array) => ops.reduceSum(lax.reduceWindowMax(x, [2], [1], "VALID"), [0]))(
      f32([1, 1, 0, 2]),
    ) as Array;
    assert.deepEqual(g.tolist(), [1, 1, 0, 1]);
  });
});

describe("bad inputs name the function and what was expected", () => {
  const x = ops.reshape(
    array(
      globalThis.Array.from({ length: 2 * 3 * 5 * 5 }, (_, i) => i % 7),
      { dtype: "float32" },
    ),
    [2, 3, 5, 5],
  );
  const w = ops.reshape(
    array(
      globalThis.Array.from({ length: 4 * 3 * 3 * 3 }, (_, i) => i % 5),
      { dtype: "float32" },
    ),
    [4, 3, 3, 3],
  );
  it("feature mismatch", () =>
    assertThrowsWith(
      () => lax.convGeneralDilated(x, ops.slice(w, [0, 0, 0, 0], [4, 2, 3, 3]), [1, 1], "VALID"),
      "conv_general_dilated",
      "feature",
      "f32[2,3,5,5]",
    ));
  it("unknown padding string", () =>
    assertThrowsWith(() => lax.convGeneralDilated(x, w, [1, 1], "FULL" as never), "SAME", "VALID"));
  it("wrong number of strides", () =>
    assertThrowsWith(
      () => lax.convGeneralDilated(x, w, [1], "VALID"),
      "convGeneralDilated",
      "windowStrides",
      "2 integers",
    ));
  it("misspelled option", () =>
    assertThrowsWith(
      () => lax.convGeneralDilated(x, w, [1, 1], "VALID", { featureGroupCnt: 2 } as never),
      "convGeneralDilated",
      "featureGroupCnt",
      "featureGroupCount",
    ));
  it("bad dimension numbers", () =>
    assertThrowsWith(
      () => lax.convGeneralDilated(x, w, [1, 1], "VALID", { dimensionNumbers: ["NCHW", "OIHW", "NCXY"] }),
      "convDimensionNumbers",
      "spatial",
    ));
  it("both group counts", () =>
    assertThrowsWith(
      () =>
        lax.convGeneralDilated(x, ops.concatenate([w, w, w], 1), [1, 1], "VALID", {
          featureGroupCount: 3,
          batchGroupCount: 2,
        }),
      "at most one",
    ));
  it("dtype mismatch", () =>
    assertThrowsWith(
      () => lax.conv(x, ops.convert(w, "int32"), [1, 1], "VALID"),
      "conv_general_dilated",
      "same dtype",
    ));
  it("reduceWindow with a computation that is not a function", () =>
    assertThrowsWith(
      () => lax.reduceWindow(x, 1, "mul" as never, [1, 1, 2, 2], [1, 1, 1, 1], "VALID"),
      "reduceWindow",
      "computation must be a function",
    ));
  it("reduceWindow with several operands", () =>
    assertThrowsWith(
      () => lax.reduceWindow([x, x] as never, 1, lax.add, [1, 1, 2, 2], [1, 1, 1, 1], "VALID"),
      "reduceWindow",
      "several operands",
    ));
  it("reduceWindow with a computation changing the dtype", () =>
    assertThrowsWith(
      () => lax.reduceWindow(x, 1, (a: Array, b: Array) => lax.lt(a, b), [1, 1, 2, 2], [1, 1, 1, 1], "VALID"),
      "reduceWindow",
      "same shape and dtype",
    ));
  it("window rank mismatch", () =>
    assertThrowsWith(
      () => lax.reduceWindowMax(x, [2, 2], [1, 1]),
      "reduceWindowMax",
      "windowDimensions",
      "4 integers",
    ));
});
