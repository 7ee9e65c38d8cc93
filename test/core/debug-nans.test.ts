/** @file config debugNans / debugInfs: the first primitive producing a NaN (or ±inf) raises, eager and inside jit. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Array, FloatingPointError, config, grad, jit, numpy as jnp, valueAndGrad } from "../../src/index.js";

/** Runs f with the given debug flags, restoring them (and the backend) afterwards. */
function withFlags<T>(
  flags: { debugNans?: boolean; debugInfs?: boolean; backend?: "onnx" | "interpreter" },
  f: () => T,
): T {
  const prev = { debugNans: config.debugNans, debugInfs: config.debugInfs, backend: config.backend };
  if (flags.debugNans !== undefined) config.update("debugNans", flags.debugNans);
  if (flags.debugInfs !== undefined) config.update("debugInfs", flags.debugInfs);
  if (flags.backend !== undefined) config.update("backend", flags.backend);
  try {
    return f();
  } finally {
    config.update("debugNans", prev.debugNans);
    config.update("debugInfs", prev.debugInfs);
    config.update("backend", prev.backend);
  }
}

/** Asserts f raises a FloatingPointError for `kind` in primitive `prim`; returns it. */
function raises(f: () => unknown, kind: "nan" | "inf", prim: string): FloatingPointError {
  let err: unknown = null;
  try {
    f();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof FloatingPointError, `expected a FloatingPointError, got ${String(err)}`);
  assert.equal(err.kind, kind);
  assert.equal(err.primitive, prim);
  assert.match(err.message, new RegExp(`^invalid value \\(${kind}\\) encountered in ${prim.replace(/[()]/g, "\\$&")}`));
  return err;
}

function logOf(x: Array): Array {
  return jnp.log(x);
}

for (const backend of ["onnx", "interpreter"] as const) {
  test(`debugNans: jit(log) on -1 re-runs the jaxpr and names log, its equation and the traced source line (${backend})`, () => {
    withFlags({ debugNans: true, backend }, () => {
      const f = jit(logOf);
      const e = raises(() => f(jnp.array([1, -1, 2], "float32")), "nan", "log");
      // the equation line as the jaxpr prints it
      assert.match(e.equation ?? "", /^b:f32\[3\] = log a$/);
      assert.match(e.message, /jit\(logOf\)/);
      // the source frame recorded when the equation was traced: logOf in this file
      assert.match(e.site ?? "", /logOf .*debug-nans\.test\.js/);
    });
  });
}

test("debugNans: a NaN from an inner jit names the inner equation, after the ops before it ran fine", () => {
  withFlags({ debugNans: true }, () => {
    const inner = jit((x: Array) => jnp.sqrt(jnp.subtract(x, 2)));
    const outer = jit((x: Array) => jnp.multiply(inner(jnp.add(x, 1)), 3));
    const ok = outer(jnp.array([1, 3], "float32"));
    assert.deepEqual([...ok.dataSync()], [0, Math.sqrt(2) * 3].map(Math.fround));
    const e = raises(() => outer(jnp.array([0, 3], "float32")), "nan", "sqrt");
    assert.match(e.equation ?? "", /= sqrt /);
  });
});

test("debugNans: eager jnp.divide(0, 0) raises naming div and the caller's line", () => {
  withFlags({ debugNans: true }, () => {
    const e = raises(() => jnp.divide(0, 0), "nan", "div");
    assert.equal(e.equation, undefined);
    assert.match(e.site ?? "", /debug-nans\.test\.js/);
    // finite results pass
    assert.equal(jnp.divide(1, 4).item(), 0.25);
  });
});

test("debugNans: grad through log of a negative number raises in the forward pass, eager and under jit(valueAndGrad)", () => {
  withFlags({ debugNans: true }, () => {
    const loss = (x: Array) => jnp.sum(jnp.log(x));
    assert.deepEqual([...grad(loss)(jnp.array([2, 4], "float32")).dataSync()], [0.5, 0.25]);
    raises(() => grad(loss)(jnp.array([2, -4], "float32")), "nan", "log");
    // as in JAX only the jitted program's outputs are checked: jit(grad) returns 1/x, finite, and the unused log is not an output
    assert.deepEqual([...jit(grad(loss))(jnp.array([-2, 4], "float32")).dataSync()], [-0.5, 0.25]);
    const e = raises(() => jit(valueAndGrad(loss))(jnp.array([-2, 4], "float32")), "nan", "log");
    assert.match(e.equation ?? "", /= log /);
  });
});

test("debugNans: a NaN made only by the backward pass (0 * inf) names the primitive that made it", () => {
  withFlags({ debugNans: true }, () => {
    // d/dx sum(sqrt(x) * 0) at 0: the cotangent 0 meets sqrt's derivative 1/(2 sqrt(0)) = inf
    const f = (x: Array) => jnp.sum(jnp.multiply(jnp.sqrt(x), 0));
    let err: unknown = null;
    try {
      grad(f)(jnp.array([0], "float32"));
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof FloatingPointError && err.kind === "nan", String(err));
    // flags off: the same gradient is NaN, silently
    config.update("debugNans", false);
    assert.ok(Number.isNaN(grad(f)(jnp.array([0], "float32")).item()));
  });
});

test("debugInfs: 1/0 raises naming div; NaNs alone do not trip it", () => {
  withFlags({ debugInfs: true }, () => {
    raises(() => jnp.divide(1, 0), "inf", "div");
    raises(() => jnp.divide(jnp.array([1, -1], "float16"), 0), "inf", "div");
    const e = raises(() => jit((x: Array) => jnp.exp(x))(jnp.array([1, 100], "float32")), "inf", "exp");
    assert.match(e.equation ?? "", /= exp a$/);
    assert.ok(Number.isNaN(jnp.divide(0, 0).item()));
  });
});

test("debugNans: as JAX, outputs are checked whatever the inputs: a NaN passed through raises", () => {
  withFlags({ debugNans: true }, () => {
    const nanIn = withFlags({ debugNans: false }, () => jnp.divide(jnp.array([0, 1], "float32"), 0));
    raises(() => jnp.add(nanIn, 1), "nan", "add");
    // the identity under jit: no equation makes the NaN, so the jitted call itself is named
    const e = raises(
      () =>
        jit(function ident(x: Array) {
          return x;
        })(nanIn),
      "nan",
      "jit(ident)",
    );
    assert.match(e.message, /no equation produced an invalid value/);
  });
});

test("flags off: NaN and inf results flow through without error", () => {
  withFlags({ debugNans: false, debugInfs: false }, () => {
    assert.ok(Number.isNaN(jnp.divide(0, 0).item()));
    assert.equal(jnp.divide(1, 0).item(), Infinity);
    const r = jit(logOf)(jnp.array([-1, 1], "float32")).dataSync();
    assert.ok(Number.isNaN(r[0]));
    assert.equal(r[1], 0);
  });
});
