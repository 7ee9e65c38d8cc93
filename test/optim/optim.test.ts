/** @file optim optimizers against float64 JS references of optax's formulas, jit == eager, MLP-sized pytrees, masking and errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import type { DType } from "../../src/core/dtype.js";
import * as tree from "../../src/core/tree.js";
import * as jnp from "../../src/numpy/index.js";
import * as optim from "../../src/optim/index.js";
import { grad, jit } from "../../src/transforms/api.js";
import { assertClose } from "../helpers/fixtures.js";

// ---------------------------------------------------------------- the quadratic problem
// loss(p) = sum_leaf sum_i 0.5 * A_i * p_i^2 + C_i * p_i, so grad = A * p + C (computed directly).
const P0 = { w: [1.0, -2.0, 3.0], b: [0.5, -0.25] };
const A = { w: [1.0, 2.0, 0.5], b: [3.0, 1.5] };
const C = { w: [0.1, -0.3, 0.2], b: [0.0, 0.4] };
type Flat = { w: number[]; b: number[] };
const KEYS = ["b", "w"] as const;

const mkParams = (dtype: DType): { w: Array; b: Array } => ({
  w: jnp.array(P0.w, { dtype }),
  b: jnp.array(P0.b, { dtype }),
});
const gradsOf = (p: { w: Array; b: Array }): { w: Array; b: Array } => ({
  w: jnp.add(jnp.multiply(jnp.array(A.w, { dtype: p.w.dtype }), p.w), jnp.array(C.w, { dtype: p.w.dtype })),
  b: jnp.add(jnp.multiply(jnp.array(A.b, { dtype: p.b.dtype }), p.b), jnp.array(C.b, { dtype: p.b.dtype })),
});
const refGrads = (p: Flat): Flat => ({
  w: p.w.map((x, i) => A.w[i] * x + C.w[i]),
  b: p.b.map((x, i) => A.b[i] * x + C.b[i]),
});

/** Runs `steps` eager optimizer steps; returns the params after each step. */
function runOpt(
  opt: optim.GradientTransformation,
  dtype: DType,
  steps: number,
  useJit = false,
): { w: Array; b: Array }[] {
  const step = (p: { w: Array; b: Array }, s: unknown): [{ w: Array; b: Array }, unknown] => {
    const [u, ns] = opt.update(gradsOf(p), s, p);
    return [optim.applyUpdates(p, u), ns];
  };
  const f = useJit ? jit(step) : step;
  let p = mkParams(dtype);
  let s = opt.init(p);
  const out = [];
  for (let i = 0; i < steps; i++) {
    [p, s] = f(p, s);
    out.push(p);
  }
  return out;
}

/** A float64 reference optimizer: given (grads, params, step k from 1), returns the update (already signed). */
type RefUpdate = (g: Flat, p: Flat, k: number) => Flat;
function runRef(update: RefUpdate, steps: number): Flat[] {
  let p: Flat = { w: [...P0.w], b: [...P0.b] };
  const out: Flat[] = [];
  for (let k = 1; k <= steps; k++) {
    const u = update(refGrads(p), p, k);
    p = { w: p.w.map((x, i) => x + u.w[i]), b: p.b.map((x, i) => x + u.b[i]) };
    out.push(p);
  }
  return out;
}

/** Elementwise reference state helper: one Float64 vector per leaf. */
const zerosFlat = (): Flat => ({ w: P0.w.map(() => 0), b: P0.b.map(() => 0) });
const mapFlat = (f: (...xs: number[]) => number, ...xs: Flat[]): Flat => ({
  w: xs[0].w.map((_, i) => f(...xs.map((x) => x.w[i]))),
  b: xs[0].b.map((_, i) => f(...xs.map((x) => x.b[i]))),
});

