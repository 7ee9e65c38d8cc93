/**
 * @file The ONNX backend honours the facts a primitive declares in its definition (src/core/primitive.ts):
 * exactOnScalars (the scalar shortcut to the reference impl), shapePolymorphic (one eager session for every shape)
 * and callJaxprParam (a call primitive's jaxpr is inlined into the program); and the declared facts are consistent.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../../src/index.js";
import { ArrayImpl } from "../../../src/core/array-impl.js";
import type { Array } from "../../../src/core/array.js";
import { ShapedArray } from "../../../src/core/aval.js";
import { type Jaxpr, evalJaxpr } from "../../../src/core/jaxpr.js";
import { traceToJaxpr } from "../../../src/core/jaxpr-trace.js";
import { Primitive, type PrimitiveFacts, allPrimitives } from "../../../src/core/primitive.js";
import { bind, evalTrace, withTrace } from "../../../src/core/trace.js";
import { loweringSummary, onnxBackendOptions, onnxCacheStats } from "../../../src/backends/onnx/onnx-backend.js";
import * as ops from "../../../src/primitives/ops.js";
import { arr } from "../../compiler/harness.js";

let serial = 0;
/** A float32 primitive lowered to ONNX Neg whose reference impl returns x + 100 (the result tells which one ran). */
function marked(facts: PrimitiveFacts): Primitive {
  return new Primitive(
    `test_facts_${serial++}`,
    {
      abstractEval: ([x]) => [x],
      impl: ([x], _p, [out]) => [
        new ArrayImpl(
          out,
          Float32Array.from(x.buffer as Float32Array, (v) => v + 100),
        ),
      ],
      lower: (ctx, [x]) => ctx.node("Neg", [x]),
    },
    facts,
  );
}
const run = (p: Primitive, x: ArrayImpl): number[] => bind(p, [x])[0].tolist() as number[];

test("exactOnScalars: only a primitive declaring it takes the scalar shortcut to its reference impl", () => {
  // the compiler harness turns the shortcut off for its agreement tables; this test needs it on
  const prev = onnxBackendOptions.scalarFastPath;
  onnxBackendOptions.scalarFastPath = true;
  try {
    const exact = marked({ exactOnScalars: true }),
      plain = marked({});
    assert.deepEqual(run(exact, arr("float32", [1], [2])), [102]);
    assert.deepEqual(run(plain, arr("float32", [1], [2])), [-2]);
    // more than one element: both run their ONNX session
    assert.deepEqual(run(exact, arr("float32", [2], [2, 3])), [-2, -3]);
  } finally {
    onnxBackendOptions.scalarFastPath = prev;
  }
});

test("shapePolymorphic: one eager session serves every shape of a primitive declaring it", () => {
  const poly = marked({ shapePolymorphic: true }),
    fixed = marked({});
  const s0 = onnxCacheStats();
  assert.deepEqual(run(poly, arr("float32", [3], [1, 2, 3])), [-1, -2, -3]);
  assert.deepEqual(run(poly, arr("float32", [5], [1, 2, 3, 4, 5])), [-1, -2, -3, -4, -5]);
  const s1 = onnxCacheStats();
  assert.equal(s1.polySessions - s0.polySessions, 1);
  assert.equal(s1.sessionsCreated - s0.sessionsCreated, 1);
  run(fixed, arr("float32", [3], [1, 2, 3]));
  run(fixed, arr("float32", [5], [1, 2, 3, 4, 5]));
  const s2 = onnxCacheStats();
  assert.equal(s2.polySessions, s1.polySessions);
  assert.equal(s2.sessionsCreated - s1.sessionsCreated, 2);
});

test("callJaxprParam: a call primitive without a lower rule is inlined; without the fact it runs on the interpreter", () => {
  const inner = traceToJaxpr((x) => [ops.neg(x)], [new ShapedArray([3], "float32", false)], "inner").jaxpr;
  const call = (facts: PrimitiveFacts) =>
    new Primitive<{ jaxpr: Jaxpr }>(
      `test_call_${serial++}`,
      {
        abstractEval: (_avals, { jaxpr }) => jaxpr.outAvals,
        impl: (args, { jaxpr }) => withTrace(evalTrace, () => evalJaxpr(jaxpr, [], args)) as ArrayImpl[],
        missing: { lower: "a test call primitive" },
      },
      facts,
    );
  const lowered = (p: Primitive<{ jaxpr: Jaxpr }>) =>
    loweringSummary(
      traceToJaxpr((x: Array) => bind(p, [x], { jaxpr: inner }), [new ShapedArray([3], "float32", false)], "outer")
        .jaxpr,
    );
  const inlined = lowered(call({ callJaxprParam: "jaxpr" }));
  assert.match(inlined, /= Neg\(/);
  assert.doesNotMatch(inlined, /reference interpreter/);
  assert.match(lowered(call({})), /on the reference interpreter/);
});

test("declared facts are consistent: exact and shape-polymorphic primitives lower, call primitives have an impl", () => {
  for (const p of allPrimitives()) {
    const f = p.opts;
    if (f.exactOnScalars)
      assert.ok(p.rules.impl && p.rules.lower, `${p.name}: exactOnScalars needs an impl and a lowering`);
    if (f.shapePolymorphic) assert.ok(p.rules.lower, `${p.name}: shapePolymorphic needs a lowering`);
    if (f.callJaxprParam) assert.ok(p.rules.impl, `${p.name}: a call primitive needs an impl`);
    if (f.collectiveAxisParam) assert.ok(p.collective, `${p.name}: collectiveAxisParam makes it a collective`);
  }
  const names = (k: keyof PrimitiveFacts) =>
    allPrimitives()
      .filter((p) => p.opts[k] && !p.name.startsWith("test_"))
      .map((p) => p.name);
  // spot checks of the facts each family declares
  for (const n of ["add", "neg", "reshape", "gather", "reduce_sum", "threefry2x32", "stop_gradient"])
    assert.ok(names("exactOnScalars").includes(n), n);
  for (const n of ["exp", "pow", "select_n", "convert_element_type"])
    assert.ok(names("shapePolymorphic").includes(n), n);
  for (const n of ["exp", "pow", "cumlogsumexp", "dot_general"]) assert.ok(!names("exactOnScalars").includes(n), n);
  assert.ok(!names("shapePolymorphic").includes("integer_pow"));
  assert.deepEqual(names("callJaxprParam").sort(), ["checkpoint", "custom_jvp_call", "custom_vjp_call", "pjit"]);
});
