/**
 * @file optim.scaleByZoomLinesearch and optim.lbfgs's default: strong (or approximate) Wolfe at the accepted step on
 * quadratics, Rosenbrock and a logistic regression; the exact minimizer on a 1-D quadratic; lbfgs with the zoom
 * linesearch on Rosenbrock 2-D and 10-D against SciPy's L-BFGS-B (test/fixtures/optim-zoom-linesearch.json from
 * scripts/fixtures/gen-zoom-linesearch-fixtures.py), eager and under jit; pytree params; errors.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/public.js";
import { jit, valueAndGrad } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { slice } from "../../src/lax/index.js";

const FIX = loadFixture<{
  rosenbrock: { x0: number[]; nit: number; x: number[]; fun: number }[];
  logistic: { X: number[][]; y: number[] };
}>("optim-zoom-linesearch.json");

type Fn = (p: unknown) => Array;
const rosen: Fn = (p) => {
  const x = p as Array;
  const n = x.shape[0];
  const a = slice(x, [1], [n]),
    b = slice(x, [0], [n - 1]);
  return jnp.sum(
    jnp.add(jnp.multiply(100, jnp.square(jnp.subtract(a, jnp.square(b)))), jnp.square(jnp.subtract(1, b))),
  );
};
const X = jnp.array(FIX.logistic.X, { dtype: "float32" }),
  Y = jnp.array(FIX.logistic.y, { dtype: "float32" });
const logistic: Fn = (p) => {
  const z = jnp.matmul(X, p as Array);
  // mean log(1 + e^z) - y z
  return jnp.mean(jnp.subtract(jnp.logaddexp(0, z), jnp.multiply(Y, z)));
};
const H = jnp.array([1, 10, 100], { dtype: "float32" });
const quad: Fn = (p) => jnp.sum(jnp.multiply(0.5, jnp.multiply(H, jnp.square(p as Array))));
const vec = (xs: number[]): Array => jnp.array(xs, { dtype: "float32" });
const num = (a: Array): number => a.item() as number;
const dot = (a: Array, b: Array): number => num(jnp.sum(jnp.multiply(a, b)));

/** One linesearch step along -grad (or `dir`); checks strong or approximate Wolfe at the accepted step. */
function checkWolfe(name: string, f: Fn, x0: Array, scaleDir: number): void {
  const ls = optim.scaleByZoomLinesearch({ maxLinesearchSteps: 30 });
  const [v, g] = valueAndGrad(f)(x0) as [Array, Array];
  const d = jnp.multiply(-scaleDir, g);
  const [u, st] = ls.update(d, ls.init(x0), x0, { value: v, grad: g, valueFn: f }) as [
    Array,
    optim.ScaleByZoomLinesearchState,
  ];
  const t = num(st.learningRate);
  assert.ok(t > 0, `${name}: step ${t}`);
  const x1 = jnp.add(x0, u);
  const [v1, g1] = valueAndGrad(f)(x1) as [Array, Array];
  const s0 = dot(d, g),
    s1 = dot(d, g1);
  const f0 = num(v),
    f1 = num(v1);
  assert.ok(Math.abs(num(st.value) - f1) <= 1e-5 * Math.max(1, Math.abs(f1)), `${name}: stored value`);
  const strong = f1 <= f0 + 1e-4 * t * s0 + 1e-6 * Math.abs(f0) && Math.abs(s1) <= 0.9 * Math.abs(s0) * (1 + 1e-4);
  const approx = f1 <= f0 + 1e-6 * Math.abs(f0) && (2e-4 - 1) * s0 >= s1 && s1 >= 0.9 * s0 * (1 + 1e-4);
  assert.ok(strong || approx, `${name}: t ${t} f0 ${f0} f1 ${f1} s0 ${s0} s1 ${s1}`);
  assert.ok(f1 < f0, `${name}: decrease`);
}

test("zoom linesearch: strong/approximate Wolfe at the accepted step (quadratic, Rosenbrock, logistic)", () => {
  checkWolfe("quadratic", quad, vec([1, -2, 0.5]), 1);
  checkWolfe("quadratic small dir", quad, vec([1, -2, 0.5]), 1e-4);
  checkWolfe("rosenbrock 2-D", rosen, vec([-1.2, 1]), 1);
  checkWolfe("rosenbrock 2-D tiny", rosen, vec([-1.2, 1]), 1e-5);
  checkWolfe("rosenbrock 5-D", rosen, vec([0.3, -0.5, 1.2, 0.8, 0.1]), 1e-3);
  checkWolfe("logistic", logistic, vec([0, 0, 0]), 1);
  checkWolfe("logistic far", logistic, vec([3, 3, -3]), 10);
});

