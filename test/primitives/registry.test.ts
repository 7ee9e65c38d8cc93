/** @file Registry coverage: every primitive has jvp and vmap rules and a reference impl (linear ones a transpose), or a written reason. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import "../../src/transforms/checkpoint.js";
import "../../src/transforms/custom-derivatives.js";
import { allPrimitives } from "../../src/core/primitive.js";

/** Primitives that are linear in (some of) their operands and so must transpose. */
const LINEAR = [
  "neg",
  "add",
  "sub",
  "mul",
  "div",
  "copy",
  "convert_element_type",
  "reduce_sum",
  "broadcast_in_dim",
  "reshape",
  "transpose",
  "squeeze",
  "rev",
  "pad",
  "concatenate",
  "slice",
  "select_n",
  "dynamic_slice",
  "dynamic_update_slice",
  "gather",
  "scatter",
  "dot_general",
  "cumsum",
  "scan",
  "checkpoint",
  "name",
  "custom_lin",
  "conv_general_dilated",
  "reduce_window_sum",
];

test("every primitive has jvp, vmap and impl rules or a written reason", () => {
  const gaps: string[] = [];
  for (const p of allPrimitives()) {
    const r = p.rules,
      why = r.missing ?? {};
    if (!r.jvp && !why.jvp) gaps.push(`${p.name}: no jvp rule`);
    if (!r.vmap && !why.vmap) gaps.push(`${p.name}: no vmap rule`);
    if (!r.impl) gaps.push(`${p.name}: no reference impl`);
  }
  assert.deepEqual(gaps, [], gaps.join("\n"));
});

test("every linear primitive has a transpose rule", () => {
  const names = new Set(allPrimitives().map((p) => p.name));
  for (const n of LINEAR) {
    assert.ok(names.has(n), `${n} is not registered`);
    const p = allPrimitives().find((q) => q.name === n)!;
    assert.ok(p.rules.transpose || p.rules.missing?.transpose, `${n} lacks a transpose rule`);
  }
});

test("the registry is not trivially small", () => {
  assert.ok(allPrimitives().length >= 90, `only ${allPrimitives().length} primitives registered`);
});
