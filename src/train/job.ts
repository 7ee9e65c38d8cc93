/**
 * @file The training job (`jaxts train`, what `npm start` runs): a small GPT learns n-digit addition on a data x tensor
 * mesh of CPU devices; progress, held-out exact-match evaluations, predictions, an atomic checkpoint, the loss curve
 * (SVG) and a profiler trace of a few steps go to the output directory.
 */
import "../index.js"; // the package entry: registers the execution backends the job runs on
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Array } from "../core/array.js";
import { config as jaxConfig } from "../core/config.js";
import * as jnp from "../numpy/index.js";
import * as optim from "../optim/index.js";
import { jit } from "../transforms/api.js";
import { makeMesh } from "../parallel/mesh.js";
import type { Mesh } from "../parallel/mesh.js";
import * as profiler from "../profiler/index.js";
import {
  type GptConfig,
  type GptParams,
  type GptShardingSpec,
  gptForward,
  gptParamSpecs,
  initGpt,
  makeGptTrainStep,
} from "../models/gpt.js";
import { ADDITION_VOCAB, AdditionTask, answerText, exactMatch, greedyAnswers, promptText } from "./addition.js";
import { type TrainConfig, paddedVocab, validateConfig } from "./config.js";
import { loadTrainState, placeOnMesh, saveTrainState } from "./checkpoint.js";
import { lossCurveSvg } from "./loss-svg.js";
import {
  type LayeredGpt,
  fromLayered,
  gptLayeredLoss,
  layeredSpecs,
  convertOptState,
  keepShardings,
  makeJobBatches,
  optStateToLayered,
  optStateToStacked,
  toLayered,
} from "./engines.js";
import {
  type EdgeLayout,
  type GptPipeParams,
  gptEdgeLayout,
  gptFromPipe,
  gptPipeSpecs,
  gptToPipe,
  makeGptPipeEdgeStep,
} from "./pipeline-edges.js";
import { makeGptZeroPipelineStep, zeroPipelineShardState } from "./zero-pipeline.js";
import {
  type ZeroPipelineTensorState,
  makeGptZeroPipelineTensorStep,
  zeroPipelineTensorFullOptState,
  zeroPipelineTensorGatherParams,
  zeroPipelineTensorRestore,
  zeroPipelineTensorShardState,
} from "./zero-pipeline-tensor.js";
import {
  type ZeroTensorState,
  makeZeroTensorTrainStep,
  zeroFullOptState,
  zeroPlaceOptState,
  zeroTensorFullOptState,
  zeroTensorGatherParams,
  zeroTensorRestore,
  zeroTensorShardState,
} from "../models/zero-tensor.js";
import {
  type LayeredLoss,
  type ZeroStage,
  type ZeroState,
  makeZeroTrainStep,
  zeroGatherParams,
  zeroMemoryReport,
  zeroShardState,
} from "../models/zero.js";

/** Where the job reports: lines (and, on a terminal, a progress bar rewritten in place). */
export interface JobOutput {
  line(s: string): void;
  /** Rewrites the progress bar (TTY only); null when progress goes out as plain lines. */
  bar: ((s: string) => void) | null;
}

/** Options of runJob beyond the config. */
export interface JobOptions {
  /** Output directory (created). */
  out: string;
  /** A run directory or checkpoint file to continue from. */
  resume?: string | null;
  /** Where progress goes (default: stdout, a bar on a TTY unless CI is set). */
  output?: JobOutput;
  /** Stop after this many steps of this invocation (tests: simulate an interrupted run). */
  stopAfter?: number;
  /** Write the profiler trace (default true when run.trace_steps > 0). */
  trace?: boolean;
}

