/**
 * @file Eager ops on sharded arrays keep sensible shardings: elementwise ops, reductions, dot_general and transpose
 * over operands placed with a NamedSharding run as a jitted one-op function through the partitioner (./gspmd.ts), so
 * their outputs are sharded as propagation decides. Other ops assemble the operands on the host (unsharded output).
 */
import type { Array } from "../core/array.js";
import type { ArrayImpl } from "../core/array-impl.js";
import type { Params, Primitive } from "../core/primitive.js";
import { bind, registerEagerPlaced } from "../core/trace.js";
import { jit } from "../transforms/api.js";
import { NamedShardingImpl, PartitionSpecImpl } from "./sharding.js";

const PARTITIONED = new Set(["reduce_sum", "reduce_max", "reduce_min", "argmax", "argmin", "dot_general", "transpose"]);
const ELEMENTWISE_PARAMS = new Set(["new_dtype", "weak_type", "sharding", "accuracy", "y"]);
/** One output whose shape every non-scalar operand has, params limited to dtype/power facts. */
function elementwise(prim: Primitive, args: ArrayImpl[], params: Params): boolean {
  if (prim.multipleResults || prim.collective || prim.opts.effectful || args.length === 0) return false;
  if (!Object.keys(params).every((k) => ELEMENTWISE_PARAMS.has(k))) return false;
  const big = args.filter((a) => a.ndim > 0);
  return big.length > 0 && big.every((a) => a.shape.join() === big[0].shape.join());
}

const jitted = new Map<string, (...xs: Array[]) => Array[]>();
let inside = 0;

registerEagerPlaced((prim, args, params) => {
  if (inside > 0) return null;
  // which ops are partitioned first: it is the cheaper test (shard_map and collectives stop here)
  if (!PARTITIONED.has(prim.name) && !elementwise(prim, args, params)) return null;
  const named = args.map((a) => (a.placement instanceof NamedShardingImpl ? a.placement : null));
  const mesh = named.find((s) => s && s.mesh.size > 1 && !s.isFullyReplicated)?.mesh;
  if (!mesh) return null;
  if (
    named.some((s) => s && (s.mesh.toString() !== mesh.toString() || s.mesh.deviceIds.join() !== mesh.deviceIds.join()))
  )
    return null;
  let pkey: string;
  try {
    pkey = `${prim.name}|${JSON.stringify(params)}`;
  } catch {
    return null;
  }
  const inShardings = named.map((s) => s ?? new NamedShardingImpl(mesh, new PartitionSpecImpl()));
  const key = `${pkey}#${mesh}|${mesh.deviceIds.join()}#${inShardings.map((s) => String(s.spec)).join(";")}`;
  let f = jitted.get(key);
  if (!f) {
    const one = (...xs: Array[]): Array[] => bind(prim, xs, params);
    Object.defineProperty(one, "name", { value: prim.name });
    f = jit(one, { inShardings });
    jitted.set(key, f);
  }
  inside++;
  try {
    return f(...args);
  } finally {
    inside--;
  }
});