// ---- references, following optax's documented formulas
function refSgd(lr: number, momentum: number | null, nesterov = false): RefUpdate {
  let t = zerosFlat();
  return (g) => {
    if (momentum === null) return mapFlat((x) => -lr * x, g);
    t = mapFlat((gi, ti) => gi + momentum * ti, g, t);
    const u = nesterov ? mapFlat((gi, ti) => gi + momentum * ti, g, t) : t;
    return mapFlat((x) => -lr * x, u);
  };
}
function refAdamDir(
  b1: number,
  b2: number,
  eps: number,
  epsRoot: number,
  nesterov = false,
): (g: Flat, k: number) => Flat {
  let mu = zerosFlat(),
    nu = zerosFlat();
  return (g, k) => {
    mu = mapFlat((gi, m) => (1 - b1) * gi + b1 * m, g, mu);
    nu = mapFlat((gi, v) => (1 - b2) * gi * gi + b2 * v, g, nu);
    const muHat = nesterov
      ? mapFlat((m, gi) => b1 * (m / (1 - b1 ** (k + 1))) + (1 - b1) * (gi / (1 - b1 ** k)), mu, g)
      : mapFlat((m) => m / (1 - b1 ** k), mu);
    return mapFlat((m, v) => m / (Math.sqrt(v / (1 - b2 ** k) + epsRoot) + eps), muHat, nu);
  };
}
function refAdam(
  lr: number | ((c: number) => number),
  b1 = 0.9,
  b2 = 0.999,
  eps = 1e-8,
  epsRoot = 0,
  nesterov = false,
): RefUpdate {
  const dir = refAdamDir(b1, b2, eps, epsRoot, nesterov);
  return (g, _p, k) => {
    const l = typeof lr === "number" ? lr : lr(k - 1);
    return mapFlat((d) => -l * d, dir(g, k));
  };
}
function refAdamw(lr: number, wd: number, maskB = true): RefUpdate {
  const dir = refAdamDir(0.9, 0.999, 1e-8, 0);
  return (g, p, k) => {
    const d = dir(g, k);
    return {
      w: d.w.map((x, i) => -lr * (x + wd * p.w[i])),
      b: d.b.map((x, i) => -lr * (x + (maskB ? wd * p.b[i] : 0))),
    };
  };
}
function refRmsprop(lr: number, decay: number, eps: number, centered: boolean, momentum: number | null): RefUpdate {
  let nu = zerosFlat(),
    mu = zerosFlat(),
    t = zerosFlat();
  return (g) => {
    nu = mapFlat((gi, v) => (1 - decay) * gi * gi + decay * v, g, nu);
    mu = mapFlat((gi, m) => (1 - decay) * gi + decay * m, g, mu);
    let u = mapFlat((gi, v, m) => (-lr * gi) / Math.sqrt((centered ? v - m * m : v) + eps), g, nu, mu);
    if (momentum !== null) {
      t = mapFlat((ui, ti) => ui + momentum * ti, u, t);
      u = t;
    }
    return u;
  };
}
function refAdagrad(lr: number, init: number, eps: number): RefUpdate {
  let s = mapFlat(() => init, zerosFlat());
  return (g) => {
    s = mapFlat((gi, si) => gi * gi + si, g, s);
    return mapFlat((gi, si) => -lr * (si > 0 ? gi / Math.sqrt(si + eps) : 0), g, s);
  };
}
function refLamb(lr: number, wd: number): RefUpdate {
  const dir = refAdamDir(0.9, 0.999, 1e-6, 0);
  const norm = (v: number[]) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));
  return (g, p, k) => {
    const d = dir(g, k);
    const u = mapFlat((x, pi) => x + wd * pi, d, p);
    const out = zerosFlat();
    for (const key of KEYS) {
      const pn = norm(p[key]),
        un = norm(u[key]);
      const r = pn === 0 || un === 0 ? 1 : pn / un;
      out[key] = u[key].map((x) => -lr * x * r);
    }
    return out;
  };
}
function refClipAdam(maxNorm: number, lr: number): RefUpdate {
  const dir = refAdamDir(0.9, 0.999, 1e-8, 0);
  return (g, _p, k) => {
    const n = Math.sqrt([...g.w, ...g.b].reduce((a, x) => a + x * x, 0));
    const gc = n < maxNorm ? g : mapFlat((x) => (x / n) * maxNorm, g);
    return mapFlat((d) => -lr * d, dir(gc, k));
  };
}

