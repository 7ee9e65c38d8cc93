/**
 * @file The table of program lowerings (src/lowerings/index.ts): a fresh process importing only core, the primitive
 * definitions and the ONNX backend lowers qr, eigh, svd, cholesky, triangular_solve, lu, polygamma, random_gamma_grad,
 * random_gamma and the special functions (igamma ... zeta) to the same ONNX programs as a process importing the whole package first (no lowering depends on
 * which library modules a user happened to import).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { repoRoot } from "../helpers/repo-root.js";
import { allPrimitives } from "../../src/core/primitive.js";
import { PROGRAM_LOWERINGS } from "../../src/lowerings/index.js";
// the backend installs the table when it loads
import "../../src/backends/onnx/onnx-backend.js";

const src = (p: string): string => JSON.stringify(new URL(`../../src/${p}`, import.meta.url).href);

/** A script printing, as JSON, each primitive's lowered program (loweringSummary) for small operands. */
function script(full: boolean): string {
  return `
${full ? `await import(${src("index.js")});` : ""}
const { ShapedArray } = await import(${src("core/aval.js")});
const { traceToJaxpr } = await import(${src("core/jaxpr-trace.js")});
const { bind } = await import(${src("core/trace.js")});
const L = await import(${src("primitives/linalg.js")});
const { polygamma } = await import(${src("primitives/bind-ops.js")});
const { randomGammaGrad } = await import(${src("primitives/random.js")});
const { randomGammaP } = await import(${src("random/gamma.js")});
const SF = await import(${src("primitives/special.js")});
const { loweringSummary } = await import(${src("backends/onnx/onnx-backend.js")});
const m = new ShapedArray([3, 3], "float32", false), v = new ShapedArray([4], "float32", false);
const cases = {
  qr: [(a) => L.qr(a, false), [m]],
  eigh: [(a) => L.eigh(a), [m]],
  svd: [(a) => L.svd(a, false, true), [m]],
  cholesky: [(a) => [L.cholesky(a)], [m]],
  triangular_solve: [(a, b) => [L.triangularSolve(a, b, { leftSide: true, lower: true })], [m, m]],
  lu: [(a) => L.lu(a), [m]],
  polygamma: [(x) => [polygamma(1, x)], [v]],
  random_gamma_grad: [(a, x) => [randomGammaGrad(a, x)], [v, v]],
  random_gamma: [(k, a) => bind(randomGammaP, [k, a], { log_space: false }), [new ShapedArray([2], "uint32", false), v]],
  igamma: [(a, x) => [SF.igammaOp(a, x)], [v, v]],
  igammac: [(a, x) => [SF.igammacOp(a, x)], [v, v]],
  igamma_grad_a: [(a, x) => [SF.igammaGradAOp(a, x)], [v, v]],
  regularized_incomplete_beta: [(a, b, x) => [SF.betaincOp(a, b, x)], [v, v, v]],
  bessel_i0e: [(x) => [SF.besselI0eOp(x)], [v]],
  bessel_i1e: [(x) => [SF.besselI1eOp(x)], [v]],
  zeta: [(x, q) => [SF.zetaOp(x, q)], [v, v]],
};
const out = {};
for (const [name, [f, avals]] of Object.entries(cases)) out[name] = loweringSummary(traceToJaxpr(f, avals, name).jaxpr, name);
process.stdout.write(JSON.stringify(out));
`;
}

function lowerIn(full: boolean): Record<string, string> {
  const res = spawnSync(process.execPath, ["--input-type=module", "-e", script(full)], {
    encoding: "utf8",
    cwd: repoRoot(),
    maxBuffer: 1 << 26,
  });
  assert.equal(
    res.status,
    0,
    `child process (${full ? "full package" : "core + primitives + backend"}) failed:\n${res.stderr}`,
  );
  return JSON.parse(res.stdout) as Record<string, string>;
}

test("a process importing only core, primitives and the ONNX backend lowers the program-lowered primitives like the full package", () => {
  const minimal = lowerIn(false),
    full = lowerIn(true);
  const names = [
    "qr",
    "eigh",
    "svd",
    "cholesky",
    "triangular_solve",
    "lu",
    "polygamma",
    "random_gamma_grad",
    "random_gamma",
    "igamma",
    "igammac",
    "igamma_grad_a",
    "regularized_incomplete_beta",
    "bessel_i0e",
    "bessel_i1e",
    "zeta",
  ];
  assert.deepEqual(Object.keys(minimal).sort(), [...names].sort());
  for (const n of names) {
    // one ONNX program (no equation left to the reference interpreter), identical in both processes
    assert.ok(
      !minimal[n].includes("on the reference interpreter"),
      `${n} fell back to the interpreter without the library imported:\n${minimal[n].slice(0, 400)}`,
    );
    assert.match(minimal[n], /^\/\/ ONNX model/, `${n}: expected one ONNX model`);
    assert.equal(minimal[n], full[n], `${n} lowers differently depending on the modules imported`);
  }
});

test("every row of the program-lowering table names a registered primitive once, and its rule is installed", () => {
  const names = PROGRAM_LOWERINGS.map((r) => r.primitive.name);
  assert.equal(new Set(names).size, names.length, `duplicate rows: ${names.join(", ")}`);
  const registered = new Set(allPrimitives());
  for (const r of PROGRAM_LOWERINGS) {
    assert.ok(registered.has(r.primitive), `${r.primitive.name} is not registered`);
    assert.equal(typeof r.primitive.rules.lower, "function", `${r.primitive.name} has no lower rule`);
    assert.equal(
      r.primitive.rules.missing?.lower,
      undefined,
      `${r.primitive.name} still records a reason for having no lowering`,
    );
  }
});
