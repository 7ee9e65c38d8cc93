/** @file Elementwise primitives on the ONNX backend vs the reference interpreter: every dtype, special values, 0-d and empty arrays. */
import { test } from "node:test";
import { config } from "../../src/core/config.js";
import { checkAll } from "./harness.js";
import { binaryFloatCases, binaryIntCases, unaryFloatCases, unaryIntCases } from "./cases-elementwise.js";

config.update("enableX64", true);

test("unary float primitives match the interpreter (f32, f16, bf16, f64; special values; 0-d and empty)", () =>
  checkAll(unaryFloatCases()));
test("unary integer primitives match the interpreter (wrap-around, every integer dtype)", () =>
  checkAll(unaryIntCases()));
test("binary float primitives match the interpreter (incl. rank-0 broadcasting)", () => checkAll(binaryFloatCases()));
test("binary integer and bool primitives match the interpreter (wrap, x/0, shifts past the width)", () =>
  checkAll(binaryIntCases()));
