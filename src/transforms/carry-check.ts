/** @file Loop-carry type rules shared by scan, whileLoop and foriLoop (JAX's _check_carry_type and _promote_weak_typed_inputs). */
import type { Array } from "../core/array.js";
import type { ShapedArray } from "../core/aval.js";
import { promoteTypes } from "../core/dtype.js";
import type { TreeDef } from "../core/tree.js";
import * as ops from "../primitives/ops.js";

const typeStr = (a: ShapedArray): string => `${a.dtype}[${a.shape.join(",")}]`;
const capitalize = (s: string): string => s[0].toUpperCase() + s.slice(1);

function bulleted(diffs: string[]): string {
  return diffs.length === 1
    ? `${capitalize(diffs[0])}.`
    : diffs.map((d, i) => `  * ${d}${i === diffs.length - 1 ? "." : ";"}`).join("\n");
}

/** Raises when the body's carry output has a different pytree structure than the carry input. */
export function checkCarryStructure(fn: string, what: string, inDef: TreeDef, outDef: TreeDef): void {
  if (inDef.equals(outDef)) return;
  throw new TypeError(
    `${fn}: ${what} function carry input and carry output must have the same pytree structure, but they differ: ` +
      `the input carry has structure ${inDef} but the carry output has structure ${outDef}. ` +
      `Revise the function so that the carry output has the same pytree structure as the carry input.`,
  );
}

/**
 * Weak-typed initial carries (JS numbers) whose type the body changes are promoted to the joined dtype, strongly
 * typed, so the body can be traced again: `scan(c => c + 0.5, 0)` carries a float32. Returns null when nothing changes.
 */
export function promoteWeakCarry(init: readonly Array[], outAvals: readonly ShapedArray[]): Array[] | null {
  let changed = false;
  const next = init.map((x, i) => {
    const o = outAvals[i];
    if (!x.aval.weakType || !o || x.aval.sameType(o)) return x;
    changed = true;
    return ops.convert(
      x,
      promoteTypes({ dtype: x.dtype, weakType: true }, { dtype: o.dtype, weakType: o.weakType }).dtype,
      false,
    );
  });
  return changed ? next : null;
}

/**
 * Raises unless every carry output has the input's dtype and shape (weak type may differ), naming each mismatching
 * component by its path (e.g. "carry[1].w") and both types, as JAX does.
 */
export function checkCarryTypes(
  fn: string,
  what: string,
  paths: readonly string[],
  inAvals: readonly ShapedArray[],
  outAvals: readonly ShapedArray[],
): void {
  const diffs: string[] = [];
  inAvals.forEach((a, i) => {
    const b = outAvals[i];
    if (a.sameType(b)) return;
    const why = [
      a.dtype !== b.dtype ? "the dtypes do not match" : "",
      a.shape.join() !== b.shape.join() ? "the shapes do not match" : "",
    ]
      .filter(Boolean)
      .join(", and ");
    diffs.push(
      `the input carry ${paths[i] === "carry" ? "" : `component ${paths[i]} `}has type ${typeStr(a)} but the corresponding output carry component has type ${typeStr(b)}, so ${why}`,
    );
  });
  if (diffs.length === 0) return;
  throw new TypeError(
    `${fn}: ${what} function carry input and carry output must have equal types, but they differ:\n\n${bulleted(diffs)}\n\n` +
      `Revise the function so that all output types match the corresponding input types.`,
  );
}
