/**
 * @file A pipelined loss with the first stage's input layer and the last stage's head inside the pipeline: the
 * per-stage "edge" parameters live on their stage's devices and the loss of each microbatch is taken by the last stage.
 */
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import * as lax from "../lax/index.js";
import { flatten, unflatten } from "../core/tree.js";
import { Mesh } from "../parallel/mesh.js";
import { P } from "../parallel/sharding.js";
import { shardMap } from "../parallel/shard-map.js";
import { vjp } from "../transforms/api.js";
import { customVjp } from "../transforms/custom-derivatives.js";
import { type PipelineOptions, pipelineSetup, pipelineStash } from "./pipeline.js";
import { clip, idx, oneFOneBScan } from "./pipeline-schedule.js";

/**
 * A pipelined loss over the `pipeAxis` of `mesh`: `run(stacked, edges, batch)` is the sum over microbatches of
 * `lastFn(e, stages(firstFn(e, b)), b)`, where b is a microbatch of `batch` ([B, ...], float; split over `dataAxis`
 * too when given, the sums then added over it), `stages` applies every stage's `stageFn` in order and e is the
 * calling stage's block of `edges`. `stacked` is stackStages' output (leaves [S, L/S, ...]); `edges` has leaves
 * [S, ...] split over the pipe axis: stage 0's row is read by firstFn and stage S-1's row by lastFn, so the input
 * layer's and the head's parameters are held only by their stages' devices (the other rows are padding; a parameter
 * both use, e.g. a tied embedding, is kept in both rows: its two gradients come back in the two rows, to be summed).
 * firstFn runs where stage 0 takes a microbatch, lastFn where stage S-1 finishes one. GPipe (autodiff of the forward
 * schedule) or 1F1B (its own backward program: the last stage seeds each microbatch's cotangent from its loss).
 * `batch` gets a zero cotangent.
 */
