/** @file Shape, conversion, reduction, indexing, sorting, random and linalg primitives on the ONNX backend vs the reference interpreter. */
import { test } from "node:test";
import { config } from "../../src/core/config.js";
import { checkAll } from "./harness.js";
import { STRUCTURAL_GROUPS } from "./cases-structural.js";

config.update("enableX64", true);

for (const [name, cases] of Object.entries(STRUCTURAL_GROUPS)) {
  test(`${name} primitives match the interpreter on every dtype`, () => checkAll(cases()));
}
