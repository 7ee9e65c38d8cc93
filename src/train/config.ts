/**
 * @file The training job's config (the seed's hybrid-parallel shape: parallel_strategy, sharding_spec, model,
 * optimizer, data, run) from YAML or JSON, with defaults, and its validation before any work: every message names
 * the key and the fix.
 */
import { parse } from "yaml";
import { REMAT_POLICIES, type RematPolicy, SPEC_RANKS } from "../models/gpt.js";

/** A sharding_spec list: one mesh axis (or a list of axes, or null) per dimension. */
export type SpecList = (string | string[] | null)[];

export interface TrainConfig {
  parallel_strategy: {
    data_parallel: number;
    tensor_parallel: number;
    pipeline_stages: number;
    zero_stage: number;
    /** Pipeline microbatches per data shard (0: as many as pipeline_stages). */
    microbatches: number;
    /** Pipeline schedule: GPipe (autodiff of the forward) or 1F1B (activations bounded by the stage count). */
    schedule: "gpipe" | "1f1b";
    /**
     * Overlap communication with compute in the ZeRO engine (asynchronous collectives on a communication thread per
     * device; same values). Needs a spare core per device to pay: on a host without one it is slower.
     */
    overlap: boolean;
  };
  sharding_spec: { embeddings: SpecList; attention: SpecList; mlp: SpecList };
  model: { d_model: number; heads: number; layers: number; ff: number; tied_embeddings: boolean };
  optimizer: {
    name: "adamw";
    lr: number;
    warmup: number;
    decay: "cosine" | "linear" | "constant";
    end_lr: number;
    weight_decay: number;
    clip: number;
  };
  data: { task: "addition"; digits: number; batch_size: number; held_out: number; seed: number };
  run: {
    steps: number;
    eval_every: number;
    checkpoint_every: number;
    out: string | null;
    seed: number;
    remat: RematPolicy;
    trace_steps: number;
    predictions: number;
  };
}

/** The mesh axis names sharding_spec may name (a pipelined job's mesh is pipe x data x model, model of size 1). */
export const MESH_AXES = ["data", "model"] as const;

/** Defaults for every key a config may leave out. */
export const DEFAULTS: TrainConfig = {
  parallel_strategy: {
    data_parallel: 1,
    tensor_parallel: 1,
    pipeline_stages: 1,
    zero_stage: 0,
    microbatches: 0,
    schedule: "gpipe",
    overlap: false,
  },
  sharding_spec: { embeddings: [null, null], attention: [null, "model", null], mlp: [null, "model"] },
  model: { d_model: 64, heads: 4, layers: 2, ff: 256, tied_embeddings: true },
  optimizer: { name: "adamw", lr: 3e-3, warmup: 100, decay: "cosine", end_lr: 3e-4, weight_decay: 0.01, clip: 1 },
  data: { task: "addition", digits: 3, batch_size: 64, held_out: 1000, seed: 0 },
  run: {
    steps: 2000,
    eval_every: 500,
    checkpoint_every: 500,
    out: null,
    seed: 0,
    remat: "none",
    trace_steps: 3,
    predictions: 5,
  },
};

/** A config error: the message names the key and the fix. */
export class ConfigError extends Error {
  override name = "ConfigError";
}
const fail = (msg: string): never => {
  throw new ConfigError(`config: ${msg}`);
};

/** Levenshtein distance, for "did you mean" on unknown keys. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++)
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length][b.length];
}
const suggest = (key: string, known: readonly string[]): string => {
  const best = known.map((k) => [k, distance(key, k)] as const).sort((x, y) => x[1] - y[1])[0];
  return best && best[1] <= Math.max(2, key.length / 3)
    ? `did you mean '${best[0]}'?`
    : `known keys: ${known.join(", ")}`;
};

const isObj = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

/** Parses YAML (a superset of JSON) text into the raw config object. */
export function parseConfigText(text: string, what = "the config"): unknown {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (e) {
    throw new ConfigError(`config: ${what} is not valid YAML/JSON: ${(e as Error).message.split("\n")[0]}`);
  }
  if (raw === null || raw === undefined) return {};
  if (!isObj(raw)) fail(`${what} must be a mapping of sections (parallel_strategy, sharding_spec, model, ...)`);
  return raw;
}

