/** @file Bench: time of the in-graph fusion pass (src/compiler/fuse-graph.ts) on long unrolled elementwise chains, and of a whole jit compile of one (`node dist/bench/fuse-graph-compile.js [steps...]`). */
import * as jax from "../src/index.js";
import { type Array, numpy as jnp } from "../src/index.js";
import { GraphBuilder } from "../src/backends/onnx/graph-builder.js";
import { fuseGraphElementwise } from "../src/compiler/fuse-graph.js";

const WIDTH = 256;
type Kind = "chain" | "residual" | "invariant" | "where";

/**
 * An ONNX graph of `steps` unrolled steps: "chain" is x = sin(x * 1.0001 + 0.5) (small groups cut by Sin),
 * "residual" is x = sin(x) + x * 1.0001, "invariant" is x = sin(x) + z * 1.0001 with z a second input: each Add's
 * join checks its Sin input, which reaches back through every earlier step (the rescan made that one quadratic);
 * "where" is x = where(x > 0.5, x * 1.0001, x + 0.5), all fusible: one group that grows by every node.
 */
export function chainGraph(
  kind: Kind,
  steps: number,
): { g: GraphBuilder; shapes: Map<string, readonly number[]>; dtypes: Map<string, string> } {
  const g = new GraphBuilder(`${kind}_${steps}`);
  let x = g.addInput("x", "float32", [WIDTH]);
  const shapes = new Map<string, readonly number[]>([[x, [WIDTH]]]),
    dtypes = new Map<string, string>([[x, "float32"]]);
  const c = g.scalar("float32", 1.0001),
    d = g.scalar("float32", 0.5);
  for (const k of [c, d]) {
    shapes.set(k, []);
    dtypes.set(k, "float32");
  }
  const op = (type: string, ins: string[], dtype = "float32"): string => {
    const o = g.op(type, ins);
    shapes.set(o, [WIDTH]);
    dtypes.set(o, dtype);
    return o;
  };
  const z = g.addInput("z", "float32", [WIDTH]);
  shapes.set(z, [WIDTH]);
  dtypes.set(z, "float32");
  for (let i = 0; i < steps; i++)
    x =
      kind === "chain"
        ? op("Sin", [op("Add", [op("Mul", [x, c]), d])])
        : kind === "where"
          ? op("Where", [op("Greater", [x, d], "bool"), op("Mul", [x, c]), op("Add", [x, d])])
          : op("Add", [op("Sin", [x]), op("Mul", [kind === "residual" ? x : z, c])]);
  g.addOutput(x, "float32", [WIDTH]);
  return { g, shapes, dtypes };
}

/** Best of `reps` timings (ms) of the fusion pass alone; returns also how many groups it made. */
export function timeFusePass(kind: Kind, steps: number, reps = 3): { ms: number; groups: number } {
  let best = Infinity,
    groups = 0;
  for (let r = 0; r < reps; r++) {
    const { g, shapes, dtypes } = chainGraph(kind, steps);
    const t0 = performance.now();
    groups = fuseGraphElementwise(g, shapes, dtypes);
    best = Math.min(best, performance.now() - t0);
  }
  return { ms: best, groups };
}

/** ms of the first call (trace, lower, fuse, ORT session) of a jit of the unrolled chain. */
export function timeJitCompile(steps: number): number {
  const f = jax.jit(function unrolledChain(x: Array): Array {
    for (let i = 0; i < steps; i++) x = jnp.sin(jnp.add(jnp.multiply(x, 1.0001), 0.5));
    return x;
  });
  const x = jnp.ones([WIDTH]);
  const t0 = performance.now();
  f(x).blockUntilReady();
  return performance.now() - t0;
}

const isMain = process.argv[1]?.endsWith("fuse-graph-compile.js");
if (isMain) {
  const steps = process.argv.slice(2).map(Number);
  for (const n of steps.length ? steps : [500, 1500, 5000]) {
    const [chain, residual, invariant, where] = (["chain", "residual", "invariant", "where"] as const).map((k) =>
      timeFusePass(k, n),
    );
    const jit = timeJitCompile(n);
    console.log(
      `fuse-graph pass, ${n} steps: chain ${chain.ms.toFixed(1)} ms (${chain.groups} groups), ` +
        `residual ${residual.ms.toFixed(1)} ms (${residual.groups} groups), ` +
        `invariant ${invariant.ms.toFixed(1)} ms (${invariant.groups} groups), where ${where.ms.toFixed(1)} ms (${where.groups} groups); jit compile of the chain ${jit.toFixed(0)} ms`,
    );
  }
}