test("zoom linesearch: the step on a 1-D quadratic is its exact minimizer (the first step overshoots, the cubic zoom is exact)", () => {
  // f = a (x - c)^2 from x0 along -f'(x0): the minimizer is t = 1 / (2 a)
  for (const a of [2, 1.5, 7]) {
    const f: Fn = (p) => jnp.sum(jnp.multiply(a, jnp.square(jnp.subtract(p as Array, 3))));
    const x0 = vec([1]);
    const [v, g] = valueAndGrad(f)(x0) as [Array, Array];
    const ls = optim.scaleByZoomLinesearch({ maxLinesearchSteps: 15 });
    const [u, st] = ls.update(jnp.negative(g), ls.init(x0), x0, { value: v, grad: g, valueFn: f }) as [
      Array,
      optim.ScaleByZoomLinesearchState,
    ];
    const t = num(st.learningRate);
    assert.ok(Math.abs(t - 1 / (2 * a)) <= 1e-4 / a, `a ${a}: step ${t}, expected ${1 / (2 * a)}`);
    assert.ok(Math.abs(num(jnp.sum(jnp.add(x0, u))) - 3) < 1e-4, `a ${a}: x1`);
  }
});

function runLbfgs(f: Fn, x0: Array, steps: number, useJit: boolean): [Array, number] {
  const opt = optim.lbfgs();
  const vgs = optim.valueAndGradFromState(f);
  const step = (x: Array, st: unknown): [Array, unknown, Array] => {
    const [v, g] = vgs(x, st);
    const [u, ns] = opt.update(g, st, x, { value: v, grad: g, valueFn: f });
    return [jnp.add(x, u as Array), ns, v];
  };
  const run = useJit ? (jit(step) as typeof step) : step;
  let x = x0,
    st: unknown = opt.init(x0);
  for (let i = 1; i <= steps; i++) {
    const [nx, ns] = run(x, st);
    x = nx;
    st = ns;
    const gn = num(jnp.max(jnp.abs(valueAndGrad(f)(x)[1] as Array)));
    if (gn < 1e-5) return [x, i];
  }
  return [x, steps];
}

for (const cs of FIX.rosenbrock)
  test(`lbfgs (zoom linesearch) on Rosenbrock ${cs.x0.length}-D converges like SciPy's L-BFGS-B (${cs.nit} iterations), eager and jit`, (t) => {
    const res: [Array, number][] = [];
    for (const useJit of [false, true]) {
      const [x, it] = runLbfgs(rosen, vec(cs.x0), 3 * cs.nit, useJit);
      const err = Math.max(...(x.tolist() as number[]).map((v, i) => Math.abs(v - cs.x[i])));
      assert.ok(err < 1e-4, `jit=${useJit}: max |x - x*| = ${err} after ${it} iterations`);
      assert.ok(it <= 2 * cs.nit, `jit=${useJit}: ${it} iterations vs SciPy's ${cs.nit}`);
      t.diagnostic(`jit=${useJit}: ${it} iterations (SciPy ${cs.nit})`);
      assert.ok(num(rosen(x)) < 1e-6, `jit=${useJit}: f = ${num(rosen(x))}`);
      res.push([x, it]);
    }
    assert.equal(res[0][1], res[1][1], "eager and jit take the same number of iterations");
    const d = Math.max(...(jnp.abs(jnp.subtract(res[0][0], res[1][0])).tolist() as number[]));
    assert.ok(d < 1e-5, `eager vs jit: ${d}`);
  });

test("zoom linesearch with pytree params; errors name the function", () => {
  const f: Fn = (p) => {
    const q = p as { a: Array; b: Array[] };
    return jnp.add(quad(q.a), jnp.sum(jnp.square(jnp.subtract(q.b[0], 2))));
  };
  const x0 = { a: vec([1, -2, 0.5]), b: [vec([0, 1])] };
  const [v, g] = valueAndGrad(f)(x0) as [Array, typeof x0];
  const ls = optim.scaleByZoomLinesearch({ maxLinesearchSteps: 20 });
  const d = { a: jnp.negative(g.a), b: [jnp.negative(g.b[0])] };
  const [u, st] = ls.update(d, ls.init(x0), x0, { value: v, grad: g, valueFn: f }) as [
    typeof x0,
    optim.ScaleByZoomLinesearchState,
  ];
  const t = num(st.learningRate);
  assert.ok(t > 0);
  const ua = u.a.tolist() as number[];
  (d.a.tolist() as number[]).forEach((x, i) => assert.ok(Math.abs(ua[i] - t * x) < 1e-6));
  assert.ok(num(st.value) < num(v));
  assert.deepEqual((st.grad as typeof x0).b[0].shape, [2]);
  assert.throws(
    () => optim.scaleByZoomLinesearch({ maxLinesearchSteps: 0 }),
    /optim\.scaleByZoomLinesearch: maxLinesearchSteps/,
  );
  assert.throws(
    () => optim.scaleByZoomLinesearch({ maxLinesearchSteps: 5, curvRtol: 1e-5 }),
    /optim\.scaleByZoomLinesearch: expected 0 < slopeRtol < curvRtol < 1/,
  );
  assert.throws(() => ls.update(d, ls.init(x0), x0), /optim\.scaleByZoomLinesearch: update needs the extra args/);
});
