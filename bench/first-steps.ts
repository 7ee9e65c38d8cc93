/** @file Bench: an MLP training loop without donateArgnums, first 40 steps' mean time against the steady state (outputs in fresh memory vs recycled buffers). */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as jax from "../src/index.js";
import { type Array, numpy as jnp } from "../src/index.js";
import { bufferPoolStats } from "../src/backends/onnx/buffer-pool.js";
import { MLP } from "./harness.js";
import { type Params, mlpInputs, mlpLoss } from "./jaxts-cases.js";

export interface FirstSteps {
  /** Mean ms of steps 1..40 after the compiling call. */
  firstMs: number;
  /** Mean ms of the last `steadySteps` steps. */
  steadyMs: number;
  ratio: number;
  steadySteps: number;
  /** Most bytes the pool held for reuse (JS pool + native arena free list) / bytes handed out and not yet collected, over the run. */
  poolPeakRatio: number;
}

/**
 * The loop users write first: `[loss, params] = step(params, x, y)` in a synchronous loop, params not donated,
 * so every step's outputs need memory the garbage collector has not yet handed back.
 */
export function measureFirstSteps(total = 600, steadySteps = 200): FirstSteps {
  const inputs = mlpInputs();
  const { x, y } = inputs;
  let { params } = inputs;
  const step = jax.jit(function mlpStepNoDonation(p: Params, xs: Array, ys: Array): [Array, Params] {
    const [loss, g] = jax.valueAndGrad(mlpLoss)(p, xs, ys) as [Array, Params];
    const upd = (w: Array, gw: Array) => jnp.subtract(w, jnp.multiply(gw, MLP.lr));
    return [loss, { w1: upd(p.w1, g.w1), b1: upd(p.b1, g.b1), w2: upd(p.w2, g.w2), b2: upd(p.b2, g.b2) }];
  });
  [, params] = step(params, x, y); // trace + compile: not a training step's cost
  const times: number[] = [];
  let peak = 0;
  for (let i = 0; i < total; i++) {
    const t0 = performance.now();
    const [loss, p] = step(params, x, y);
    params = p;
    loss.blockUntilReady();
    loss.dispose();
    times.push(performance.now() - t0);
    const s = bufferPoolStats();
    const held = s.pooledBytes + s.arenaFreeBytes,
      out = s.arenaInUseBytes + s.watchedBytes;
    if (out > 0) peak = Math.max(peak, held / out);
  }
  const mean = (a: number[]) => a.reduce((u, v) => u + v, 0) / a.length;
  const firstMs = mean(times.slice(0, 40)),
    steadyMs = mean(times.slice(total - steadySteps));
  return { firstMs, steadyMs, ratio: firstMs / steadyMs, steadySteps, poolPeakRatio: peak };
}

/** One line for the console and RESULTS.md. */
export function formatFirstSteps(r: FirstSteps): string {
  return (
    `MLP 784-512-10 b128 train step without donateArgnums, first 40 steps vs steady state (last ${r.steadySteps} steps): ` +
    `${r.firstMs.toFixed(2)} ms vs ${r.steadyMs.toFixed(2)} ms per step = ${r.ratio.toFixed(2)}x (target <= 1.3x: ${r.ratio <= 1.3 ? "met" : "MISSED"}); ` +
    `pool held at most ${r.poolPeakRatio.toFixed(2)}x the bytes of its buffers in use`
  );
}

/**
 * Measures in a fresh Node process (a cold buffer pool and a small heap, as a user's training script starts),
 * not in the benchmark's process that has loaded every contender.
 */
export function measureFirstStepsInChild(): FirstSteps {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--json"], {
    encoding: "utf8",
    timeout: 600_000,
  });
  if (r.status !== 0)
    throw new Error(
      `first-steps child failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr ?? "").trim().split("\n").slice(-3).join(" | ")}`,
    );
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as FirstSteps;
}

// `node dist/bench/first-steps.js [--json]`
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const r = measureFirstSteps();
  console.log(process.argv.includes("--json") ? JSON.stringify(r) : formatFirstSteps(r));
}
