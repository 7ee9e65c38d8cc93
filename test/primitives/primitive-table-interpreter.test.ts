/** @file The primitive harness on the reference interpreter: the same rows must pass on both backends. */
import { test } from "node:test";
import { config } from "../../src/core/config.js";
import { SPECS } from "./specs.js";
import { checkSpec } from "./harness.js";

config.update("backend", "interpreter");
for (const s of SPECS) test(`primitive harness (interpreter): ${s.name}`, () => checkSpec(s));
