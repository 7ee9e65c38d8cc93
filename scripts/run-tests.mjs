// @file Runs every compiled test file (dist/test/**/*.test.js) with Node's built-in test runner.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnSync } from "node:child_process";

function collect(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) collect(p, out);
    else if (name.endsWith(".test.js")) out.push(p);
  }
  return out;
}

// paths below are relative to the repository root, whatever directory this script is started from
process.chdir(fileURLToPath(new URL("..", import.meta.url)));
const filter = process.argv.slice(2);
let files = collect("dist/test", []);
// tsc never deletes outputs: a compiled test whose source was removed or renamed is stale, not part of the suite
const stale = files.filter((f) => !existsSync(f.replace(/^dist[\\/]/, "").replace(/\.js$/, ".ts")));
if (stale.length > 0)
  console.error(`run-tests: skipping ${stale.length} compiled test(s) whose source is gone: ${stale.join(", ")}`);
files = files.filter((f) => !stale.includes(f));
if (filter.length > 0) files = files.filter((f) => filter.some((s) => f.includes(s)));
if (files.length === 0) {
  console.error("run-tests: no test files found under dist/test");
  process.exit(1);
}
// the ONNX Runtime backend is the default: preload it so tests that import only core modules use it too
const preload = `--import=${new URL("../dist/src/backends/onnx/onnx-backend.js", import.meta.url).href}`;
const env = { ...process.env, NODE_OPTIONS: [process.env.NODE_OPTIONS, preload].filter(Boolean).join(" ") };
const res = spawnSync(process.execPath, ["--test", "--test-concurrency=2", ...files], { stdio: "inherit", env });
process.exit(res.status ?? 1);
