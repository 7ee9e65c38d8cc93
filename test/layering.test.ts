/**
 * @file Enforces the import layering: core <- backends (runtime, graph builder, kernels) <- compiler (ONNX lowering
 * helpers; the ONNX backend's driver module sits above it) <- primitives
 * <- transforms <- lowerings (lowering rules written as jaxts programs) <- library (numpy, lax, scipy, nn, random, optim,
 * io); parallel builds on core/primitives/transforms;
 * backends and the compiler never import primitives, transforms or library code; and no module of src/ imports itself
 * through a chain of imports (a cycle makes the evaluation order depend on which module is loaded first).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative, dirname, normalize } from "node:path";

const SRC = "src";
/** Which top-level folders each layer may import from (besides itself). */
const ALLOWED: Record<string, string[]> = {
  core: [],
  primitives: ["core", "compiler", "backends"],
  transforms: ["core", "primitives", "compiler"],
  parallel: ["core", "primitives", "transforms", "compiler", "runtime", "lowerings"],
  runtime: ["core", "backends"],
  compiler: ["core", "backends"],
  backends: ["core"],
  lowerings: ["core", "primitives", "transforms"],
  numpy: ["core", "primitives", "transforms"],
  lax: ["core", "primitives", "transforms", "parallel"],
  nn: ["core", "primitives", "transforms", "numpy", "random"], // the random initializers (random never imports nn)
  random: ["core", "primitives", "transforms", "numpy", "lax"],
  optim: ["core", "primitives", "transforms", "numpy", "lax", "nn", "random"], // addNoise (random never imports optim)
  scipy: ["core", "primitives", "transforms", "numpy", "lax", "nn", "random"], // gaussianKde.resample (random never imports scipy)
  profiler: ["core", "runtime"], // the runtime's launch observer gives the per-device spans
  models: ["core", "primitives", "transforms", "numpy", "nn", "random", "optim", "lax", "parallel"],
  io: ["core", "primitives", "numpy", "transforms", "compiler", "backends", "lowerings", "parallel"], // sharded checkpoints (global arrays)
  // the training job (jaxts train) sits on top: it loads the package entry (src/index.ts) to register the backends
  train: [
    "core",
    "primitives",
    "transforms",
    "numpy",
    "nn",
    "random",
    "optim",
    "lax",
    "parallel",
    "models",
    "io",
    "profiler",
  ],
};

/**
 * Files that sit above their folder's layer. The ONNX backend module and its parts are the driver that compiles
 * jaxprs with the compiler and runs them on the runtime modules beside it, so it may import the compiler and the table of program
 * lowerings it installs (src/lowerings/index.ts); nothing below imports it (the cycle check below holds that at file
 * level).
 */
const FILE_ALLOWED: Record<string, string[]> = {
  "backends/onnx/onnx-backend.ts": ["core", "lowerings"],
  // the driver's parts (eager cache, jit cache, executables, sessions, fusion choice, fallback) compile with the compiler
  "backends/onnx/eager-cache.ts": ["core", "compiler"],
  "backends/onnx/jit-cache.ts": ["core", "compiler"],
  "backends/onnx/executable.ts": ["core", "compiler"],
  "backends/onnx/sessions.ts": ["core", "compiler"],
  "backends/onnx/fusion.ts": ["core", "compiler"],
  "backends/onnx/fallback.ts": ["core", "compiler"],
  "backends/onnx/async-run.ts": ["core", "compiler"],
};

function files(dir: string, out: string[] = []): string[] {
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) files(p, out);
    else if (n.endsWith(".ts")) out.push(p);
  }
  return out;
}

test("imports respect the layering", () => {
  const bad: string[] = [];
  for (const f of files(SRC)) {
    const rel = relative(SRC, f);
    const layer = rel.includes("/") ? rel.split("/")[0] : null;
    if (!layer) continue; // src/index.ts may import everything
    const allowed = FILE_ALLOWED[rel] ?? ALLOWED[layer];
    assert.ok(allowed, `unknown layer folder src/${layer}: add it to the layering table`);
    const text = readFileSync(f, "utf8");
    for (const m of text.matchAll(
      /(?:import|export)[^"']*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g,
    )) {
      const spec = m[1] ?? m[2];
      const target = relative(SRC, normalize(join(dirname(f), spec)));
      const tl = target.split("/")[0];
      if (tl === layer || target.startsWith("..")) continue;
      if (!allowed.includes(tl)) bad.push(`${rel} imports ${spec} (${tl} is not below ${layer})`);
    }
  }
  assert.deepEqual(bad, [], bad.join("\n"));
});

/**
 * The runtime import graph of src/: module path -> the src/ modules it imports when evaluated. `import type` and
 * `export type` are left out (TypeScript erases them, and type-level cycles are harmless); so are dynamic `import()`s
 * (evaluated later, on demand). A value import whose names are all types still counts, as a reader would see it.
 */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const f of files(SRC)) {
    const text = readFileSync(f, "utf8");
    const deps: string[] = [];
    for (const m of text.matchAll(
      /^\s*(?:import|export)(\s+type\b)?[^"';]*?from\s+["'](\.[^"']+)["']|^\s*import\s+["'](\.[^"']+)["']/gm,
    )) {
      if (m[1]) continue;
      deps.push(normalize(join(dirname(f), m[2] ?? m[3])).replace(/\.js$/, ".ts"));
    }
    graph.set(f, deps);
  }
  return graph;
}

/** A cycle through the graph as a path a -> b -> ... -> a, or null when the graph is acyclic (a depth-first search). */
function findCycle(graph: Map<string, string[]>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (v: string): string[] | null => {
    state.set(v, "open");
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue; // a file outside src/ (or a typo tsc reports)
      if (state.get(w) === "open") return [...stack.slice(stack.indexOf(w)), w];
      if (state.get(w) === undefined) {
        const c = visit(w);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(v, "done");
    return null;
  };
  for (const v of [...graph.keys()].sort()) {
    if (state.get(v) !== undefined) continue;
    const c = visit(v);
    if (c) return c;
  }
  return null;
}

test("the cycle finder reports a cycle's path and accepts a DAG", () => {
  const dag = new Map([
    ["a", ["b", "c"]],
    ["b", ["c"]],
    ["c", []],
  ]);
  assert.equal(findCycle(dag), null);
  const cyclic = new Map([
    ["a", ["b"]],
    ["b", ["c"]],
    ["c", ["d", "b"]],
    ["d", []],
  ]);
  assert.deepEqual(findCycle(cyclic), ["b", "c", "b"]);
});

test("the runtime import graph of src/ has no cycles", () => {
  const graph = importGraph();
  assert.ok(graph.size > 100 && [...graph.values()].some((d) => d.length > 0), `import graph of ${graph.size} modules`);
  const cycle = findCycle(graph);
  assert.equal(cycle, null, `import cycle: ${(cycle ?? []).map((f) => relative(SRC, f)).join(" -> ")}`);
});

test("the layering table itself is acyclic (no two folders may import each other)", () => {
  const cycle = findCycle(new Map(Object.entries(ALLOWED)));
  assert.equal(cycle, null, `layer cycle: ${(cycle ?? []).join(" -> ")}`);
});
