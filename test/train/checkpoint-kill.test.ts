/**
 * @file A job checkpoint survives a real kill: a child process saves a small checkpoint, then starts overwriting it
 * with a large one and is SIGKILLed while the bytes are being written; the previous checkpoint still loads intact.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { numpy as jnp } from "../../src/index.js";
import { CHECKPOINT_FILE, loadTrainState, saveTrainState } from "../../src/train/checkpoint.js";

const CHECKPOINT_JS = new URL("../../src/train/checkpoint.js", import.meta.url).href;
const INDEX_JS = new URL("../../src/index.js", import.meta.url).href;

/** The child: a small checkpoint (step 1), "saved" on stdout, then a ~96 MB one over it (never finished). */
const CHILD = `
import { numpy as jnp } from ${JSON.stringify(INDEX_JS)};
import { saveTrainState } from ${JSON.stringify(CHECKPOINT_JS)};
const dir = process.argv[2];
saveTrainState(dir, { params: { w: jnp.arange(6).astype("float32") }, optState: { m: jnp.ones([2]) }, step: 1, losses: [2.5] });
process.stdout.write("saved\\n");
const big = jnp.ones([24 * 1024 * 1024]);
big.dataSync();
process.stdout.write("writing\\n");
saveTrainState(dir, { params: { w: big }, optState: { m: jnp.ones([2]) }, step: 2, losses: [2.5, 2.4] });
process.stdout.write("finished\\n");
`;

/** Runs the child and SIGKILLs it as soon as its temporary checkpoint file exists; true if it died mid-write. */
async function killDuringWrite(dir: string, script: string): Promise<boolean> {
  const child = spawn(process.execPath, [script, dir], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const tmpName = () => readdirSync(dir).find((n) => n.startsWith(`${CHECKPOINT_FILE}.jaxts-tmp-`));
  const killed = await new Promise<boolean>((resolve) => {
    const poll = setInterval(() => {
      if (out.includes("writing") && tmpName()) {
        child.kill("SIGKILL");
        clearInterval(poll);
        resolve(true);
      }
    }, 1);
    child.on("exit", () => {
      clearInterval(poll);
      resolve(false);
    });
  });
  await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.on("exit", r)));
  return killed && !out.includes("finished");
}

test("SIGKILL while a checkpoint is being written leaves the previous checkpoint loadable", async () => {
  const base = mkdtempSync(join(tmpdir(), "jaxts-kill-"));
  try {
    const script = join(base, "child.mjs");
    writeFileSync(script, CHILD);
    let hit = false;
    for (let attempt = 0; attempt < 3 && !hit; attempt++) {
      const dir = join(base, `run${attempt}`);
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      hit = await killDuringWrite(dir, script);
      if (!hit) continue;
      const names = readdirSync(dir);
      const tmp = names.find((n) => n.includes(".jaxts-tmp-"));
      assert.ok(tmp, `the killed write left its temporary file (${names})`);
      assert.ok(statSync(join(dir, tmp)).size < 96 * 1024 * 1024, "killed before the large file was complete");
      // the previous checkpoint is intact
      const s = loadTrainState(dir, { w: jnp.zeros([6]) }, { m: jnp.zeros([2]) });
      assert.equal(s.step, 1);
      assert.deepEqual(s.params.w.tolist(), [0, 1, 2, 3, 4, 5]);
      assert.deepEqual(s.losses, [2.5]);
      // the next save replaces it and clears the dead process's temporary file
      saveTrainState(dir, { params: { w: jnp.ones([6]) }, optState: { m: jnp.ones([2]) }, step: 3, losses: [1, 2, 3] });
      assert.ok(!readdirSync(dir).some((n) => n.includes(".jaxts-tmp-")), "stale temporary removed");
      assert.equal(loadTrainState(dir, { w: jnp.zeros([6]) }, { m: jnp.zeros([2]) }).step, 3);
      assert.ok(existsSync(join(dir, CHECKPOINT_FILE)));
    }
    assert.ok(hit, "the child was killed during the write in one of 3 attempts");
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test("loadTrainState names a missing checkpoint", () => {
  assert.throws(
    () => loadTrainState(fileURLToPath(new URL(".", import.meta.url)) + "no-such-run", {}, {}),
    /train: no checkpoint at ".*no-such-run" \(expected a run directory holding checkpoint\.safetensors\)/,
  );
});