/** What the job did. */
export interface JobResult {
  losses: number[];
  evals: { step: number; accuracy: number }[];
  finalAccuracy: number | null;
  steps: number;
  seconds: number;
  cpuSeconds: number;
  checkpoint: string | null;
  out: string;
  params: GptParams;
  /** The optimizer state after the last step, in the checkpoint's layout (the stacked GPT's shapes). */
  optState: optim.OptState;
  /** The pipelined job without ZeRO: its parameters and optimizer state in the per-stage layout, as placed. */
  pipeline?: { params: GptPipeParams; optState: optim.OptState };
}

/** The job's model, mesh and step built from a validated config. */
export interface JobSetup {
  task: AdditionTask;
  model: GptConfig;
  mesh: Mesh;
  spec: GptShardingSpec;
  opt: optim.GradientTransformation;
}

/** The optimizer: clip by global norm, then adamw with warmup and the configured decay. */
export function makeOptimizer(c: TrainConfig): optim.GradientTransformation {
  const o = c.optimizer,
    steps = c.run.steps;
  const warm = Math.min(o.warmup, steps);
  const schedule =
    o.decay === "cosine"
      ? optim.warmupCosineDecaySchedule(0, o.lr, warm, Math.max(steps, warm + 1), o.end_lr)
      : o.decay === "linear"
        ? optim.joinSchedules(
            [
              optim.linearSchedule(0, o.lr, Math.max(warm, 1)),
              optim.linearSchedule(o.lr, o.end_lr, Math.max(1, steps - warm)),
            ],
            [warm],
          )
        : optim.joinSchedules([optim.linearSchedule(0, o.lr, Math.max(warm, 1)), optim.constantSchedule(o.lr)], [warm]);
  const adamw = optim.adamw(schedule, { weightDecay: o.weight_decay });
  return o.clip > 0 ? optim.chain(optim.clipByGlobalNorm(o.clip), adamw) : adamw;
}

/**
 * Validates the config against the device count and builds the task, model, mesh and optimizer. The CPU devices
 * must already exist (config numCpuDevices = the product of the parallel sizes; prepareDevices does it).
 */
export function setupJob(c: TrainConfig, devices: number): JobSetup {
  validateConfig(c, { devices, spmdRuntime: jaxConfig.spmdRuntime }, ADDITION_VOCAB);
  const ps = c.parallel_strategy;
  const task = new AdditionTask(c.data.digits, c.data.seed, c.data.held_out);
  const model: GptConfig = {
    vocab: paddedVocab(ADDITION_VOCAB),
    dModel: c.model.d_model,
    heads: c.model.heads,
    layers: c.model.layers,
    seq: task.layout.seq,
    ff: c.model.ff,
    tied: c.model.tied_embeddings,
  };
  // data x model (ZeRO shards over data, also when model > 1); pipeline: pipe x data x model
  const mesh =
    ps.pipeline_stages > 1
      ? makeMesh([ps.pipeline_stages, ps.data_parallel, ps.tensor_parallel], ["pipe", "data", "model"])
      : makeMesh([ps.data_parallel, ps.tensor_parallel], ["data", "model"]);
  const spec: GptShardingSpec = c.sharding_spec;
  return { task, model, mesh, spec, opt: makeOptimizer(c) };
}

/**
 * Sets the process up for a job on `devices` CPU devices with the device runtime (one thread per device running its
 * program; ORT intra-op threads 1, since the devices already use the cores), unless the user chose the emulation.
 * Must run before the first device use.
 */
export function prepareDevices(devices: number): void {
  if (jaxConfig.numCpuDevices !== devices) jaxConfig.update("numCpuDevices", devices);
  // an explicit choice (JAXTS_SPMD_RUNTIME=emulation, config.update) is kept; "auto" becomes the device runtime
  if (jaxConfig.spmdRuntime === "auto") jaxConfig.update("spmdRuntime", "devices");
  if (jaxConfig.intraOpThreads === 0) jaxConfig.update("intraOpThreads", 1);
}

const fmtTime = (s: number): string => {
  if (!Number.isFinite(s)) return "?";
  const m = Math.floor(s / 60),
    r = Math.round(s - 60 * m);
  return m > 0 ? `${m}m${String(r).padStart(2, "0")}s` : `${r}s`;
};