/** A spec entry: null/None/~ (YAML null or the string "None"), an axis name, or a list of axis names. */
function specEntry(key: string, v: unknown): string | string[] | null {
  if (v === null || v === undefined || v === "None" || v === "none" || v === "null") return null;
  if (typeof v === "string") return v;
  if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "string")) return v as string[];
  return fail(`${key} must be a mesh axis name, a list of axis names, or None/null; got ${JSON.stringify(v)}`);
}

function checkNumber(key: string, v: unknown, kind: "int" | "posint" | "nonneg" | "pos" | "seed"): number {
  const n = v;
  const what = {
    int: "an integer",
    posint: "a positive integer",
    nonneg: "a non-negative number",
    pos: "a positive number",
    seed: "a non-negative integer",
  }[kind];
  if (typeof n !== "number" || !Number.isFinite(n)) return fail(`${key} must be ${what}, got ${JSON.stringify(v)}`);
  const ok =
    kind === "int"
      ? Number.isInteger(n)
      : kind === "posint"
        ? Number.isInteger(n) && n > 0
        : kind === "seed"
          ? Number.isInteger(n) && n >= 0
          : kind === "nonneg"
            ? n >= 0
            : n > 0;
  if (!ok) fail(`${key} must be ${what}, got ${n}`);
  return n;
}

type Field = "int" | "posint" | "nonneg" | "pos" | "seed" | "bool" | "spec" | "outdir" | readonly string[];
const SCHEMA: Record<keyof TrainConfig, Record<string, Field>> = {
  parallel_strategy: {
    data_parallel: "posint",
    tensor_parallel: "posint",
    pipeline_stages: "posint",
    zero_stage: "int",
    microbatches: "seed",
    schedule: ["gpipe", "1f1b"],
    overlap: "bool",
  },
  sharding_spec: { embeddings: "spec", attention: "spec", mlp: "spec" },
  model: { d_model: "posint", heads: "posint", layers: "posint", ff: "posint", tied_embeddings: "bool" },
  optimizer: {
    name: ["adamw"],
    lr: "pos",
    warmup: "seed",
    decay: ["cosine", "linear", "constant"],
    end_lr: "nonneg",
    weight_decay: "nonneg",
    clip: "nonneg",
  },
  data: { task: ["addition"], digits: "posint", batch_size: "posint", held_out: "posint", seed: "seed" },
  run: {
    steps: "posint",
    eval_every: "posint",
    checkpoint_every: "posint",
    out: "outdir",
    seed: "seed",
    remat: Object.keys(REMAT_POLICIES),
    trace_steps: "seed",
    predictions: "seed",
  },
};

/** Merges a raw config over the defaults, rejecting unknown sections/keys and values of the wrong type. */
export function resolveConfig(raw: unknown): TrainConfig {
  if (raw === null || raw === undefined) raw = {};
  if (!isObj(raw)) return fail(`the config must be a mapping of sections, got ${JSON.stringify(raw)}`);
  const sections = Object.keys(SCHEMA);
  const out = structuredClone(DEFAULTS) as unknown as Record<string, Record<string, unknown>>;
  for (const [sec, body] of Object.entries(raw)) {
    if (!(sec in SCHEMA)) fail(`unknown section '${sec}' (${suggest(sec, sections)})`);
    if (body === null) continue;
    if (!isObj(body)) return fail(`section '${sec}' must be a mapping of keys, got ${JSON.stringify(body)}`);
    const fields = SCHEMA[sec as keyof TrainConfig];
    for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
      const key = `${sec}.${k}`;
      const f = fields[k];
      if (f === undefined) fail(`unknown key '${key}' (${suggest(k, Object.keys(fields))})`);
      out[sec][k] = checkField(key, f, v);
    }
  }
  return out as unknown as TrainConfig;
}

function checkField(key: string, f: Field, v: unknown): unknown {
  if (typeof f !== "string") {
    if (typeof v !== "string" || !f.includes(v))
      fail(`${key} must be one of ${f.map((x) => `'${x}'`).join(", ")}, got ${JSON.stringify(v)}`);
    return v;
  }
  switch (f) {
    case "bool":
      if (typeof v !== "boolean") fail(`${key} must be true or false, got ${JSON.stringify(v)}`);
      return v;
    case "outdir":
      if (v !== null && (typeof v !== "string" || v === ""))
        fail(`${key} must be a directory path or null (runs/<timestamp>), got ${JSON.stringify(v)}`);
      return v;
    case "spec":
      if (!Array.isArray(v))
        fail(
          `${key} must be a list with one mesh axis or None per dimension, e.g. ['data', None]; got ${JSON.stringify(v)}`,
        );
      return (v as unknown[]).map((e, i) => specEntry(`${key}[${i}]`, e));
    default:
      return checkNumber(key, v, f);
  }
}

