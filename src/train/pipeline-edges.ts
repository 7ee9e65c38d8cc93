/**
 * @file The GPT pipelined with its embeddings in the first stage and its final norm, head and loss in the last: the
 * edge parameters packed per stage into a flat [S, K] vector over 'pipe' (a tied embedding kept on both edge stages).
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import * as nn from "../nn/index.js";
import * as optim from "../optim/index.js";
import { valueAndGrad } from "../transforms/api.js";
import type { Mesh } from "../parallel/mesh.js";
import { P } from "../parallel/sharding.js";
import type { SpecTree } from "../parallel/shard-map.js";
import {
  type GptBlocks,
  type GptConfig,
  type GptParams,
  type GptShardingSpec,
  gptEmbed,
  gptLogits,
} from "../models/gpt.js";
import { makePipelineLoss } from "../models/pipeline-loss.js";
import { type GptPipelineOptions, gptPipelineParamSpecs, gptPipelineStage, stageView } from "./engines.js";

/** The pipelined GPT's parameters: the blocks (layer dim over 'pipe') and the edge stages' flat rows [S, K]. */
export interface GptPipeParams {
  blocks: GptBlocks;
  edges: Array;
}
type EdgeName = "wte" | "wpe" | "lnfg" | "lnfb" | "head";
interface Segment {
  name: EdgeName;
  shape: number[];
  offset: number;
  size: number;
}
/** Where each edge parameter sits in its stage's row: stage 0 [wte, wpe], stage S-1 [lnfg, lnfb, head or wte]. */
export interface EdgeLayout {
  stages: number;
  first: Segment[];
  last: Segment[];
  /** The row length: the larger stage's parameter count. */
  k: number;
}

/** The edge layout of `cfg` over `stages` (>= 2) pipeline stages. */
export function gptEdgeLayout(cfg: GptConfig, stages: number): EdgeLayout {
  if (!Number.isInteger(stages) || stages < 2)
    throw new RangeError(`gptEdgeLayout: the edge stages need at least 2 pipeline stages, got ${stages}`);
  const segs = (parts: [EdgeName, number[]][]): Segment[] => {
    let offset = 0;
    return parts.map(([name, shape]) => {
      const size = shape.reduce((a, b) => a * b, 1);
      const s = { name, shape, offset, size };
      offset += size;
      return s;
    });
  };
  const d = cfg.dModel,
    V = cfg.vocab;
  const first = segs([
    ["wte", [V, d]],
    ["wpe", [cfg.seq, d]],
  ]);
  const last = segs([["lnfg", [d]], ["lnfb", [d]], cfg.tied ? ["wte", [V, d]] : ["head", [d, V]]]);
  const len = (ss: Segment[]) => ss.reduce((a, s) => a + s.size, 0);
  return { stages, first, last, k: Math.max(len(first), len(last)) };
}

/** A stage's row [K] unpacked into its parameters. */
function unpack(row: Array, segs: Segment[]): Partial<Record<EdgeName, Array>> {
  return Object.fromEntries(
    segs.map((s) => [s.name, jnp.reshape(lax.sliceInDim(row, s.offset, s.offset + s.size, 1, 0), s.shape)]),
  );
}
function pack(p: GptParams, segs: Segment[], k: number): Array {
  const parts = segs.map((s) => jnp.reshape(p[s.name] as Array, [-1]));
  const used = segs.reduce((a, s) => a + s.size, 0);
  if (used < k) parts.push(jnp.zeros([k - used], { dtype: parts[0].dtype }));
  return jnp.concatenate(parts, 0);
}

/** GptParams in the pipelined layout (edge rows: stage 0, zero padding for the middle stages, stage S-1). */
export function gptToPipe(layout: EdgeLayout, p: GptParams): GptPipeParams {
  const S = layout.stages;
  const r0 = pack(p, layout.first, layout.k),
    rl = pack(p, layout.last, layout.k);
  const rows = [r0, ...globalThis.Array.from({ length: S - 2 }, () => jnp.zerosLike(r0)), rl];
  return { blocks: p.blocks, edges: jnp.stack(rows, 0) };
}

/** The inverse of gptToPipe (a tied embedding read from stage 0's copy). */
export function gptFromPipe(layout: EdgeLayout, pp: GptPipeParams): GptParams {
  const S = layout.stages;
  const row = (s: number) => jnp.squeeze(lax.sliceInDim(pp.edges, s, s + 1, 1, 0), 0);
  const a = unpack(row(0), layout.first),
    b = unpack(row(S - 1), layout.last);
  const p: GptParams = { wte: a.wte!, wpe: a.wpe!, blocks: pp.blocks, lnfg: b.lnfg!, lnfb: b.lnfb! };
  if (b.head) p.head = b.head;
  return p;
}

/** The pipelined layout's specs: the blocks as gptPipelineParamSpecs, each edge row on its stage's devices. */
export function gptPipeSpecs(cfg: GptConfig, spec: GptShardingSpec): SpecTree {
  return { blocks: (gptPipelineParamSpecs(cfg, spec) as { blocks: SpecTree }).blocks, edges: P("pipe") };
}

