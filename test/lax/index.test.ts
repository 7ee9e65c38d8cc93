/** @file lax entry points reject bad operands with errors naming the function, what it got and what it expected. */
import { test } from "node:test";
import { lax } from "../../src/index.js";
import { array } from "../../src/numpy/core.js";
import { assertThrowsWith } from "../numpy/math-cases.js";

const x = array([1.5, -2], { dtype: "float32" });
const BAD: [string, () => unknown, string[]][] = [
  [
    "convertElementType unknown dtype",
    () => lax.convertElementType(x, "foo" as never),
    ['lax.convertElementType: unknown dtype "foo"; expected one of bool, int8'],
  ],
  [
    "convertElementType non-array operand",
    () => lax.convertElementType("x" as never, "int32"),
    ["lax.convertElementType: operand must be an Array, got string x"],
  ],
  [
    "clamp string bound",
    () => lax.clamp("a" as never, x, 1),
    ["clamp: expected clamp(min, x, max)", "got string a, Array f32[2], number 1"],
  ],
  [
    "switch empty branches",
    () => lax.switch(0, []),
    ["lax.switch: branches must be a non-empty list of functions, got an empty list"],
  ],
  [
    "switch non-scalar index",
    () => lax.switch(array([0, 1]), [(v: unknown) => v as never], x),
    ["lax.switch: index must be a scalar, got an Array of shape [2]"],
  ],
  ["map over a 0-d array", () => lax.map((v: unknown) => v, array(3)), ["lax.map: xs leaf 0 is a 0-d array i32[]"]],
];
for (const [name, f, pats] of BAD) test(`bad input: ${name}`, () => assertThrowsWith(f, ...pats));
