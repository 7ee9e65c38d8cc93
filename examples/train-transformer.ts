/** @file Trains the small Transformer LM data x tensor parallel over a (2, 2) mesh of CPU devices, with remat and adamw. */
import { config } from "../src/core/config.js";
config.update("numCpuDevices", 4);
import { type Array, jit, makeMesh, numpy as jnp, optim, profiler } from "../src/index.js";
import { type TransformerConfig, initParams, makeShardedTrainStep } from "../src/models/transformer.js";

const cfg: TransformerConfig = { vocab: 32, dModel: 32, heads: 4, layers: 2, seq: 16, ff: 64 };
const mesh = makeMesh([2, 2], ["data", "model"]);
const opt = optim.adamw(optim.warmupCosineDecaySchedule(0, 3e-3, 10, 200, 3e-4));
// batch split over "data", attention heads and MLP units split over "model" (Megatron-style), one jit for the step
const step = jit(makeShardedTrainStep(cfg, opt, mesh));

// task: predict the token three positions back
const toks = globalThis.Array.from({ length: 16 }, (_, b) =>
  globalThis.Array.from({ length: cfg.seq }, (_, i) => (b * 5 + i * 7) % cfg.vocab),
);
const x = jnp.array(toks, { dtype: "int32" });
const y = jnp.array(
  toks.map((r) => r.map((_, i) => r[Math.max(0, i - 3)])),
  { dtype: "int32" },
);

let params = initParams(cfg, 0);
let state = opt.init(params);
let l: Array = jnp.zeros([]);
// JAXTS_TRACE_DIR=dir: trace the first 10 steps (view with `jaxts trace summary|view dir`)
const traceDir = process.env.JAXTS_TRACE_DIR;
if (traceDir) profiler.startTrace(traceDir);
const t0 = performance.now();
for (let i = 1; i <= 200; i++) {
  {
    using _ = traceDir && i <= 10 ? new profiler.StepTraceAnnotation("train", { stepNum: i }) : null;
    [l, params, state] = step(params, state, x, y) as [Array, typeof params, typeof state];
    if (traceDir && i <= 10) l.item();
  }
  if (traceDir && i === 10) console.log(`trace written to ${profiler.stopTrace()}`);
  if (i % 25 === 0 || i === 1) console.log(`step ${String(i).padStart(3)}  loss ${(l.item() as number).toFixed(4)}`);
}
console.log(`200 steps in ${((performance.now() - t0) / 1000).toFixed(2)} s on mesh ${mesh}`);
