/** @file autoShard's analytic cost model: machine constants, an alpha-beta model of collectives and per-equation FLOPs. */
import type { JaxprEqn } from "../core/jaxpr.js";

/**
 * Per-device machine constants of the cost model. The defaults were measured on the CPU device runtime of the
 * development host (2 cores, 1 intra-op thread per device) with `calibrateAutoShard()`; pass your own
 * (`autoShard(f, { mesh, machine })`) or measure them with calibrateAutoShard().
 */
export interface MachineModel {
  /** Floating-point operations per second of one device (dense matmul rate). */
  flopsPerSecond: number;
  /** Bytes per second one device reads or writes in memory-bound (elementwise) work. */
  memoryBytesPerSecond: number;
  /** Fixed cost of one collective, in seconds (alpha). */
  collectiveLatencySeconds: number;
  /** Bytes per second one device sends in a collective (1 / beta). */
  collectiveBytesPerSecond: number;
}

/** Measured with calibrateAutoShard() on the development host (see notes/auto-shard.md for the numbers). */
export const DEFAULT_MACHINE: Readonly<MachineModel> = Object.freeze({
  flopsPerSecond: 2.5e10,
  memoryBytesPerSecond: 6.0e9,
  collectiveLatencySeconds: 5.0e-5,
  collectiveBytesPerSecond: 1.5e9,
});

/** Collective kinds, named as JAX's collectives (psum = all-reduce, psum_scatter = reduce-scatter). */
export type CollectiveKind = "psum" | "all_gather" | "psum_scatter" | "all_to_all" | "pmax" | "pmin";

/** One collective the partitioned program needs. */
export interface CollectiveEstimate {
  kind: CollectiveKind;
  /** Mesh axes it runs over (the group is every device that differs only along them). */
  axes: string[];
  /** Bytes of its per-device operand. */
  bytes: number;
  /** Estimated seconds (alpha + bytes moved / bandwidth). */
  seconds: number;
  /** Which equation needed it and why, e.g. "dot_general: contraction over a sharded dimension". */
  reason: string;
}

/**
 * Bytes one device sends in a collective over n devices whose per-device operand has `bytes` bytes (ring algorithms):
 * all-reduce 2(n-1)/n b, all-gather (n-1) b (it receives the n-1 other blocks), reduce-scatter (n-1)/n b,
 * all-to-all (n-1)/n b.
 */
export function bytesMoved(kind: CollectiveKind, bytes: number, n: number): number {
  if (n <= 1) return 0;
  switch (kind) {
    case "psum":
    case "pmax":
    case "pmin":
      return (2 * (n - 1) * bytes) / n;
    case "all_gather":
      return (n - 1) * bytes;
    case "psum_scatter":
    case "all_to_all":
      return ((n - 1) * bytes) / n;
  }
}

/** Alpha-beta time of a collective: latency per ring step (log-free: one latency per call) + bytes moved / bandwidth. */
export function collectiveSeconds(kind: CollectiveKind, bytes: number, n: number, m: MachineModel): number {
  if (n <= 1) return 0;
  return m.collectiveLatencySeconds + bytesMoved(kind, bytes, n) / m.collectiveBytesPerSecond;
}

const prod = (xs: readonly number[]): number => xs.reduce((a, b) => a * b, 1);

/**
 * FLOPs of one equation on the local shapes of its operands and results (dot_general: 2 * out * contracted;
 * elementwise and reductions: one per element touched, transcendental functions 4).
 */
export function eqnFlops(
  eqn: JaxprEqn,
  inShapes: readonly (readonly number[])[],
  outShapes: readonly (readonly number[])[],
): number {
  const name = eqn.primitive.name;
  // views cost nothing at run time (PrimitiveFacts.cost, declared with each primitive)
  const cost = eqn.primitive.opts.cost;
  if (cost === "view") return 0;
  if (name === "dot_general") {
    const [[lc]] = eqn.params.dimension_numbers as [[number[], number[]], [number[], number[]]];
    return 2 * prod(outShapes[0]) * prod(lc.map((d) => inShapes[0][d]));
  }
  const elems = Math.max(prod(outShapes[0] ?? []), ...inShapes.map(prod));
  // data movement: no FLOPs (its bytes are the roofline's memory term); a transcendental function: 4 per element
  if (cost === "move") return 0;
  return cost === "transcendental" ? 4 * elems : elems;
}

/** Roofline time of one equation: the larger of its FLOPs at the FLOP rate and its bytes at the memory bandwidth. */
export function eqnSeconds(flops: number, bytes: number, m: MachineModel): number {
  return Math.max(flops / m.flopsPerSecond, bytes / m.memoryBytesPerSecond);
}

/** Checks a user's machine overrides: each given constant must be a positive finite number. */
export function machineFrom(fn: string, over: Partial<MachineModel> | undefined): MachineModel {
  const m: MachineModel = { ...DEFAULT_MACHINE };
  if (over === undefined) return m;
  if (over === null || typeof over !== "object")
    throw new TypeError(`${fn}: machine must be an object of machine constants, got ${String(over)}`);
  for (const [k, v] of Object.entries(over)) {
    if (!(k in DEFAULT_MACHINE))
      throw new TypeError(
        `${fn}: unknown machine constant "${k}"; accepted: ${Object.keys(DEFAULT_MACHINE).join(", ")}`,
      );
    if (typeof v !== "number" || !(v > 0) || !Number.isFinite(v))
      throw new RangeError(`${fn}: machine.${k} must be a positive finite number, got ${String(v)}`);
    m[k as keyof MachineModel] = v;
  }
  return m;
}
