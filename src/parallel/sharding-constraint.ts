/**
 * @file lax.withShardingConstraint and jax.sharding.reshard: inside jit a `sharding_constraint` equation the
 * partitioner honours (the value is resharded there); on concrete arrays a devicePut.
 */
import type { Array } from "../core/array.js";
import { Primitive, Zero } from "../core/primitive.js";
import { bind1, Tracer } from "../core/trace.js";
import { flatten, unflatten } from "../core/tree.js";
import { devicePut } from "./device-put.js";
import { NamedShardingImpl, PartitionSpecImpl, type Sharding, type SpecEntry } from "./sharding.js";

type SCP = { sharding: NamedShardingImpl };
export const shardingConstraintP: Primitive<SCP> = new Primitive<SCP>(
  "sharding_constraint",
  {
    abstractEval([x], { sharding }) {
      sharding.shardShape(x.shape); // rank and divisibility, with the function and shapes named
      return [x];
    },
    impl([x]) {
      return [x];
    },
    jvp([x], [t], p) {
      return [[bind1(shardingConstraintP, [x], p)], [t instanceof Zero ? t : bind1(shardingConstraintP, [t], p)]];
    },
    transpose([ct], _args, p) {
      return [ct instanceof Zero ? ct : bind1(shardingConstraintP, [ct], p)];
    },
    vmap(_a, [x], [d], { sharding }) {
      if (d === null) return [[bind1(shardingConstraintP, [x], { sharding })], [null]];
      // the mapped dim is unsharded: a null spec entry inserted at its position
      const e: SpecEntry[] = globalThis.Array.from({ length: x.ndim - 1 }, (_, i) => sharding.spec.entries[i] ?? null);
      e.splice(d, 0, null);
      const s = new NamedShardingImpl(sharding.mesh, new PartitionSpecImpl(...e));
      return [[bind1(shardingConstraintP, [x], { sharding: s })], [d]];
    },
    lower(_ctx, inputs) {
      return inputs;
    },
  },
  { linear: true, shapePolymorphic: true, exactOnScalars: true },
);

function constrain<T>(x: T, s: Sharding): T {
  const [leaves, def] = flatten(x);
  return unflatten(
    def,
    leaves.map((l) => {
      if (!(l instanceof Tracer)) return devicePut(l, s);
      if (!(s instanceof NamedShardingImpl)) return l; // a single-device sharding constrains nothing inside jit
      return bind1(shardingConstraintP, [l as unknown as Array], { sharding: s });
    }),
  ) as T;
}

/** lax.with_sharding_constraint: identity on values; inside jit the partitioner reshards x to `s` there. */
export function withShardingConstraint<T>(x: T, s: Sharding): T {
  return constrain(x, s);
}
/** jax.sharding.reshard(x, s): x with sharding s (inside jit: a constraint the partitioner honours; else devicePut). */
export function reshard<T>(x: T, s: Sharding): T {
  return constrain(x, s);
}
