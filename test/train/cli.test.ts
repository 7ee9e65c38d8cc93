/** @file The `jaxts` command: `train --help`, bad arguments and configs refused before any work, `trace` still dispatched. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../../src/cli.js", import.meta.url));
const jaxts = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8", env: { ...process.env, ...env } });

test("jaxts train --help prints the flags and exits 0", () => {
  const r = jaxts(["train", "--help"]);
  assert.equal(r.status, 0, r.stderr);
  for (const flag of ["--config", "--steps", "--mesh", "--out", "--resume", "--help"])
    assert.ok(r.stdout.includes(flag), flag);
  assert.match(r.stdout, /^usage: jaxts train/);
});

test("a bad config or flag is refused with exit code 2 before any output directory is made", () => {
  const dir = mkdtempSync(join(tmpdir(), "jaxts-cli-train-"));
  try {
    const cfg = join(dir, "bad.yaml");
    writeFileSync(cfg, "model:\n  d_modle: 64\n");
    const out = join(dir, "out");
    let r = jaxts(["train", "--config", cfg, "--out", out]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /config: unknown key 'model\.d_modle' \(did you mean 'd_model'\?\)/);
    writeFileSync(cfg, "parallel_strategy:\n  data_parallel: 2\n  tensor_parallel: 2\n");
    r = jaxts(["train", "--config", cfg, "--out", out], { JAXTS_NUM_CPU_DEVICES: "8" });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /= 4, but there are 8 devices; make the product 8/);
    r = jaxts(["train", "--mesh", "two", "--out", out]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--mesh expects DxT/);
    assert.ok(!existsSync(out), "nothing written");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("other words go to the trace tools (usage on exit 2, naming train too)", () => {
  const r = jaxts(["trace"]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /jaxts trace summary/);
  const r2 = jaxts(["nonsense"]);
  assert.equal(r2.status, 2);
  assert.match(r2.stderr, /jaxts train --help/);
});
