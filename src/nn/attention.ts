/** @file jax.nn.dot_product_attention: scaled dot-product attention (multi-head, grouped-query, multi-query) with bias, boolean mask, causal, local-window and padding masks, in JAX's (B, T, N, H) layout. */
import type { Array } from "../core/array.js";
import { finfo, isFloat, promoteTypes } from "../core/dtype.js";
import { shapeStr } from "../core/shape.js";
import * as ops from "../primitives/ops.js";
import { asArrayArg } from "../numpy/core.js";
import { einsum } from "../numpy/einsum.js";
import { add } from "../numpy/elementwise-arith.js";
import { type ArrayInput, type Args, parseArgs } from "../numpy/elementwise-util.js";
import { softmax } from "./functions.js";

export interface DotProductAttentionOptions {
  /** Added to the logits; broadcastable to (B, N, T, S) (or (N, T, S) unbatched). */
  bias?: ArrayInput | null;
  /** Boolean, true = attend; broadcastable to (B, N, T, S). */
  mask?: ArrayInput | null;
  /** Logit scale; default 1 / sqrt(H). */
  scale?: number | null;
  /** Causal (lower-triangular, top-left aligned) mask: query t attends to keys s <= t. */
  isCausal?: boolean;
  /** int32 (B,): query rows t >= length are padding. */
  querySeqLengths?: ArrayInput | null;
  /** int32 (B,): key/value positions s >= length are padding. */
  keyValueSeqLengths?: ArrayInput | null;
  /** [left, right] (or one int for both): query t attends to s with t - left <= s <= t + right. */
  localWindowSize?: number | readonly [number, number] | null;
  /** "xla" or null (the same here); "cudnn" is not available. */
  implementation?: "xla" | "cudnn" | null;
}
type Opts = DotProductAttentionOptions;
const FN = "dot_product_attention";

/** Prepends size-1 axes up to 4-D (JAX's _ensure_4d); more than 4 axes is an error naming the argument. */
function to4d(name: string, x: Array, what: string): Array {
  if (x.ndim > 4)
    throw new Error(`${FN}: ${name} must have at most 4 dimensions ${what}, got shape ${shapeStr(x.shape)}`);
  return x.ndim === 4 ? x : ops.reshape(x, [...new globalThis.Array<number>(4 - x.ndim).fill(1), ...x.shape]);
}
/** Broadcasts a 4-D bias/mask to (B, N, T, S): each axis 1 or equal; the head axis 1 or N (not K). */
function toLogitsShape(name: string, x: Array, target: readonly number[]): Array {
  const ok = x.shape.every((d, i) => d === 1 || d === target[i]);
  if (!ok)
    throw new Error(
      `${FN}: ${name} of shape ${shapeStr(x.shape)} must broadcast to the logits shape (B, N, T, S) = ${shapeStr(target)} (each axis 1 or equal; the head axis 1 or N)`,
    );
  return x.shape.join() === target.join()
    ? x
    : ops.broadcastInDim(
        ops.reshape(
          x,
          x.shape.filter((d) => d !== 1),
        ),
        target,
        x.shape.flatMap((d, i) => (d === 1 ? [] : [i])),
      );
}
function seqLengths(name: string, x: ArrayInput | null | undefined, B: number): Array | null {
  if (x === null || x === undefined) return null;
  const a = asArrayArg(FN, x);
  if (a.dtype !== "int32" || a.ndim !== 1 || a.shape[0] !== B)
    throw new Error(
      `${FN}: ${name} must be an int32 array of shape (${B},) (one length per batch element), got ${a.dtype}${shapeStr(a.shape)}`,
    );
  return a;
}
const intPair = (w: unknown): [number, number] | null => {
  if (w === null || w === undefined) return null;
  const p = typeof w === "number" ? [w, w] : w;
  if (!globalThis.Array.isArray(p) || p.length !== 2 || !p.every((x) => Number.isInteger(x)))
    throw new TypeError(
      `${FN}: localWindowSize must be an integer or a pair [left, right] of integers, got ${JSON.stringify(w)}`,
    );
  return [p[0] as number, p[1] as number];
};

/**
 * dotProductAttention(query, key, value, bias?, mask?, { scale, isCausal, querySeqLengths, keyValueSeqLengths,
 * localWindowSize, implementation }): softmax(scale * Q K^T + bias, masked) V, as jax.nn.dot_product_attention.
 * query (B, T, N, H) or (T, N, H); key, value (B, S, K, H) or (S, K, H) with N a multiple of K (query head n uses
 * key/value head n // (N / K)). Logits are in promote(dtype, float32), masked ones set to -0.7 * finfo.max, the
 * softmax runs in float32 and the probabilities are cast to the key dtype (so, as in JAX, a fully masked row is the mean
 * of the values for float32 and narrower inputs but NaN for float64, whose -0.7 * max overflows float32). With both sequence lengths given, padded
 * query rows are zeroed. Returns query's shape.
 */
