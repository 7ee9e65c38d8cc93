/** @file Bench: a plain-jit MLP train step (784-512-10, batch 256, donated parameters) in a loop, async single-device dispatch against the synchronous path (JAXTS_SYNC_DISPATCH=1): reading the loss every step, every 10 steps, and with host work per step that dispatch now overlaps. */
import { fileURLToPath } from "node:url";
import { loadavg } from "node:os";
import * as jax from "../src/index.js";
import { type Array } from "../src/index.js";
import { asyncRunStats } from "../src/backends/onnx/async-run.js";
import { mlpProblem } from "./mlp-problem.js";

/** Busy host work of about `ms` milliseconds (a stand-in for preparing the next batch on the JS thread). */
function hostWork(ms: number): number {
  const end = performance.now() + ms;
  let s = 0;
  while (performance.now() < end) for (let i = 0; i < 1000; i++) s += Math.sqrt(i + s);
  return s;
}

export interface AsyncJitRow {
  mode: string;
  readEvery: number;
  hostMs: number;
  msPerStep: number;
  dispatched: number;
}

/** ms per step of `steps` steps after 20 warm-up steps: the loss read every `readEvery` steps, `hostMs` of host work per step. */
export function measureAsyncJit(readEvery: number, hostMs: number, steps = 200): AsyncJitRow {
  const { params: p0, xb, yb, loss } = mlpProblem(jax);
  const step = jax.jit(
    (p: Array[], x: Array, y: Array): [Array, Array[]] => {
      const [l, g] = jax.valueAndGrad(loss)(p, x, y) as [Array, Array[]];
      return [l, p.map((w, i) => jax.numpy.subtract(w, jax.numpy.multiply(g[i], 0.01)))];
    },
    { donateArgnums: 0 },
  );
  let params = p0.map((w) => jax.numpy.add(w, 0));
  const run = (n: number): void => {
    for (let i = 0; i < n; i++) {
      const [l, p] = step(params, xb, yb);
      params = p;
      if (hostMs > 0) hostWork(hostMs);
      if ((i + 1) % readEvery === 0) l.item();
      l.dispose();
    }
    params[0].blockUntilReady();
  };
  run(20);
  const d0 = asyncRunStats().dispatched;
  const t0 = performance.now();
  run(steps);
  const ms = (performance.now() - t0) / steps;
  return {
    mode: process.env.JAXTS_SYNC_DISPATCH === "1" ? "sync" : "async",
    readEvery,
    hostMs,
    msPerStep: ms,
    dispatched: asyncRunStats().dispatched - d0,
  };
}

// `node dist/bench/async-jit.js` (set JAXTS_SYNC_DISPATCH=1 for the synchronous path)
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const [readEvery, hostMs] of [
    [1, 0],
    [10, 0],
    [10, 1],
  ]) {
    const r = measureAsyncJit(readEvery, hostMs);
    console.log(
      `${r.mode}: MLP step (plain jit, donated params), loss read every ${readEvery} step(s), ${hostMs} ms host work/step: ` +
        `${r.msPerStep.toFixed(3)} ms/step (${r.dispatched} async runs; load ${loadavg()[0].toFixed(2)})`,
    );
  }
}
