/**
 * @file jnp.linalg inv / solve / det / cholesky / qr / eigh / svd / lstsq, eager and jit, before (the Loop lowerings,
 * JAXTS_NATIVE_LINALG=0) vs after (the native runner's linalg custom ops):
 * `node dist/bench/linalg.js [--quick] [--sizes=100,300] [--ops=eigh,svd] [--numpy]`,
 * also run by `npm run bench`. Each side runs in its own child process (compiled programs are cached per process).
 * --numpy adds NumPy's time for the same float32 call when python3 with numpy is on the PATH (optional, printed only).
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

type Arr = import("../src/core/array.js").Array;
const ALL_OPS = ["inv", "solve", "det", "cholesky", "qr", "eigh", "svd", "lstsq"] as const;
type Op = (typeof ALL_OPS)[number];
const MODES = ["eager", "jit"] as const;

const arg = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const quick = process.argv.includes("--quick");
const sizes = (arg("sizes") ?? (quick ? "100" : "100,300")).split(",").map(Number);
const OPS: readonly Op[] = arg("ops") ? ALL_OPS.filter((o) => arg("ops")!.split(",").includes(o)) : ALL_OPS;

/** One measured case: median and min of the steady-state calls (ms), and the first call (compile + run). */
interface Row {
  op: Op;
  n: number;
  mode: (typeof MODES)[number];
  medianMs: number;
  minMs: number;
  firstMs: number;
  reps: number;
}

/** Every array in a result (an Array, or a tuple / named-tuple object of them). */
function arrays(r: unknown): Arr[] {
  if (r !== null && typeof r === "object" && "blockUntilReady" in r) return [r as Arr];
  if (r !== null && typeof r === "object") return Object.values(r as Record<string, unknown>).flatMap(arrays);
  return [];
}

/** Child: times every case on this process's lowering and prints the rows as JSON. */
async function child(): Promise<void> {
  const { jit, numpy: jnp, random } = await import("../src/index.js");
  const rows: Row[] = [];
  // at n = 300 a Loop-lowered call takes ~0.5-2 s: a time budget per case, at least 3 calls
  const budgetMs = quick ? 300 : 1500;
  for (const n of sizes) {
    const [k1, k2] = [1, 2].map((s) => random.key(s));
    const r = random.normal(k1, [n, n]);
    const a = jnp.add(r, jnp.multiply(jnp.eye(n), n)); // well conditioned
    const spd = jnp.add(jnp.divide(jnp.matmul(r, jnp.transpose(r)), n), jnp.eye(n));
    const b = random.normal(k2, [n, 4]);
    const fns: Record<Op, (x: Arr) => unknown> = {
      inv: (x) => jnp.linalg.inv(x),
      solve: (x) => jnp.linalg.solve(x, b),
      det: (x) => jnp.linalg.det(x),
      cholesky: (x) => jnp.linalg.cholesky(x),
      qr: (x) => jnp.linalg.qr(x),
      eigh: (x) => jnp.linalg.eigh(x),
      svd: (x) => jnp.linalg.svd(x, { fullMatrices: false }),
      lstsq: (x) => jnp.linalg.lstsq(x, b),
    };
    for (const op of OPS) {
      const x = op === "cholesky" || op === "eigh" ? spd : a;
      for (const mode of MODES) {
        const f = mode === "jit" ? jit(fns[op]) : fns[op];
        const call = (): number => {
          const t = performance.now();
          for (const o of arrays(f(x))) o.blockUntilReady().dispose();
          return performance.now() - t;
        };
        const firstMs = call();
        const ts: number[] = [];
        const t0 = performance.now();
        while (ts.length < 3 || (performance.now() - t0 < budgetMs && ts.length < 50)) ts.push(call());
        ts.sort((p, q) => p - q);
        rows.push({ op, n, mode, medianMs: ts[ts.length >> 1], minMs: ts[0], firstMs, reps: ts.length });
      }
    }
  }
  console.log(JSON.stringify(rows));
}