export function dotProductAttention(
  query: ArrayInput,
  key: ArrayInput,
  value: ArrayInput,
  ...args: Args<[bias: ArrayInput | null, mask: ArrayInput | null], Opts>
): Array {
  const o = parseArgs<Opts>(
    FN,
    args,
    ["bias", "mask"],
    ["scale", "isCausal", "querySeqLengths", "keyValueSeqLengths", "localWindowSize", "implementation"],
  );
  const impl = o.implementation ?? null;
  if (impl === "cudnn")
    throw new Error(
      `${FN}: implementation "cudnn" (cuDNN flash attention) is not available in jaxts; use "xla" or null`,
    );
  if (impl !== null && impl !== "xla")
    throw new Error(`${FN}: unsupported implementation ${JSON.stringify(impl)}; expected "xla", "cudnn" or null`);
  const q0 = asArrayArg(FN, query),
    k0 = asArrayArg(FN, key),
    v0 = asArrayArg(FN, value);
  const outShape = q0.shape;
  const q = to4d("query", q0, "(B, T, N, H)"),
    k = to4d("key", k0, "(B, S, K, H)"),
    v = to4d("value", v0, "(B, S, K, H)");
  const [B, S, K, H] = k.shape;
  const [qB, T, N, qH] = q.shape;
  const kd = k.dtype;
  if (!isFloat(kd)) throw new TypeError(`${FN}: key must have a floating dtype, got ${kd}`);
  if (v.dtype !== kd || v.shape.join() !== k.shape.join())
    throw new Error(
      `${FN}: value must have key's shape (B, S, K, H) = ${shapeStr(k.shape)} and dtype ${kd}, got ${v.dtype}${shapeStr(v.shape)}`,
    );
  if (q.dtype !== kd || qB !== B || qH !== H)
    throw new Error(
      `${FN}: query must have shape (B, T, N, H) with B = ${B}, H = ${H} and dtype ${kd} (from key ${shapeStr(k.shape)}), got ${q.dtype}${shapeStr(q.shape)}`,
    );
  if (K === 0 || N % K !== 0)
    throw new Error(
      `${FN}: the number of query heads must be a multiple of the key/value heads, got N = ${N} (query ${shapeStr(q.shape)}) and K = ${K} (key ${shapeStr(k.shape)})`,
    );
  const G = N / K;
  if (o.isCausal !== undefined && typeof o.isCausal !== "boolean")
    throw new TypeError(`${FN}: isCausal must be a boolean, got ${JSON.stringify(o.isCausal)}`);
  const scale = o.scale ?? 1 / Math.sqrt(H);
  if (typeof scale !== "number")
    throw new TypeError(`${FN}: scale must be a number or null, got ${JSON.stringify(scale)}`);
  const lt = promoteTypes({ dtype: kd, weakType: false }, { dtype: "float32", weakType: false }).dtype;
  const logitsShape = [B, N, T, S];

  // logits[b, k*G + g, t, s] = sum_h q[b, t, k*G + g, h] key[b, s, k, h], accumulated in lt
  const qg = ops.reshape(q, [B, T, K, G, H]);
  let logits = ops.reshape(einsum("BTKGH,BSKH->BKGTS", qg, k, { preferredElementType: lt }), logitsShape);
  logits = ops.mul(logits, ops.full([], scale, lt));
  if (o.bias !== null && o.bias !== undefined) {
    const b = toLogitsShape(
      "bias",
      to4d("bias", asArrayArg(FN, o.bias), "(broadcastable to (B, N, T, S))"),
      logitsShape,
    );
    const sum = add(logits, b);
    logits = sum.dtype === lt ? sum : ops.convert(sum, lt);
  }
  const qLen = seqLengths("querySeqLengths", o.querySeqLengths, B),
    kvLen = seqLengths("keyValueSeqLengths", o.keyValueSeqLengths, B);
  const keep = combinedMask(o, logitsShape, qLen, kvLen);
  if (keep) logits = ops.select(keep, logits, ops.full(logitsShape, -0.7 * finfo(lt).max, lt));
  const f32 = logits.dtype === "float32" ? logits : ops.convert(logits, "float32");
  let probs = softmax(f32, -1);
  if (probs.dtype !== kd) probs = ops.convert(probs, kd);
  let out = ops.reshape(einsum("BKGTS,BSKH->BTKGH", ops.reshape(probs, [B, K, G, T, S]), v), [B, T, N, H]);
  if (qLen && kvLen) {
    // padded query rows (t >= querySeqLengths[b]) are zeroed
    const valid = ops.lt(ops.iota("int32", [B, T, N, H], 1), ops.broadcastInDim(qLen, [B, T, N, H], [0]));
    out = ops.mul(out, ops.convert(valid, kd));
  }
  return ops.reshape(out, outShape);
}

/** The conjunction of the boolean mask, causal, window and padding masks over (B, N, T, S), or null if none applies. */
function combinedMask(o: Opts, shape: readonly number[], qLen: Array | null, kvLen: Array | null): Array | null {
  const parts: Array[] = [];
  if (o.mask !== null && o.mask !== undefined) {
    const m = asArrayArg(FN, o.mask);
    if (m.dtype !== "bool")
      throw new TypeError(
        `${FN}: mask must be a boolean array (true = attend; pass additive masks as bias), got ${m.dtype}${shapeStr(m.shape)}`,
      );
    parts.push(toLogitsShape("mask", to4d("mask", m, "(broadcastable to (B, N, T, S))"), shape));
  }
  const t = ops.iota("int32", shape, 2),
    s = ops.iota("int32", shape, 3);
  if (o.isCausal) parts.push(ops.le(s, t));
  const w = intPair(o.localWindowSize);
  if (w) {
    // t - left <= s <= t + right
    parts.push(
      ops.le(t, ops.add(s, ops.full(shape, w[0], "int32"))),
      ops.ge(t, ops.sub(s, ops.full(shape, w[1], "int32"))),
    );
  }
  if (qLen) parts.push(ops.lt(t, ops.broadcastInDim(qLen, shape, [0])));
  if (kvLen) parts.push(ops.lt(s, ops.broadcastInDim(kvLen, shape, [0])));
  return parts.length === 0 ? null : parts.reduce((a, b) => ops.and(a, b));
}
