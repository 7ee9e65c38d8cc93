/**
 * @file The matrix: the suite's shardMap / pmap / xmap / collective tests (golden values from JAX, the emulation's own
 * checks) and the transformer's data and tensor parallel steps run again in child processes with
 * JAXTS_SPMD_RUNTIME=devices (their meshes span 1 to 8 devices), so each must pass on the real runtime too, and each
 * file must really have launched device programs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { deviceRuntimeUnavailable } from "../../src/runtime/index.js";

const skip = deviceRuntimeUnavailable() ?? false;
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

test(
  "the shardMap / pmap / xmap / collective tests pass with spmdRuntime 'devices' and launch on the devices",
  { skip },
  () => {
    const preload = (m: string) => `--import=${new URL(m, import.meta.url).href}`;
    const files = FILES.map((f) => `test/${f}.test.js`);
    // a clean environment for a nested test runner (node:test marks its children with NODE_TEST_CONTEXT)
    const env: NodeJS.ProcessEnv = { ...process.env, JAXTS_SPMD_RUNTIME: "devices", NODE_OPTIONS: "" };
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
    // the runner prints each file's stderr under its name: every file made device launches
    const counts = [...out.matchAll(/jaxts-device-launches (\d+)/g)].map((m) => Number(m[1]));
    assert.equal(counts.length, files.length, `one launch report per file: ${counts}`);
    counts.forEach((c) => assert.ok(c > 0, `a file of ${FILES.join(", ")} made no device launch (${counts})`));
  },
);
