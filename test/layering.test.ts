/**
 * @file Enforces the import layering: core <- (backends, compiler: kernels and ONNX lowering helpers) <- primitives
 * <- transforms <- library (numpy, lax, scipy, nn, random, optim, io); parallel builds on core/primitives/transforms;
 * backends and the compiler never import primitives, transforms or library code.
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
  parallel: ["core", "primitives", "transforms", "compiler", "runtime"],
  runtime: ["core", "backends"],
  compiler: ["core", "backends"],
  backends: ["core", "compiler"],
  numpy: ["core", "primitives", "transforms"],
  lax: ["core", "primitives", "transforms", "parallel"],
  nn: ["core", "primitives", "transforms", "numpy", "random"], // the random initializers (random never imports nn)
  random: ["core", "primitives", "transforms", "numpy", "lax"],
  optim: ["core", "primitives", "transforms", "numpy", "lax", "nn"],
  scipy: ["core", "primitives", "transforms", "numpy", "lax", "nn"],
  profiler: ["core"],
  models: ["core", "primitives", "transforms", "numpy", "nn", "random", "optim", "lax", "parallel"],
  io: ["core", "primitives", "numpy", "transforms", "compiler", "backends"],
};

function files(dir: string, out: string[] = []): string[] {
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) files(p, out); else if (n.endsWith(".ts")) out.push(p);
  }
  return out;
}

test("imports respect the layering", () => {
  const bad: string[] = [];
  for (const f of files(SRC)) {
    const rel = relative(SRC, f);
    const layer = rel.includes("/") ? rel.split("/")[0] : null;
    if (!layer) continue; // src/index.ts may import everything
    const allowed = ALLOWED[layer];
    assert.ok(allowed, `unknown layer folder src/${layer}: add it to the layering table`);
    const text = readFileSync(f, "utf8");
    for (const m of text.matchAll(/(?:import|export)[^"']*?from\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g)) {
      const spec = m[1] ?? m[2];
      const target = relative(SRC, normalize(join(dirname(f), spec)));
      const tl = target.split("/")[0];
      if (tl === layer || target.startsWith("..")) continue;
      if (!allowed.includes(tl)) bad.push(`${rel} imports ${spec} (${tl} is not below ${layer})`);
    }
  }
  assert.deepEqual(bad, [], bad.join("\n"));
});
