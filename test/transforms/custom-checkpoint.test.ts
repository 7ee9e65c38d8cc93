/** @file customJvp / customVjp rules and checkpoint policies (recomputation counted by executions). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { type Array, grad, jit, jvp, vmap } from "../../src/index.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { customJvp, customVjp } from "../../src/transforms/custom-derivatives.js";
import { checkpoint, checkpointName, checkpointPolicies } from "../../src/transforms/checkpoint.js";
import { addExecutionHook } from "../../src/core/trace.js";
import { config } from "../../src/core/config.js";
import { assertClose } from "../helpers/fixtures.js";

const f32 = (v: number[] | number[][] | number) => array(v, { dtype: "float32" });

test("customJvp rule is used by jvp and grad, under jit and vmap", () => {
  // log1pexp with a stable custom derivative: d/dx = sigmoid(x)
  const f = customJvp((x: Array) => ops.log1p(ops.exp(x)));
  f.defjvp(([x], [t]) => [f(x), ops.mul(t, ops.logistic(x))]);
  const [, t] = jvp(f, [f32(100)], [f32(1)]) as [Array, Array];
  assert.equal(t.item(), 1);
  assert.ok(Math.abs(((grad(f)(f32(0)) as Array).item() as number) - 0.5) < 1e-7);
  assert.ok(Math.abs(((jit(grad(f))(f32(0)) as Array).item() as number) - 0.5) < 1e-7);
  const g = vmap(grad(f))(f32([-1, 0, 1])) as Array;
  assertClose(g, f32([-1, 0, 1].map((v) => 1 / (1 + Math.exp(-v)))));
});

test("customVjp fwd/bwd drive reverse mode; forward mode raises", () => {
  const clipGrad = customVjp((x: Array) => ops.mul(x, 1));
  clipGrad.defvjp(
    (x: Array) => [ops.mul(x, 1), null],
    (_r: null, ct: Array) => [ops.clamp(-1, ct, 1)],
  );
  const loss = (x: Array) => ops.reduceSum(ops.mul(clipGrad(x), 5), [0]);
  assert.deepEqual((grad(loss)(f32([1, 2])) as Array).tolist(), [1, 1]);
  assert.deepEqual((jit(grad(loss))(f32([1, 2])) as Array).tolist(), [1, 1]);
  assert.throws(() => jvp(clipGrad, [f32([1])], [f32([1])]), /forward-mode.*customVjp/);
  // residuals flow from fwd to bwd
  const sq = customVjp((x: Array) => ops.mul(x, x));
  sq.defvjp(
    (x: Array) => [ops.mul(x, x), x],
    (x: Array, ct: Array) => [ops.mul(ops.mul(x, 2), ct)],
  );
  assert.deepEqual((grad((x: Array) => ops.reduceSum(sq(x), [0]))(f32([3])) as Array).tolist(), [6]);
  assert.deepEqual((vmap(grad((x: Array) => sq(x)))(f32([1, 2, 3])) as Array).tolist(), [2, 4, 6]);
});

function countSinDuringGrad(policy: Parameters<typeof checkpoint>[1]): { sin: number; dot: number; g: Array } {
  const block = (w: Array, x: Array) =>
    ops.sin(
      ops.sin(
        checkpointName(
          ops.dotGeneral(x, w, [
            [[0], [0]],
            [[], []],
          ]),
          "proj",
        ),
      ),
    );
  const f = policy === undefined ? block : checkpoint(block, policy);
  const x0 = f32([0.5, -1.0]);
  const loss = (w: Array) => ops.reduceSum(f(w, x0), [0]);
  let sin = 0,
    dot = 0;
  // count op-by-op executions on the reference interpreter (a compiled backend runs a checkpoint as one program)
  const prev = config.backend;
  config.update("backend", "interpreter");
  const off = addExecutionHook((p) => {
    if (p.name === "sin") sin++;
    if (p.name === "dot_general") dot++;
  });
  let g: Array;
  try {
    g = grad(loss)(
      f32([
        [0.3, 0.1],
        [0.2, -0.4],
      ]),
    ) as Array;
  } finally {
    off();
    config.update("backend", prev);
  }
  return { sin, dot, g };
}

test("checkpoint policies: the backward pass recomputes exactly what is not saved", () => {
  const plain = countSinDuringGrad(undefined);
  const nothing = countSinDuringGrad({ policy: checkpointPolicies.nothingSaveable });
  const everything = countSinDuringGrad({ policy: checkpointPolicies.everythingSaveable });
  const dots = countSinDuringGrad({ policy: checkpointPolicies.dotsSaveable });
  const names = countSinDuringGrad({ policy: checkpointPolicies.saveOnlyTheseNames("proj") });
  for (const r of [nothing, everything, dots, names]) assertClose(r.g, plain.g, { rtol: 1e-6 });
  // without remat: 2 forward sins (+ cos in the jvp); nothing saveable recomputes both sins and the dot
  assert.equal(everything.sin, plain.sin);
  assert.equal(everything.dot, plain.dot);
  assert.ok(nothing.sin > plain.sin, `nothingSaveable should recompute sin (${nothing.sin} vs ${plain.sin})`);
  assert.ok(nothing.dot > plain.dot, `nothingSaveable should recompute the dot (${nothing.dot} vs ${plain.dot})`);
  assert.equal(dots.dot, plain.dot, "dotsSaveable saves the dot");
  assert.ok(dots.sin > plain.sin, "dotsSaveable recomputes the sins");
  assert.equal(names.dot, plain.dot, "saveOnlyTheseNames('proj') saves the named dot output");
});

test("checkpoint policies: saveFromBothPolicies, and the offloading policies (on the CPU an offloaded residual is a saved one)", () => {
  const plain = countSinDuringGrad(undefined);
  const nothing = countSinDuringGrad({ policy: checkpointPolicies.nothingSaveable });
  const dots = countSinDuringGrad({ policy: checkpointPolicies.dotsSaveable });
  const both = countSinDuringGrad({
    policy: checkpointPolicies.saveFromBothPolicies(
      checkpointPolicies.nothingSaveable,
      checkpointPolicies.dotsSaveable,
    ),
  });
  const offNames = countSinDuringGrad({
    policy: checkpointPolicies.saveAndOffloadOnlyTheseNames({
      namesWhichCanBeSaved: [],
      namesWhichCanBeOffloaded: ["proj"],
      offloadSrc: "device",
      offloadDst: "pinned_host",
    }),
  });
  const offOther = countSinDuringGrad({
    policy: checkpointPolicies.saveAndOffloadOnlyTheseNames({
      namesWhichCanBeSaved: ["other"],
      namesWhichCanBeOffloaded: [],
      offloadSrc: "device",
      offloadDst: "pinned_host",
    }),
  });
  const offDots = countSinDuringGrad({ policy: checkpointPolicies.offloadDotWithNoBatchDims("device", "pinned_host") });
  const noBatch = countSinDuringGrad({ policy: checkpointPolicies.checkpointDotsWithNoBatchDims });
  for (const r of [both, offNames, offOther, offDots, noBatch]) assertClose(r.g, plain.g, { rtol: 1e-6 });
  for (const [what, r] of [
    ["saveFromBothPolicies(nothing, dots)", both],
    ["offloadDotWithNoBatchDims", offDots],
    ["checkpointDotsWithNoBatchDims", noBatch],
  ] as const)
    assert.deepEqual([r.sin, r.dot], [dots.sin, dots.dot], `${what} keeps exactly the dot, as dotsSaveable`);
  assert.equal(offNames.dot, plain.dot, "the offloaded name 'proj' is kept for the backward pass");
  assert.deepEqual(
    [offOther.sin, offOther.dot],
    [nothing.sin, nothing.dot],
    "a name that is not in the program saves nothing",
  );
  assert.throws(
    () => checkpointPolicies.offloadDotWithNoBatchDims("device", "disk"),
    /checkpointPolicies.offloadDotWithNoBatchDims: offloadDst must be one of "device", "pinned_host", "unpinned_host", got "disk"/,
  );
  assert.throws(
    () =>
      checkpointPolicies.saveAndOffloadOnlyTheseNames({
        namesWhichCanBeSaved: ["a"],
        namesWhichCanBeOffloaded: ["a"],
        offloadSrc: "device",
        offloadDst: "pinned_host",
      }),
    /saveAndOffloadOnlyTheseNames: names may be saved or offloaded, not both: a/,
  );
});

test("bad input: argnum options naming arguments the call did not pass", () => {
  const cj = customJvp((x: Array, _n: number) => x, { nondiffArgnums: [2] });
  cj.defjvp((p, t) => [p[0], t[0]]);
  assert.throws(
    () => cj(array(1.5, { dtype: "float32" }), 2),
    /customJvp\(fn\): nondiffArgnums=\[2\] refers to argument\(s\) 2, but the function was called with 2 positional argument\(s\)/,
  );
  const cv = customVjp((x: Array) => x, { nondiffArgnums: [1] });
  cv.defvjp(
    (x: Array) => [x, null],
    (_r: unknown, ct: Array) => [ct],
  );
  assert.throws(
    () => cv(array(1.5, { dtype: "float32" })),
    /customVjp\(fn\): nondiffArgnums=\[1\] refers to argument\(s\) 1/,
  );
  assert.throws(
    () => checkpoint((x: Array) => x, { staticArgnums: [3] })(array(1)),
    /checkpoint: staticArgnums=\[3\] refers to argument\(s\) 3, but the function was called with 1 positional argument\(s\)/,
  );
});