const warm = optim.warmupCosineDecaySchedule(0.0, 0.1, 2, 6, 0.01);
const warmRef = (c: number): number => {
  if (c < 2) return (0.1 - 0.0) * (c / 2); // linear warmup from 0 to 0.1
  const cc = Math.min(c - 2, 4);
  const alpha = 0.01 / 0.1;
  return 0.1 * ((1 - alpha) * 0.5 * (1 + Math.cos((Math.PI * cc) / 4)) + alpha);
};

const CASES: [string, () => optim.GradientTransformation, () => RefUpdate][] = [
  ["sgd", () => optim.sgd(0.1), () => refSgd(0.1, null)],
  ["sgd momentum", () => optim.sgd(0.1, 0.9), () => refSgd(0.1, 0.9)],
  ["sgd nesterov", () => optim.sgd(0.1, { momentum: 0.9, nesterov: true }), () => refSgd(0.1, 0.9, true)],
  ["adam", () => optim.adam(0.1), () => refAdam(0.1)],
  [
    "adam epsRoot b1 b2",
    () => optim.adam(0.05, { b1: 0.8, b2: 0.99, eps: 1e-3, epsRoot: 1e-4 }),
    () => refAdam(0.05, 0.8, 0.99, 1e-3, 1e-4),
  ],
  ["adam positional", () => optim.adam(0.05, 0.8, 0.99, 1e-3, 1e-4), () => refAdam(0.05, 0.8, 0.99, 1e-3, 1e-4)],
  ["nadam", () => optim.nadam(0.1), () => refAdam(0.1, 0.9, 0.999, 1e-8, 0, true)],
  ["adam with schedule", () => optim.adam(warm), () => refAdam(warmRef)],
  ["adamw", () => optim.adamw(0.1, { weightDecay: 0.05 }), () => refAdamw(0.1, 0.05)],
  [
    "adamw masked",
    () => optim.adamw(0.1, { weightDecay: 0.05, mask: { w: true, b: false } }),
    () => refAdamw(0.1, 0.05, false),
  ],
  [
    "adamw mask fn",
    () => optim.adamw(0.1, { weightDecay: 0.05, mask: (p: unknown) => tree.map(() => true, p) }),
    () => refAdamw(0.1, 0.05),
  ],
  ["rmsprop", () => optim.rmsprop(0.01), () => refRmsprop(0.01, 0.9, 1e-8, false, null)],
  [
    "rmsprop centered momentum",
    () => optim.rmsprop(0.01, { centered: true, momentum: 0.5, eps: 1e-4 }),
    () => refRmsprop(0.01, 0.9, 1e-4, true, 0.5),
  ],
  ["adagrad", () => optim.adagrad(0.1), () => refAdagrad(0.1, 0.1, 1e-7)],
  ["lamb", () => optim.lamb(0.1, { weightDecay: 0.01 }), () => refLamb(0.1, 0.01)],
  [
    "chain clipByGlobalNorm adam",
    () => optim.chain(optim.clipByGlobalNorm(1.0), optim.adam(0.1)),
    () => refClipAdam(1.0, 0.1),
  ],
];

function compare(got: { w: Array; b: Array }[], want: Flat[], rtol: number, atol: number, name: string): void {
  want.forEach((wp, s) => {
    for (const k of KEYS) {
      const g = got[s][k];
      assert.deepEqual(g.shape, [wp[k].length]);
      const vals = g.tolist() as number[];
      vals.forEach((v, i) => {
        const e = wp[k][i];
        assert.ok(
          Math.abs(v - e) <= atol + rtol * Math.abs(e),
          `${name}: step ${s + 1} ${k}[${i}] = ${v}, expected ${e}`,
        );
      });
    }
  });
}