/** The tied embedding's segment in the last row: [offset there, offset in row 0, size], or null when untied. */
function tiedSegment(layout: EdgeLayout): [number, number, number] | null {
  const l = layout.last.find((s) => s.name === "wte");
  return l ? [l.offset, layout.first[0].offset, l.size] : null;
}
/** Row `s` of edges [S, K] with columns [o, o + n) replaced by `x` [n]. */
function withSegment(edges: Array, s: number, o: number, x: Array): Array {
  return lax.dynamicUpdateSlice(edges, jnp.expandDims(x, 0), [
    jnp.array(s, { dtype: "int32" }),
    jnp.array(o, { dtype: "int32" }),
  ]);
}
const segment = (edges: Array, s: number, o: number, n: number): Array =>
  jnp.reshape(lax.slice(edges, [s, o], [s + 1, o + n]), [n]);

/**
 * The GPT loss over the pipelined layout: the blocks as pipeline stages (the batch split over 'data'), stage 0
 * embedding each microbatch, stage S-1 applying the final norm and head and summing its masked cross-entropy; the
 * mean divides by the batch's scored positions.
 */
export function makeGptPipeEdgeLoss(
  cfg: GptConfig,
  mesh: Mesh,
  opts: GptPipelineOptions,
): (pp: GptPipeParams, tokens: Array, targets: Array, mask: Array) => Array {
  const S = mesh.axisSize("pipe");
  const layout = gptEdgeLayout(cfg, S);
  const { tp, stage, paramSpecs } = gptPipelineStage(cfg, mesh, opts);
  // the microbatch's columns: tokens, targets, mask (token ids are exact in float32)
  const col = (b: Array, j: number): Array => jnp.squeeze(lax.sliceInDim(b, j, j + 1, 1, 2), 2);
  const first = (e: Array, b: Array): Array => {
    const u = unpack(e, layout.first);
    return gptEmbed(cfg, { wte: u.wte!, wpe: u.wpe! }, col(b, 0).astype("int32"));
  };
  const last = (e: Array, h: Array, b: Array): Array => {
    const u = unpack(e, layout.last);
    const logits = gptLogits({ wte: u.wte!, lnfg: u.lnfg!, lnfb: u.lnfb!, head: u.head }, h);
    const logp = nn.logSoftmax(logits, -1);
    const nll = jnp.negative(jnp.sum(jnp.multiply(logp, nn.oneHot(col(b, 1).astype("int32"), cfg.vocab)), -1));
    return jnp.sum(jnp.multiply(nll, col(b, 2)));
  };
  const run = makePipelineLoss(stage, first, last, mesh, {
    pipeAxis: "pipe",
    microbatches: opts.microbatches,
    dataAxis: "data",
    paramSpecs,
    checkVma: tp === null,
    schedule: opts.schedule ?? "gpipe",
  });
  return (pp, tokens, targets, mask) => {
    const stacked = stageView(pp.blocks, S);
    const batch = jnp.stack([tokens.astype("float32"), targets.astype("float32"), mask.astype("float32")], -1);
    return jnp.divide(run(stacked, pp.edges, batch), jnp.sum(mask));
  };
}

/** One step over the pipelined layout: (pp, optState, tokens, targets, mask) -> [loss, pp, optState]. */
export type GptPipeStep = (
  pp: GptPipeParams,
  state: optim.OptState,
  tokens: Array,
  targets: Array,
  mask: Array,
) => [Array, GptPipeParams, optim.OptState];

/**
 * A training step over the pipelined layout (jit it). A tied embedding's gradient is the sum of its two copies'
 * (Megatron); it is applied to stage 0's copy alone (so a global-norm clip counts it once) and the updated copy is
 * then sent to the last stage.
 */
export function makeGptPipeEdgeStep(
  cfg: GptConfig,
  opt: optim.GradientTransformation,
  mesh: Mesh,
  opts: GptPipelineOptions,
): GptPipeStep {
  const loss = makeGptPipeEdgeLoss(cfg, mesh, opts);
  const S = mesh.axisSize("pipe");
  const tied = tiedSegment(gptEdgeLayout(cfg, S));
  return (pp, state, tokens, targets, mask) => {
    const [l, g] = valueAndGrad(loss)(pp, tokens, targets, mask) as [Array, GptPipeParams];
    let ge = g.edges;
    if (tied) {
      const [ol, o0, n] = tied;
      const sum = jnp.add(segment(ge, 0, o0, n), segment(ge, S - 1, ol, n));
      ge = withSegment(withSegment(ge, 0, o0, sum), S - 1, ol, jnp.zeros([n], { dtype: ge.dtype }));
    }
    const [updates, next] = opt.update({ blocks: g.blocks, edges: ge }, state, pp);
    const np = optim.applyUpdates(pp, updates) as GptPipeParams;
    if (tied) {
      const [ol, o0, n] = tied;
      np.edges = withSegment(np.edges, S - 1, ol, segment(np.edges, 0, o0, n));
    }
    return [l, np, next];
  };
}
