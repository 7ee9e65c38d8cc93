/** @file jax.scipy.integrate.trapezoid against SciPy (test/fixtures/scipy-linalg.json "integrate"), eager and jit. */
import { test } from "node:test";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import * as SI from "../../src/scipy/integrate.js";
import { jit } from "../../src/transforms/api.js";
import { assertClose, decode, type FixArray, loadFixture } from "../helpers/fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface ICase {
  in: FixArray[];
  opts: Record<string, unknown>;
  out: FixArray;
}
const fx = loadFixture<{ integrate: ICase[] }>("scipy-linalg.json");

test("scipy.integrate.trapezoid matches SciPy", () => {
  withX64(() => {
    for (const c of fx.integrate) {
      const xs = c.in.map(decode);
      const r = xs.length > 1 ? SI.trapezoid(xs[0], xs[1], c.opts as never) : SI.trapezoid(xs[0], c.opts as never);
      assertClose(r, c.out, { rtol: 1e-12, atol: 1e-12, msg: `trapezoid ${JSON.stringify(c.opts)}` });
      const j = jit((y: Array) => SI.trapezoid(y, xs[1] ?? null, c.opts as never))(xs[0]);
      assertClose(j, c.out, { rtol: 1e-12, atol: 1e-12, msg: `jit trapezoid ${JSON.stringify(c.opts)}` });
    }
  });
});