const STEPS = 4;
for (const [name, mk, ref] of CASES) {
  test(`${name}: float32 steps match the float64 reference`, () => {
    const got = runOpt(mk(), "float32", STEPS);
    assert.equal(got[0].w.dtype, "float32");
    compare(got, runRef(ref(), STEPS), 2e-5, 2e-6, name);
  });
  test(`${name}: float64 steps match the reference to 1e-12 (enableX64)`, () => {
    config.update("enableX64", true);
    try {
      const got = runOpt(mk(), "float64", STEPS);
      assert.equal(got[0].w.dtype, "float64");
      compare(got, runRef(ref(), STEPS), 1e-12, 1e-14, name);
    } finally {
      config.update("enableX64", false);
    }
  });
  test(`${name}: jit(step) equals the eager step`, () => {
    const eager = runOpt(mk(), "float32", 3);
    const jitted = runOpt(mk(), "float32", 3, true);
    eager.forEach((e, i) => {
      for (const k of KEYS)
        assertClose(jitted[i][k], e[k], { rtol: 1e-6, atol: 1e-7, msg: `${name} step ${i + 1} ${k}` });
    });
  });
}

// ---------------------------------------------------------------- state layout and counts

test("adam state: int32 count, mu/nu pytrees like params; chain state is a list", () => {
  const p = mkParams("float32");
  const opt = optim.adam(0.1);
  const s0 = opt.init(p) as [{ count: Array; mu: { w: Array }; nu: { w: Array } }, unknown];
  assert.equal(s0.length, 2);
  assert.equal(s0[0].count.dtype, "int32");
  assert.deepEqual(s0[0].count.shape, []);
  assert.equal(s0[0].count.item(), 0);
  assert.deepEqual(s0[0].mu.w.tolist(), [0, 0, 0]);
  const [, s1] = opt.update(gradsOf(p), s0, p) as [unknown, [{ count: Array }]];
  assert.equal(s1[0].count.item(), 1);
  assert.equal(
    tree.leaves(s1).every((l) => l instanceof Array),
    true,
  );
});

test("muDtype keeps the first moment in bfloat16; nu keeps the params dtype", () => {
  const p = mkParams("float32");
  const opt = optim.scaleByAdam({ muDtype: "bfloat16" });
  const s = opt.init(p) as { mu: { w: Array }; nu: { w: Array } };
  assert.equal(s.mu.w.dtype, "bfloat16");
  const [u, s1] = opt.update(gradsOf(p), s, p) as [{ w: Array }, { mu: { w: Array }; nu: { w: Array } }];
  assert.equal(s1.mu.w.dtype, "bfloat16");
  assert.equal(s1.nu.w.dtype, "float32");
  assert.equal(u.w.dtype, "float32");
});

test("safeIncrement saturates at the int32 maximum", () => {
  const c = optim.safeIncrement(jnp.array(2147483647, { dtype: "int32" }));
  assert.equal(c.item(), 2147483647);
  assert.equal(optim.safeIncrement(jnp.array(5, { dtype: "int32" })).item(), 6);
});

test("applyUpdates casts back to each param's dtype", () => {
  const p = { a: jnp.array([1, 2], { dtype: "bfloat16" }), n: null, b: [jnp.array([1.5], { dtype: "float32" })] };
  const u = { a: jnp.array([0.5, 0.5], { dtype: "float32" }), n: null, b: [jnp.array([1], { dtype: "float32" })] };
  const r = optim.applyUpdates(p, u);
  assert.equal(r.a.dtype, "bfloat16");
  assert.deepEqual(r.a.tolist(), [1.5, 2.5]);
  assert.equal(r.n, null);
  assert.deepEqual(r.b[0].tolist(), [2.5]);
});