/** What validation needs besides the config: the device count (and the task's vocabulary and length). */
export interface ValidateContext {
  devices: number;
  /** The SPMD runtime the job will run on (config.spmdRuntime); overlap needs "devices". Unchecked when absent. */
  spmdRuntime?: string;
}

/** The shapes the specs describe, from a resolved config. */
export function specShapes(c: TrainConfig, vocab: number): Record<keyof TrainConfig["sharding_spec"], number[]> {
  const m = c.model;
  return {
    embeddings: [vocab, m.d_model],
    attention: [m.d_model, m.heads, m.d_model / m.heads],
    mlp: [m.d_model, m.ff],
  };
}

/** The model's vocabulary: the task's, padded to a multiple of 16 so that it splits over common mesh sizes. */
export const paddedVocab = (taskVocab: number): number => Math.ceil(taskVocab / 16) * 16;

/**
 * Checks a resolved config against the devices (before any work): the parallel sizes' product is the device count,
 * the specs name only mesh axes, are no longer than their arrays' ranks, use the tensor axis only where the model
 * splits (attention heads, MLP hidden units), and every sharded dimension, the heads, the MLP width and the batch
 * divide evenly. ZeRO combines with tensor parallelism, the pipeline with data and tensor parallelism, ZeRO 1-3 with the pipeline
 * (without tensor parallelism); ZeRO x pipeline x tensor parallelism is refused.
 */
