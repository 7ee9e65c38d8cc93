/** @file The primitive harness on the default (ONNX Runtime) backend: jvp vs finite differences, vjp vs jvp, vmap vs loops, jit vs eager, type checks. */
import { test } from "node:test";
import { SPECS } from "./specs.js";
import { checkSpec } from "./harness.js";

for (const s of SPECS) test(`primitive harness (default backend): ${s.name}`, () => checkSpec(s));