test("clip, scale, clipByGlobalNorm and globalNorm", () => {
  const g = { x: jnp.array([3, -4], { dtype: "float32" }), y: jnp.array([[0, 12]], { dtype: "float32" }) };
  assert.equal(optim.globalNorm(g).item(), 13);
  const [c] = optim.clip(2).update(g, {});
  assert.deepEqual((c as typeof g).x.tolist(), [2, -2]);
  const [s] = optim.scale(0.5).update(g, {});
  assert.deepEqual((s as typeof g).y.tolist(), [[0, 6]]);
  const [n] = optim.clipByGlobalNorm(6.5).update(g, {});
  assertClose((n as typeof g).x, jnp.array([1.5, -2], { dtype: "float32" }));
  const [same] = optim.clipByGlobalNorm(20).update(g, {});
  assert.deepEqual((same as typeof g).x.tolist(), [3, -4]);
});

test("scaleBySchedule uses the count before incrementing it; weight decay may be a schedule", () => {
  const opt = optim.scaleBySchedule((c) => jnp.add(c, 1));
  let s = opt.init(null);
  const g = jnp.array([1, 2], { dtype: "float32" });
  const seen: number[][] = [];
  for (let i = 0; i < 3; i++) {
    const [u, ns] = opt.update(g, s);
    seen.push((u as Array).tolist() as number[]);
    s = ns;
  }
  assert.deepEqual(seen, [
    [1, 2],
    [2, 4],
    [3, 6],
  ]);
  const wd = optim.addDecayedWeights(optim.linearSchedule(1, 0, 2));
  const p = jnp.array([10], { dtype: "float32" });
  const z = jnp.array([0], { dtype: "float32" });
  let ws = wd.init(p);
  const outs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const [u, ns] = wd.update(z, ws, p);
    outs.push((u as Array).item() as number);
    ws = ns;
  }
  assert.deepEqual(outs, [10, 5, 0]);
});

test("an MLP-sized pytree trains under jit with chain(clipByGlobalNorm, adamw with a schedule)", () => {
  const mk = (r: number, c: number, s: number) =>
    jnp.reshape(jnp.sin(jnp.multiply(jnp.arange(r * c, { dtype: "float32" }), s)), c === 0 ? [r] : [r, c]);
  const params = {
    layers: [
      { w: jnp.multiply(mk(4, 8, 0.7), 0.5), b: jnp.zeros([8], "float32") },
      { w: jnp.multiply(mk(8, 3, 1.3), 0.5), b: jnp.zeros([3], "float32") },
    ],
  };
  const x = mk(5, 4, 0.31);
  const y = mk(5, 3, 0.17);
  type P = typeof params;
  const loss = (p: P): Array => {
    const h = jnp.tanh(jnp.add(jnp.matmul(x, p.layers[0].w), p.layers[0].b));
    const o = jnp.add(jnp.matmul(h, p.layers[1].w), p.layers[1].b);
    return jnp.mean(jnp.square(jnp.subtract(o, y)));
  };
  const opt = optim.chain(
    optim.clipByGlobalNorm(1.0),
    optim.adamw(optim.cosineDecaySchedule(0.05, 10), { weightDecay: 1e-3 }),
  );
  const step = jit((p: P, s: unknown): [P, unknown, Array] => {
    const g = grad(loss)(p) as P;
    const [u, ns] = opt.update(g, s, p);
    return [optim.applyUpdates(p, u), ns, loss(p)];
  });
  let p = params,
    s = opt.init(params);
  const losses: number[] = [];
  for (let i = 0; i < 5; i++) {
    let l: Array;
    [p, s, l] = step(p, s);
    losses.push(l.item() as number);
  }
  assert.ok(losses[4] < losses[0], `loss should decrease: ${losses}`);
  assert.ok(tree.structure(p).equals(tree.structure(params)));
  assert.deepEqual(p.layers[0].w.shape, [4, 8]);
  // the count in every stateful link of the chain advanced 5 times
  const counts = tree.leaves(s).filter((l) => l instanceof Array && l.dtype === "int32") as Array[];
  assert.ok(counts.length >= 2);
  for (const c of counts) assert.equal(c.item(), 5);
});