/** NumPy's median time (ms) per op and n for float32 operands, or null without python3 + numpy. */
function numpyTimes(): Map<string, number> | null {
  const script = `
import json, sys, time
import numpy as np
out = {}
for n in ${JSON.stringify(sizes)}:
    rng = np.random.default_rng(0)
    r = rng.standard_normal((n, n)).astype(np.float32)
    a = (r + n * np.eye(n)).astype(np.float32)
    spd = (r @ r.T / n + np.eye(n)).astype(np.float32)
    b = rng.standard_normal((n, 4)).astype(np.float32)
    fs = {"inv": lambda: np.linalg.inv(a), "solve": lambda: np.linalg.solve(a, b), "det": lambda: np.linalg.det(a),
          "cholesky": lambda: np.linalg.cholesky(spd), "qr": lambda: np.linalg.qr(a),
          "eigh": lambda: np.linalg.eigh(spd), "svd": lambda: np.linalg.svd(a, full_matrices=False),
          "lstsq": lambda: np.linalg.lstsq(a, b, rcond=None)}
    for op, f in fs.items():
        f()
        ts = []
        for _ in range(20):
            t = time.perf_counter(); f(); ts.append((time.perf_counter() - t) * 1e3)
        out[f"{op} {n}"] = sorted(ts)[len(ts) // 2]
print(json.dumps(out))
`;
  const r = spawnSync("python3", ["-c", script], { encoding: "utf8", timeout: 120_000 });
  if (r.status !== 0) return null;
  return new Map(Object.entries(JSON.parse(r.stdout.trim()) as Record<string, number>));
}

function runSide(loop: boolean): Row[] | string {
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync(process.execPath, [self, "--child", ...process.argv.slice(2)], {
    encoding: "utf8",
    timeout: 600_000,
    env: { ...process.env, JAXTS_NATIVE_LINALG: loop ? "0" : "1" },
  });
  if (r.status !== 0) return `ERROR (${r.error?.message ?? `exit ${r.status}`}) ${(r.stderr ?? "").trim().slice(-300)}`;
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as Row[];
}

function parent(): void {
  const before = runSide(true),
    after = runSide(false);
  const np = process.argv.includes("--numpy") ? numpyTimes() : null;
  const lines = [
    "jnp.linalg, float32 n x n, steady-state median ms (first call incl. compile); before = Loop lowerings, after = native linalg ops",
  ];
  if (typeof before === "string" || typeof after === "string") {
    lines.push(
      `linalg bench: before ${typeof before === "string" ? before : "ok"}, after ${typeof after === "string" ? after : "ok"}`,
    );
    console.log(lines.join("\n"));
    return;
  }
  const f = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  lines.push(
    `${"op".padEnd(9)}${"n".padStart(5)}  ${"mode".padEnd(6)}${"before".padStart(18)}${"after".padStart(16)}${"speedup".padStart(9)}${np ? "   numpy" : ""}`,
  );
  for (const a of after) {
    const b = before.find((r) => r.op === a.op && r.n === a.n && r.mode === a.mode)!;
    const npv = np?.get(`${a.op} ${a.n}`);
    lines.push(
      `${a.op.padEnd(9)}${String(a.n).padStart(5)}  ${a.mode.padEnd(6)}${`${f(b.medianMs)} (${f(b.firstMs)})`.padStart(18)}${`${f(a.medianMs)} (${f(a.firstMs)})`.padStart(16)}${`${(b.medianMs / a.medianMs).toFixed(1)}x`.padStart(9)}${np ? (npv === undefined ? "       -" : f(npv).padStart(8)) : ""}`,
    );
  }
  if (process.argv.includes("--numpy") && !np) lines.push("numpy: python3 with numpy unavailable");
  console.log(lines.join("\n"));
}

if (process.argv.includes("--child")) await child();
else parent();