export function makePipelineLoss<SP, E>(
  stageFn: (p: SP, h: Array) => Array,
  firstFn: (e: E, b: Array) => Array,
  lastFn: (e: E, h: Array, b: Array) => Array,
  mesh: Mesh,
  opts: PipelineOptions,
): (stacked: SP, edges: E, batch: Array) => Array {
  const fn = "makePipelineLoss";
  const { pipe, dataAxis, M, schedule } = pipelineSetup(fn, mesh, opts);
  if (opts.perDataParams) throw new Error(`${fn}: perDataParams is not supported with edge stages`);
  const S = mesh.axisSize(pipe);
  const fwd = [...globalThis.Array(S - 1).keys()].map((i) => [i, i + 1] as [number, number]);
  const local = <T>(t: T): T => {
    const [ls, def] = flatten(t);
    return unflatten(
      def,
      (ls as Array[]).map((l) => jnp.squeeze(l, 0)),
    ) as T;
  };
  const micro = (b: Array): Array => {
    const [B, ...rest] = b.shape;
    if (B % M !== 0)
      throw new Error(`${fn}: batch ${B} (${b.dtype}[${b.shape.join(",")}]) is not divisible by ${M} microbatches`);
    return jnp.reshape(b, [M, B / M, ...rest]);
  };
  /** The loss summed over the pipe (and data) axis: only the last stage's terms are nonzero. */
  const total = (l: Array): Array => {
    const s = S > 1 ? lax.psum(l, pipe) : l;
    return dataAxis === null ? s : lax.psum(s, dataAxis);
  };

  const forward = (stacked: SP, edges: E, batch: Array): Array => {
    const p = local(stacked),
      e = local(edges);
    const bs = micro(batch);
    const me = lax.axisIndex(pipe);
    const first = jnp.equal(me, 0),
      last = jnp.equal(me, S - 1);
    const h0 = firstFn(e, idx(bs, jnp.array(0, { dtype: "int32" })));
    type Carry = [Array, Array];
    const [[, acc]] = lax.scan(
      ([carry, acc]: Carry, t: Array): [Carry, null] => {
        // stage 0 embeds microbatch t; the others take what the previous stage sent
        const h = jnp.where(first, firstFn(e, idx(bs, clip(t, M - 1))), carry);
        const y = stageFn(p, h);
        if (y.shape.join() !== carry.shape.join() || y.dtype !== carry.dtype)
          throw new Error(
            `${fn}: stageFn must keep the activation's shape and dtype (${carry.dtype}[${carry.shape.join(",")}]), returned ${y.dtype}[${y.shape.join(",")}]`,
          );
        // the last stage finishes microbatch t - (S - 1) at tick t
        const m = jnp.subtract(t, S - 1);
        const valid = jnp.logicalAnd(last, jnp.greaterEqual(m, 0));
        const l = lastFn(e, y, idx(bs, clip(m, M - 1)));
        return [[S > 1 ? lax.ppermute(y, pipe, fwd) : y, jnp.add(acc, jnp.where(valid, l, jnp.zerosLike(l)))], null];
      },
      [jnp.zerosLike(h0), jnp.zeros([], { dtype: h0.dtype })] as Carry,
      jnp.arange(M + S - 1, { dtype: "int32" }),
    );
    return total(acc);
  };
  const pSpec = opts.paramSpecs ?? P(pipe);
  const bSpec = dataAxis === null ? P() : P(dataAxis);
  const checkVma = opts.checkVma ?? true;
  const gpipe = shardMap(forward, { mesh, inSpecs: [pSpec, P(pipe), bSpec], outSpecs: P(), checkVma });
  if (schedule === "gpipe") return gpipe;

  /** 1F1B's backward program: stage s recomputes microbatch m at tick m + s and backpropagates it at m + 2S-2-s. */
  const backward = (stacked: SP, edges: E, batch: Array, ct: Array): [SP, E, Array] => {
    const p = local(stacked),
      e = local(edges);
    const bs = micro(batch);
    const R = pipelineStash("1f1b", S, M);
    const me = lax.axisIndex(pipe);
    const first = jnp.equal(me, 0),
      last = jnp.equal(me, S - 1);
    const [pl, pdef] = flatten(p);
    const [el, edef] = flatten(e);
    const h0 = firstFn(e, idx(bs, jnp.array(0, { dtype: "int32" })));
    const zero = (a: Array) => jnp.zerosLike(a);
    const stage = { stageFn, p, pl: pl as Array[], pdef, pipe, S, M, R, me, first };
    const [dp, de] = oneFOneBScan<SP, Array[]>(stage, zero(h0), {
      input: (m) => firstFn(e, idx(bs, m)),
      backward(bm, bValid, bin, stageVjp) {
        const b = idx(bs, clip(bm, M - 1));
        const [o, pullS] = stageVjp();
        // the last stage seeds the microbatch's cotangent from its loss; the others take the next stage's
        const [, pullL] = vjp((q: Array[], v: Array) => lastFn(unflatten(edef, q) as E, v, b), el as Array[], o);
        const [deL, dO] = pullL(ct) as [Array[], Array];
        const [dq, dh] = pullS(jnp.where(last, dO, bin));
        // stage 0 backpropagates into its input layer
        const [, pullF] = vjp((q: Array[]) => firstFn(unflatten(edef, q) as E, b), el as Array[]);
        const [deF] = pullF(dh) as [Array[]];
        const useL = jnp.logicalAnd(last, bValid),
          useF = jnp.logicalAnd(first, bValid);
        const update = (des: Array[]) =>
          des.map((a, i) =>
            jnp.add(a, jnp.add(jnp.where(useL, deL[i], zero(deL[i])), jnp.where(useF, deF[i], zero(deF[i])))),
          );
        return { dq, dh, update };
      },
      init: () => ({
        stash: jnp.zeros([R, ...h0.shape], { dtype: h0.dtype }),
        grads: (pl as Array[]).map(zero),
        extra: (el as Array[]).map(zero),
      }),
    });
    // each data shard's gradient is its share of the batch's
    const back = (gs: Array[]) => gs.map((g) => jnp.expandDims(dataAxis === null ? g : lax.psum(g, dataAxis), 0));
    return [unflatten(pdef, back(dp)) as SP, unflatten(edef, back(de)) as E, jnp.zerosLike(batch)];
  };
  const bwd = shardMap(backward, {
    mesh,
    inSpecs: [pSpec, P(pipe), bSpec, P()],
    outSpecs: [pSpec, P(pipe), bSpec],
    checkVma,
  });
  const run = customVjp((stacked: SP, edges: E, batch: Array): Array => gpipe(stacked, edges, batch));
  run.defvjp(
    (stacked: SP, edges: E, batch: Array): [Array, [SP, E, Array]] => [
      gpipe(stacked, edges, batch),
      [stacked, edges, batch],
    ],
    ([stacked, edges, batch]: [SP, E, Array], ct: Array) => bwd(stacked, edges, batch, ct) as never,
  );
  return (stacked, edges, batch) => run(stacked, edges, batch);
}