test("addDecayedWeights takes a positional mask (a plain object) or a mask function; masked leaves pass through", () => {
  const p = mkParams("float32");
  const g = { w: jnp.zeros([3], "float32"), b: jnp.zeros([2], "float32") };
  for (const t of [
    optim.addDecayedWeights(0.5, { w: true, b: false }),
    optim.addDecayedWeights({ weightDecay: 0.5, mask: () => ({ w: true, b: false }) }),
  ]) {
    const [u] = t.update(g, t.init(p), p) as [typeof g, unknown];
    assert.deepEqual(u.w.tolist(), [0.5, -1, 1.5]);
    assert.deepEqual(u.b.tolist(), [0, 0]);
  }
  // a masked stateful transformation keeps state only for the unmasked leaves
  const m = optim.masked(optim.trace(0.9), { w: false, b: true });
  const st = m.init(p) as { innerState: { trace: { w: unknown; b: Array } } };
  assert.equal(st.innerState.trace.w, null);
  assert.deepEqual(st.innerState.trace.b.shape, [2]);
  const [u2] = m.update(gradsOf(p), st, p) as [typeof g, unknown];
  assertClose(u2.w, gradsOf(p).w);
});

test("hyperparameters may be traced Arrays (an optimizer built inside jit)", () => {
  const p = mkParams("float32");
  const f = jit((q: { w: Array; b: Array }, lr: Array, b1: Array) => {
    const opt = optim.adam(lr, { b1 });
    const [u] = opt.update(gradsOf(q), opt.init(q), q);
    return optim.applyUpdates(q, u);
  });
  const got = f(p, jnp.array(0.1, { dtype: "float32" }), jnp.array(0.8, { dtype: "float32" }));
  const want = runRef(refAdam(0.1, 0.8), 1)[0];
  for (const k of KEYS)
    (got[k].tolist() as number[]).forEach((v, i) => assert.ok(Math.abs(v - want[k][i]) < 1e-6, `${k}[${i}]`));
});

// ---------------------------------------------------------------- errors

const throwsWith = (f: () => unknown, ...pats: (string | RegExp)[]): void => {
  assert.throws(f, (e: Error) => {
    for (const p of pats)
      assert.match(e.message, typeof p === "string" ? new RegExp(p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")) : p);
    return true;
  });
};

test("errors name the function and the problem", () => {
  throwsWith(() => optim.chain(optim.sgd(0.1), {} as optim.GradientTransformation), "optim.chain", "argument 1");
  throwsWith(() => optim.adam(0.1).update(gradsOf(mkParams("float32")), {}), "optim.chain", "init");
  throwsWith(
    () => optim.adamw(0.1).update(gradsOf(mkParams("float32")), optim.adamw(0.1).init(mkParams("float32"))),
    "optim.addDecayedWeights",
    "params",
  );
  throwsWith(() => optim.adam(0.1, { beta1: 0.9 } as never), "optim.adam", "beta1");
  throwsWith(() => optim.sgd("fast" as never), "optim.scaleByLearningRate", "learningRate");
  throwsWith(() => optim.cosineDecaySchedule(1, 0), "optim.cosineDecaySchedule", "positive");
  throwsWith(() => optim.piecewiseConstantSchedule(1, { 10: -1 }), "optim.piecewiseConstantSchedule", "non-negative");
  throwsWith(() => optim.joinSchedules([optim.constantSchedule(1)], [3]), "optim.joinSchedules", "boundaries");
  throwsWith(() => optim.masked(optim.scale(2), { w: true }).init(mkParams("float32")), "optim.masked", "keys");
});