/** The default output: a bar on a TTY (unless CI is set), plain lines otherwise. */
export function stdoutOutput(): JobOutput {
  const tty = process.stdout.isTTY === true && !process.env.CI;
  return {
    line: (s) => process.stdout.write(tty ? `\r\x1b[K${s}\n` : `${s}\n`),
    bar: tty ? (s) => process.stdout.write(`\r\x1b[K${s}`) : null,
  };
}

/** The progress text: [####....] step, loss, tokens/s, ETA. */
export function progressText(step: number, total: number, loss: number, tokPerSec: number, eta: number): string {
  const w = 24,
    f = Math.round((w * step) / total);
  return `[${"#".repeat(f)}${".".repeat(w - f)}] step ${step}/${total}  loss ${loss.toFixed(4)}  ${Math.round(tokPerSec)} tok/s  ETA ${fmtTime(eta)}`;
}

/** Runs the job described by a validated config on prepared devices; returns the losses, evaluations and paths. */
export function runJob(c: TrainConfig, setup: JobSetup, opts: JobOptions): JobResult {
  const { task, model, mesh, spec, opt } = setup;
  const out = opts.output ?? stdoutOutput();
  const t0 = performance.now(),
    cpu0 = process.cpuUsage();
  mkdirSync(opts.out, { recursive: true });
  const ps = c.parallel_strategy;
  const zero = ps.zero_stage as ZeroStage;
  const specs = gptParamSpecs(model, spec);
  let params = initGpt(model, c.run.seed);
  // checkpoints hold the optimizer state in the parameters' shapes (stage 0's layout) over the stacked GPT, whatever
  // the stage and mesh that wrote them; each engine lays it out its own way (a resume at another stage reshards)
  let state = opt.init(params) as optim.OptState;
  let start = 0;
  let losses: number[] = [];
  if (opts.resume) {
    const r = loadTrainState(opts.resume, params, state);
    if (r.step > c.run.steps)
      throw new Error(`train: the checkpoint in ${opts.resume} is at step ${r.step}, past run.steps (${c.run.steps})`);
    ({ params, optState: state, step: start, losses } = r);
    out.line(
      `resumed from ${opts.resume} at step ${start}${r.zeroStage !== zero ? ` (written at ZeRO stage ${r.zeroStage}, resharded to stage ${zero})` : ""}`,
    );
  }
  const tp = ps.tensor_parallel;
  // ZeRO over 'data' alone (zero.ts) or ZeRO x tensor parallel (zero-tensor.ts: each Megatron block sharded again)
  let zs: ZeroState<LayeredGpt> | null = null;
  let zt: ZeroTensorState<LayeredGpt> | null = null;
  // ZeRO x pipeline (x tensor parallel: zero-pipeline-tensor.ts, one engine): each stage's (Megatron) blocks and
  // every optimizer-state leaf sharded over 'data' within the stage
  let zq: ZeroPipelineTensorState | null = null;
  // the pipeline without ZeRO: parameters and optimizer state in the per-stage layout (pipeline-edges.ts)
  let pipe: { layout: EdgeLayout; params: GptPipeParams; state: optim.OptState } | null = null;
  if (zero && ps.pipeline_stages > 1) {
    zq =
      tp > 1
        ? zeroPipelineTensorShardState(params, opt, mesh, model, spec, zero as 1 | 2 | 3)
        : zeroPipelineShardState(params, opt, mesh, zero as 1 | 2 | 3);
    if (opts.resume) zq = zeroPipelineTensorRestore(zq.layout, params, state);
  } else if ((zero || ps.overlap) && tp === 1) {
    // with overlap, stage 0 also runs on the ZeRO engine (its gradient all-reduce bucketed per layer and overlapped)
    const layered = toLayered(params);
    zs = zeroShardState(layered, opt, mesh, { stage: zero });
    if (opts.resume) {
      const { slots } = zeroFullOptState(zs, opt, layered);
      const optState = zeroPlaceOptState(zs.layout, optStateToLayered(opt, state, params), slots);
      zs = { params: zs.params, optState, layout: zs.layout };
    }
  } else if (zero) {
    const layered = toLayered(params);
    zt = zeroTensorShardState(layered, opt, mesh, {
      stage: zero as 1 | 2 | 3,
      tensorSpecs: layeredSpecs(model, spec),
    });
    if (opts.resume) zt = zeroTensorRestore(zt.layout, layered, optStateToLayered(opt, state, params));
  } else if (ps.pipeline_stages > 1) {
    // each stage's devices hold its layers, stage 0's the embeddings, the last stage's the final norm and head (the
    // checkpoint's GptParams layout packed per stage), and the optimizer state sits with its parameters
    const layout = gptEdgeLayout(model, ps.pipeline_stages);
    const pipeSpecs = gptPipeSpecs(model, spec);
    const toPipe = (p: GptParams) => placeOnMesh(gptToPipe(layout, p), pipeSpecs, mesh);
    const pp = toPipe(params);
    pipe = { layout, params: pp, state: convertOptState(state, params, opt.init(pp), pp, toPipe) };
  } else {
    // each device holds its block of the parameters in this mesh's layout (a checkpoint from another mesh reshards)
    params = placeOnMesh(params, specs, mesh);
  }
  const remat = c.run.remat;
  const microbatches = ps.microbatches || ps.pipeline_stages;
  const zeroPipeStep = zq
    ? (tp > 1 ? makeGptZeroPipelineTensorStep : makeGptZeroPipelineStep)(model, opt, zq.layout, {
        stage: zero as 1 | 2 | 3,
        microbatches,
        schedule: ps.schedule,
        remat,
      })
    : null;
  // the loop replaces params and state with each step's result, so the steps consume them (donateArgnums: their
  // device buffers go back to the pools at once instead of when the collector finds the arrays)
  const plainStep =
    zs || zt || zq || pipe ? null : jit(makeGptTrainStep(model, opt, mesh, spec, { remat }), { donateArgnums: [0, 1] });
  const pipeStep = pipe
    ? jit(makeGptPipeEdgeStep(model, opt, mesh, { microbatches, remat, spec, schedule: ps.schedule }), {
        donateArgnums: [0, 1],
      })
    : null;
  // the loop replaces zs with each step's result: the step may consume it (its buffers become the next outputs)
  const zeroStep = zs
    ? makeZeroTrainStep(gptLayeredLoss(model), opt, mesh, { stage: zero, overlap: ps.overlap, donate: true })
    : null;
  const zeroTpStep = zt
    ? makeZeroTensorTrainStep<LayeredGpt, [Array, Array, Array]>(
        gptLayeredLoss(model, "model") as LayeredLoss<unknown, unknown, [Array, Array, Array]>,
        opt,
        mesh,
        { stage: zero as 1 | 2 | 3 },
      )
    : null;
  /** The full parameters in the GPT's layout (ZeRO: gathered). */
  const fullParams = (): GptParams =>
    zs
      ? fromLayered(zeroGatherParams(zs))
      : zt
        ? fromLayered(zeroTensorGatherParams(zt))
        : zq
          ? zeroPipelineTensorGatherParams(zq)
          : pipe
            ? gptFromPipe(pipe.layout, pipe.params)
            : params;
  /** The optimizer state in the checkpoint's layout (the stacked GPT's shapes). */
  const fullOptState = (): optim.OptState => {
    if (zs) {
      const layered = zeroGatherParams(zs);
      return optStateToStacked(opt, zeroFullOptState(zs, opt, layered).full, layered);
    }
    if (zt) return optStateToStacked(opt, zeroTensorFullOptState(zt), zeroTensorGatherParams(zt));
    if (zq) return zeroPipelineTensorFullOptState(zq);
    if (pipe) {
      const { layout, params: pp } = pipe;
      const full = gptFromPipe(layout, pp);
      return convertOptState(pipe.state, pp, opt.init(full), full, (p) => gptFromPipe(layout, p));
    }
    return state;
  };
  const predict = jit((p: GptParams, t: Array) => jnp.argmax(gptForward(model, p, t), -1).astype("int32"));
  const evaluate = (): number => {
    const full = fullParams();
    const answers = greedyAnswers(task.layout, task.heldOut, (t) => predict(full, t));
    return exactMatch(task.layout, task.heldOut, answers);
  };
  const nParams = Object.values(flatSizes(fullParams())).reduce((a, b) => a + b, 0);
  out.line(
    `jaxts train: ${c.data.digits}-digit addition, GPT d_model ${model.dModel} x ${model.layers} layers (${nParams} params), ` +
      `mesh ${meshText(mesh)} on ${mesh.size} CPU device${mesh.size === 1 ? "" : "s"}${zero ? `, ZeRO stage ${zero}` : ""}${ps.overlap ? ", communication overlapped" : ""}` +
      `${ps.pipeline_stages > 1 ? `, ${ps.pipeline_stages} pipeline stages x ${microbatches} microbatches (${ps.schedule})` : ""}, batch ${c.data.batch_size}, ${c.run.steps} steps -> ${opts.out}`,
  );
  const mib = (b: number) => (b / 2 ** 20).toFixed(2);
  out.line(
    `memory per device (MiB in use / peak): ${zeroMemoryReport(mesh)
      .map((d) => `${d.device}: ${mib(d.bytesInUse)}/${mib(d.peakBytesInUse)}`)
      .join(", ")}`,
  );
  // each device builds only its rows of the global batch; the next batch is built while a step runs
  const batches = makeJobBatches(task, mesh, c.data.batch_size, start + 1);
  const tokensPerStep = c.data.batch_size * task.layout.seq;
  const evals: { step: number; accuracy: number }[] = [];
  const traceFrom = start + 2,
    traceTo = start + 1 + c.run.trace_steps;
  const tracing = (opts.trace ?? true) && c.run.trace_steps > 0;
  let checkpoint: string | null = null;
  const end = Math.min(c.run.steps, opts.stopAfter === undefined ? Infinity : start + opts.stopAfter);
  let tLast = performance.now(),
    timedSteps = 0,
    timedMs = 0;
  const logEvery = Math.max(1, Math.round(c.run.steps / 20));
  for (let i = start + 1; i <= end; i++) {
    if (tracing && i === traceFrom) profiler.startTrace(join(opts.out, "trace"));
    const b = batches.next();
    let loss: Array;
    {
      using _ =
        tracing && i >= traceFrom && i <= traceTo ? new profiler.StepTraceAnnotation("train", { stepNum: i }) : null;
      if (zs && zeroStep) [loss, zs] = zeroStep(zs, b.tokens, b.targets, b.mask);
      else if (zt && zeroTpStep) [loss, zt] = zeroTpStep(zt, b.tokens, b.targets, b.mask);
      else if (zq && zeroPipeStep) [loss, zq] = zeroPipeStep(zq, b.tokens, b.targets, b.mask);
      else if (pipe && pipeStep) {
        // the pipelined step is manual SPMD code, whose jit returns unplaced arrays: keep each leaf's sharding
        const [l, p, st] = pipeStep(pipe.params, pipe.state, b.tokens, b.targets, b.mask);
        [loss, pipe] = [l, { ...pipe, params: keepShardings(pipe.params, p), state: keepShardings(pipe.state, st) }];
      } else [loss, params, state] = plainStep!(params, state, b.tokens, b.targets, b.mask);
      if (i < end) batches.prefetch(); // the dispatch is asynchronous: build the next batch meanwhile
      losses.push(loss.item() as number);
    }
    if (tracing && i === traceTo) profiler.stopTrace();
    const now = performance.now();
    if (i > start + 1) {
      timedSteps++;
      timedMs += now - tLast; // the first step compiles; rates count the others
    }
    tLast = now;
    const rate = timedSteps ? (tokensPerStep * timedSteps * 1000) / timedMs : 0;
    const eta = timedSteps ? ((c.run.steps - i) * timedMs) / timedSteps / 1000 : NaN;
    const l = losses[losses.length - 1];
    if (!Number.isFinite(l))
      throw new Error(`train: the loss became ${l} at step ${i}; lower optimizer.lr or raise clip`);
    if (out.bar) out.bar(progressText(i, c.run.steps, l, rate, eta));
    else if (i % logEvery === 0 || i === start + 1 || i === end) out.line(progressText(i, c.run.steps, l, rate, eta));
    if (i % c.run.eval_every === 0 && i !== c.run.steps) {
      const acc = evaluate();
      evals.push({ step: i, accuracy: acc });
      out.line(`step ${i}: held-out exact match ${(acc * 100).toFixed(1)}% (${task.heldOut.length} problems)`);
    }
    if (i % c.run.checkpoint_every === 0 || i === end) {
      checkpoint = saveTrainState(opts.out, {
        params: fullParams(),
        optState: fullOptState(),
        step: i,
        losses,
        zeroStage: zero,
      });
      tLast = performance.now(); // checkpoint time is not step time
    }
  }
  let finalAccuracy: number | null = null;
  if (end === c.run.steps) {
    const shown = task.heldOut.slice(0, c.run.predictions);
    const full = fullParams();
    const answers = greedyAnswers(task.layout, shown, (t) => predict(full, t));
    finalAccuracy = evaluate();
    evals.push({ step: end, accuracy: finalAccuracy });
    out.line(
      `final held-out exact match: ${(finalAccuracy * 100).toFixed(1)}% of ${task.heldOut.length} problems never seen in training`,
    );
    shown.forEach((p, k) => {
      const got = answerText(answers[k]),
        want = String(p.a + p.b).padStart(c.data.digits + 1, "0");
      out.line(`  ${promptText(p, c.data.digits)}${got}  ${got === want ? "ok" : `(expected ${want})`}`);
    });
  }
  writeFileSync(
    join(opts.out, "loss.svg"),
    lossCurveSvg(losses, {
      title: `jaxts train: ${c.data.digits}-digit addition, mesh ${meshText(mesh)}`,
      evals,
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cu = process.cpuUsage(cpu0);
  const cpuSeconds = (cu.user + cu.system) / 1e6;
  writeFileSync(
    join(opts.out, "metrics.json"),
    JSON.stringify({ steps: end, losses, evals, finalAccuracy, seconds, cpuSeconds, config: c }, null, 1) + "\n",
  );
  out.line(
    `done in ${fmtTime(seconds)} (${cpuSeconds.toFixed(0)} CPU-s): ${opts.out}/{checkpoint.safetensors, loss.svg, metrics.json${tracing && end >= traceTo ? ", trace/" : ""}}`,
  );
  return {
    losses,
    evals,
    finalAccuracy,
    steps: end,
    seconds,
    cpuSeconds,
    checkpoint,
    out: opts.out,
    params: fullParams(),
    optState: fullOptState(),
    ...(pipe ? { pipeline: { params: pipe.params, optState: pipe.state } } : {}),
  };
}

/** The mesh as sizes and axis names, e.g. "2x2 (data x model)". */
const meshText = (m: Mesh): string => `${m.axisNames.map((a) => m.shape[a]).join("x")} (${m.axisNames.join(" x ")})`;

/** Element counts of a params tree's leaves, keyed by dotted path. */
function flatSizes(p: unknown, prefix = ""): Record<string, number> {
  if (p && typeof p === "object" && "shape" in p) return { [prefix]: (p as Array).size };
  const o: Record<string, number> = {};
  for (const [k, v] of Object.entries(p as object))
    if (v !== undefined) Object.assign(o, flatSizes(v, `${prefix}${k}.`));
  return o;
}
