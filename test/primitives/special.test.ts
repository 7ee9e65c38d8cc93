/** @file Special functions of the reference implementation against known closed forms. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { digamma, erf, erfc, lgamma, polygamma } from "../../src/primitives/special-math.js";

const near = (a: number, b: number, tol = 1e-12) =>
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${a} vs ${b}`);

test("polygamma, digamma, lgamma and erf at known points", () => {
  near(polygamma(1, 1), Math.PI ** 2 / 6); // zeta(2)
  near(polygamma(2, 1), -2 * 1.2020569031595942); // -2 zeta(3)
  near(polygamma(3, 1), Math.PI ** 4 / 15); // 6 zeta(4)
  near(polygamma(1, 0.5), Math.PI ** 2 / 2);
  near(digamma(1), -0.5772156649015329); // -Euler-Mascheroni
  near(digamma(0.5), -0.5772156649015329 - 2 * Math.LN2);
  near(lgamma(0.5), 0.5 * Math.log(Math.PI));
  near(lgamma(10), Math.log(362880));
  near(erf(0.5), 0.5204998778130465);
  near(erfc(3), 2.209049699858544e-5);
  assert.ok(Number.isNaN(polygamma(1, -1)));
});
