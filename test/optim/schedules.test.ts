/** @file optim schedules against their closed forms, for int32 Array counts, JS number counts and under jit. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/index.js";
import { jit } from "../../src/transforms/api.js";

const cosDecay = (init: number, steps: number, alpha: number, exponent: number, c: number): number =>
  init * ((1 - alpha) * (0.5 * (1 + Math.cos((Math.PI * Math.min(c, steps)) / steps))) ** exponent + alpha);

const CASES: [string, optim.Schedule, (c: number) => number][] = [
  ["constantSchedule", optim.constantSchedule(0.25), () => 0.25],
  ["linearSchedule", optim.linearSchedule(1.0, 0.1, 10), (c) => 1 - (0.9 * Math.min(Math.max(c, 0), 10)) / 10],
  [
    "linearSchedule transitionBegin",
    optim.linearSchedule(1.0, 0.1, 10, { transitionBegin: 5 }),
    (c) => 1 - (0.9 * Math.min(Math.max(c - 5, 0), 10)) / 10,
  ],
  ["polynomialSchedule", optim.polynomialSchedule(1.0, 0.0, 2, 10), (c) => (1 - Math.min(c, 10) / 10) ** 2],
  ["cosineDecaySchedule", optim.cosineDecaySchedule(2.0, 10, 0.1), (c) => cosDecay(2, 10, 0.1, 1, c)],
  [
    "cosineDecaySchedule exponent",
    optim.cosineDecaySchedule(2.0, 10, { alpha: 0.1, exponent: 2 }),
    (c) => cosDecay(2, 10, 0.1, 2, c),
  ],
  ["exponentialDecay", optim.exponentialDecay(1.0, 5, 0.5), (c) => (c <= 0 ? 1 : 0.5 ** (c / 5))],
  [
    "exponentialDecay staircase",
    optim.exponentialDecay(1.0, 5, 0.5, { staircase: true }),
    (c) => 0.5 ** Math.floor(c / 5),
  ],
  [
    "exponentialDecay begin+end",
    optim.exponentialDecay(1.0, 5, 0.5, 3, false, 0.3),
    (c) => Math.max(c - 3 <= 0 ? 1 : 0.5 ** ((c - 3) / 5), 0.3),
  ],
  [
    "exponentialDecay growth capped",
    optim.exponentialDecay(1.0, 4, 2.0, { endValue: 3 }),
    (c) => Math.min(c <= 0 ? 1 : 2 ** (c / 4), 3),
  ],
  [
    "warmupCosineDecaySchedule",
    optim.warmupCosineDecaySchedule(0.0, 1.0, 5, 25, 0.1),
    (c) => (c < 5 ? c / 5 : cosDecay(1.0, 20, 0.1, 1, c - 5)),
  ],
  ["warmupConstantSchedule", optim.warmupConstantSchedule(0.1, 1.0, 4), (c) => 0.1 + (0.9 * Math.min(c, 4)) / 4],
  [
    "warmupExponentialDecaySchedule",
    optim.warmupExponentialDecaySchedule(0.0, 1.0, 4, 3, 0.5),
    (c) => (c < 4 ? c / 4 : c - 4 <= 0 ? 1 : 0.5 ** ((c - 4) / 3)),
  ],
  [
    "joinSchedules",
    optim.joinSchedules([optim.constantSchedule(1.0), optim.linearSchedule(1.0, 0.0, 4)], [3]),
    (c) => (c < 3 ? 1 : 1 - Math.min(c - 3, 4) / 4),
  ],
  [
    "piecewiseConstantSchedule",
    optim.piecewiseConstantSchedule(1.0, { 4: 0.5, 8: 0.1 }),
    (c) => (c < 4 ? 1 : c < 8 ? 0.5 : 0.05),
  ],
  [
    "piecewiseConstantSchedule pairs",
    optim.piecewiseConstantSchedule(2.0, [
      [8, 0.1],
      [4, 0.5],
    ]),
    (c) => (c < 4 ? 2 : c < 8 ? 1 : 0.1),
  ],
];

const num = (v: Array | number): number => (typeof v === "number" ? v : Number(v.item()));
const close = (got: number, want: number, msg: string): void =>
  assert.ok(Math.abs(got - want) <= 1e-6 + 2e-6 * Math.abs(want), `${msg}: got ${got}, expected ${want}`);

for (const [name, sched, ref] of CASES) {
  test(`${name} matches its closed form at int32 counts 0..30`, () => {
    for (let c = 0; c <= 30; c++) {
      const v = sched(jnp.array(c, { dtype: "int32" }));
      if (v instanceof Array) {
        assert.deepEqual(v.shape, []);
        assert.equal(v.dtype, "float32", `${name} dtype`);
      }
      close(num(v), ref(c), `${name}(${c})`);
    }
  });
  test(`${name} accepts JS number counts and works under jit`, () => {
    const js = jit((c: Array) => jnp.asarray(sched(c)));
    for (const c of [0, 3, 4, 5, 9, 17]) {
      close(num(sched(c)), ref(c), `${name}(${c}) number`);
      close(num(js(jnp.array(c, { dtype: "int32" }))), ref(c), `${name}(${c}) jit`);
    }
  });
}

test("schedules drive the learning rate through the optimizer's step count", () => {
  const lrs: number[] = [];
  const opt = optim.sgd((c) => {
    const v = optim.linearSchedule(1.0, 0.0, 4)(c);
    return v;
  });
  const p = jnp.array([1], { dtype: "float32" });
  let s = opt.init(p);
  for (let i = 0; i < 5; i++) {
    const [u, ns] = opt.update(jnp.array([1], { dtype: "float32" }), s, p);
    lrs.push(-Number((u as Array).item()));
    s = ns;
  }
  lrs.forEach((l, i) => close(l, Math.max(1 - i / 4, 0), `lr at step ${i}`));
});
