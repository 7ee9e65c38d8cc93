/**
 * @file The matrix: the suite's shardMap / pmap / xmap / collective tests (golden values from JAX) and the transformer's
 * data and tensor parallel steps run on the device runtime in the suite itself (spmdRuntime "auto" resolves to it when
 * the addon is loaded; their meshes span 1 to 8 devices); here they run again in child processes with
 * JAXTS_SPMD_RUNTIME=emulation, so the oracle passes them too, and no file of them may launch a device program then.
 * Without the addon the suite already ran them on the emulation, so then they rerun with JAXTS_SPMD_RUNTIME=devices
 * (which falls back per call) and must agree as well.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { resolvedSpmdRuntime } from "../../src/runtime/index.js";

/** The runtime the suite did not run these files on. */
const other = resolvedSpmdRuntime() === "devices" ? "emulation" : "devices";
/** The compiled tree (dist/): the child runs the compiled test files from there. */
const distRoot = fileURLToPath(new URL("../..", import.meta.url));
const FILES = [
  "parallel/shard-map",
  "parallel/pmap",
  "parallel/pmap-static",
  "parallel/collectives",
  "parallel/xmap",
  "models/transformer",
];

test(`the shardMap / pmap / xmap / collective tests pass with spmdRuntime '${other}' too (the emulation launches nothing)`, () => {
  const preload = (m: string) => `--import=${new URL(m, import.meta.url).href}`;
  const files = FILES.map((f) => `test/${f}.test.js`);
  // a clean environment for a nested test runner (node:test marks its children with NODE_TEST_CONTEXT)
  const env: NodeJS.ProcessEnv = { ...process.env, JAXTS_SPMD_RUNTIME: other, NODE_OPTIONS: "" };
  delete env.NODE_TEST_CONTEXT;
  const res = spawnSync(
    process.execPath,
    [
      preload("../../src/backends/onnx/onnx-backend.js"),
      preload("./report-launches.js"),
      "--test",
      "--test-concurrency=2",
      // the transformer file's single-device training test has no parallel API in it
      "--test-name-pattern=^(?!training reduces the loss)",
      ...files,
    ],
    {
      cwd: distRoot,
      encoding: "utf8",
      env,
    },
  );
  const out = res.stdout + res.stderr;
  assert.equal(
    res.status,
    0,
    out
      .split("\n")
      .filter((l) => /^not ok|error|Error/.test(l))
      .slice(0, 20)
      .join("\n"),
  );
  assert.match(out, new RegExp(`# pass \\d+\\n# fail 0`));
  // the runner prints each file's stderr under its name: on the emulation no file made a device launch
  const counts = [...out.matchAll(/jaxts-device-launches (\d+)/g)].map((m) => Number(m[1]));
  assert.equal(counts.length, files.length, `one launch report per file: ${counts}`);
  if (other === "emulation")
    counts.forEach((c) => assert.equal(c, 0, `a file of ${FILES.join(", ")} launched on the emulation (${counts})`));
});