export function validateConfig(c: TrainConfig, ctx: ValidateContext, taskVocab = 12): void {
  const ps = c.parallel_strategy;
  const { data_parallel: dp, tensor_parallel: tp, pipeline_stages: pp } = ps;
  if (dp * tp * pp !== ctx.devices)
    fail(
      `parallel_strategy: data_parallel (${dp}) x tensor_parallel (${tp}) x pipeline_stages (${pp}) = ${dp * tp * pp}, ` +
        `but there are ${ctx.devices} devices; make the product ${ctx.devices} (or pass --mesh DxT to use ${dp * tp * pp} CPU devices)`,
    );
  if (ps.zero_stage < 0 || ps.zero_stage > 3)
    fail(`parallel_strategy.zero_stage must be 0, 1, 2 or 3, got ${ps.zero_stage}`);
  if (ps.overlap) {
    // overlap reaches only the ZeRO engine (zero.ts: data-only mesh); elsewhere it would silently do nothing
    const why =
      ctx.spmdRuntime === "emulation"
        ? `the ${ctx.spmdRuntime} SPMD runtime has no asynchronous collectives (unset JAXTS_SPMD_RUNTIME to run on the device runtime)`
        : dp === 1
          ? `data_parallel is 1, so the step has no data-parallel collectives to overlap`
          : tp !== 1
            ? `tensor_parallel ${tp}: the ZeRO x tensor engine has no overlap; use tensor_parallel: 1`
            : pp !== 1
              ? `pipeline_stages ${pp}: the pipeline's transfers run inside its schedule's scan, which keeps synchronous collectives; use pipeline_stages: 1`
              : null;
    if (why !== null) fail(`parallel_strategy.overlap: true has no effect here: ${why}; or set overlap: false`);
  }
  if (ps.schedule === "1f1b" && pp === 1)
    fail(
      `parallel_strategy.schedule '1f1b' needs pipeline_stages > 1 (it orders the pipeline's microbatches); set pipeline_stages or drop schedule`,
    );
  if (pp !== 1 && c.model.layers % pp !== 0)
    fail(
      `model.layers (${c.model.layers}) must be divisible by parallel_strategy.pipeline_stages (${pp}): each stage holds layers / pipeline_stages layers`,
    );
  const mb = ps.microbatches || pp;
  if (pp !== 1 && (c.data.batch_size / dp) % mb !== 0)
    fail(
      `data.batch_size (${c.data.batch_size}) / data_parallel (${dp}) must be divisible by the ${mb} pipeline microbatches (parallel_strategy.microbatches, default pipeline_stages); change one of them`,
    );
  if (ps.zero_stage !== 0 || pp !== 1)
    for (const group of ["embeddings", "attention", "mlp"] as const)
      if (c.sharding_spec[group].some((e) => e !== null && e !== "model"))
        fail(
          `sharding_spec.${group} ${JSON.stringify(c.sharding_spec[group])} names a mesh axis other than 'model', but with ${ps.zero_stage !== 0 ? `zero_stage ${ps.zero_stage}` : `pipeline_stages ${pp}`} the parameters are laid out by the ${ps.zero_stage !== 0 ? "ZeRO" : "pipeline"} engine; use None entries`,
        );
  const m = c.model;
  if (m.d_model % m.heads !== 0)
    fail(`model.d_model (${m.d_model}) must be divisible by model.heads (${m.heads}); change one of them`);
  if (m.heads % tp !== 0)
    fail(
      `model.heads (${m.heads}) must be divisible by parallel_strategy.tensor_parallel (${tp}): heads are split over the 'model' axis; use a multiple of ${tp} heads`,
    );
  if (m.ff % tp !== 0)
    fail(
      `model.ff (${m.ff}) must be divisible by parallel_strategy.tensor_parallel (${tp}): MLP hidden units are split over the 'model' axis; use a multiple of ${tp}`,
    );
  if (c.data.batch_size % dp !== 0)
    fail(
      `data.batch_size (${c.data.batch_size}) must be divisible by parallel_strategy.data_parallel (${dp}): the batch is split over the 'data' axis; use a multiple of ${dp}`,
    );
  if (c.data.digits > 7) fail(`data.digits must be at most 7, got ${c.data.digits}`);
  const sizes: Record<string, number> = { data: dp, model: tp };
  const shapes = specShapes(c, paddedVocab(taskVocab));
  const dimNames = {
    embeddings: ["vocab", "d_model"],
    attention: ["d_model", "heads", "head_dim"],
    mlp: ["d_model", "ff"],
  };
  for (const group of ["embeddings", "attention", "mlp"] as const) {
    const spec = c.sharding_spec[group];
    const key = `sharding_spec.${group}`;
    const rank = SPEC_RANKS[group];
    if (spec.length > rank)
      fail(
        `${key} has ${spec.length} entries but its array (${dimNames[group].join(", ")}) has rank ${rank}; drop the extra entries`,
      );
    const used = new Set<string>();
    spec.forEach((entry, dim) => {
      const names = entry === null ? [] : typeof entry === "string" ? [entry] : entry;
      let ways = 1;
      for (const n of names) {
        if (!(MESH_AXES as readonly string[]).includes(n))
          fail(
            `${key}[${dim}] names '${n}', which is not an axis of the mesh (${MESH_AXES.map((a) => `'${a}'`).join(", ")}); use one of them or None`,
          );
        if (used.has(n)) fail(`${key} uses mesh axis '${n}' twice; an axis may shard one dimension only`);
        used.add(n);
        ways *= sizes[n];
        if (n === "model" && !(group !== "embeddings" && dim === 1))
          fail(
            `${key}[${dim}] shards ${dimNames[group][dim]} over 'model', but the tensor axis splits only attention heads (sharding_spec.attention[1]) and MLP hidden units (sharding_spec.mlp[1]); use 'data' or None there`,
          );
      }
      const size = shapes[group][dim];
      if (size % ways !== 0)
        fail(
          `${key}[${dim}] splits ${dimNames[group][dim]} (${size}) ${ways} ways, which does not divide evenly; change the size or the spec`,
        );
    });
    if (tp > 1 && group !== "embeddings" && !used.has("model"))
      fail(
        `${key}[1] must be 'model' when tensor_parallel is ${tp} (${group === "attention" ? "heads" : "MLP hidden units"} are split over the tensor axis); write e.g. ${group === "attention" ? "[None, 'model', None]" : "[None, 'model']"}`,
      );
  }
}

/** Config text (YAML or JSON) -> a resolved, unvalidated config. */
export const configFromText = (text: string, what?: string): TrainConfig => resolveConfig(parseConfigText(text, what));
