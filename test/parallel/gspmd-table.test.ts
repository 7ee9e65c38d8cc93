/**
 * @file jit with shardings over the program table (./gspmd-cases.ts): on 1-D and 2-D meshes of 2, 4 and 8 devices,
 * on the device runtime and the emulation, results equal the single-device jit and one device's program holds the
 * expected collectives (by kind, and by bytes where given); out shardings are honoured exactly.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, jit, makeMesh, sharding, tree } from "../../src/index.js";
import type { CostAnalysis } from "../../src/parallel/cost-model.js";
import { CASES, type Case, type Config, RUNTIMES } from "./gspmd-cases.js";
const { P, NamedSharding } = sharding;

function close(what: string, got: Array, want: Array, exact: boolean): void {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  assert.equal(got.dtype, want.dtype, `${what}: dtype`);
  const g = got.dataSync() as ArrayLike<number>,
    w = want.dataSync() as ArrayLike<number>;
  for (let i = 0; i < w.length; i++) {
    const ok = exact ? g[i] === w[i] : Math.abs(g[i] - w[i]) <= 1e-5 + 1e-5 * Math.abs(w[i]);
    if (!ok) assert.fail(`${what}: element ${i} is ${g[i]}, the single-device jit gives ${w[i]}`);
  }
}

function runConfig(c: Case, cfg: Config, runtime: string): void {
  const what = `${c.name} on mesh ${cfg.mesh[0].join("x")} in=${JSON.stringify(cfg.in)} (${runtime})`;
  const mesh = makeMesh(cfg.mesh[0], cfg.mesh[1]);
  const inShardings = cfg.in.map((s) => NamedSharding(mesh, P(...s)));
  const outShardings = cfg.out ? NamedSharding(mesh, P(...cfg.out)) : undefined;
  const f = jit(c.f as (...a: unknown[]) => unknown, { inShardings, outShardings });
  const args = c.args();
  const want = tree.leaves(jit(c.f as (...a: unknown[]) => unknown)(...args)) as Array[];
  const got = tree.leaves(f(...args)) as Array[];
  assert.equal(got.length, want.length, `${what}: number of outputs`);
  got.forEach((g, i) => close(`${what} output ${i}`, g, want[i], c.exact ?? false));
  if (cfg.out) assert.equal(String(got[0].sharding), String(outShardings), `${what}: out sharding`);
  for (const g of got) assert.ok(g.sharding instanceof NamedSharding, `${what}: outputs carry NamedShardings`);
  const cost = f.lower(...args).compile() as { costAnalysis: () => CostAnalysis; asText: () => string };
  const colls = cost.costAnalysis().collectives;
  const count: Record<string, number> = {};
  for (const k of colls) count[k.kind] = (count[k.kind] ?? 0) + 1;
  assert.deepEqual(count, cfg.coll, `${what}: collectives ${JSON.stringify(colls)}\n${cost.asText()}`);
  if (cfg.bytes)
    assert.deepEqual(
      colls.map((k) => k.bytes),
      cfg.bytes,
      `${what}: collective bytes`,
    );
}

test("the table has at least 25 programs", () => {
  assert.ok(CASES.length >= 25, `${CASES.length} programs`);
});

for (const runtime of RUNTIMES)
  for (const c of CASES)
    test(`jit with shardings (${runtime}): ${c.name}`, () => {
      const before = config.spmdRuntime;
      config.update("spmdRuntime", runtime);
      try {
        for (const cfg of c.configs) runConfig(c, cfg, runtime);
      } finally {
        config.update("spmdRuntime", before);
      }
    });
