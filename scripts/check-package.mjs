// @file CI check of the npm package: `npm pack`, then an install of the tarball into an empty project (dependencies
// from this machine's npm cache, the registry only for what it lacks) that imports jaxts and computes with it on the
// shipped prebuilt addon, and without any addon prints one line and computes the same on onnxruntime-node's binding.
// Needs `npm run build && npm run build:prebuild` first (.ci/run does both); about 40 s.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

const root = fileURLToPath(new URL("..", import.meta.url));
const prebuild = join(root, "prebuilds", `${process.platform}-${process.arch}`, "jaxts-ort.node");
for (const f of [join(root, "dist", "src", "index.js"), prebuild])
  if (!existsSync(f))
    throw new Error(`check-package: ${f} is missing (run npm run build && npm run build:prebuild first)`);

const env = { ...process.env, ONNXRUNTIME_NODE_INSTALL: "skip", npm_config_audit: "false", npm_config_fund: "false" };
function sh(cmd, args, cwd, extraEnv = {}) {
  const res = spawnSync(cmd, args, { cwd, encoding: "utf8", env: { ...env, ...extraEnv } });
  if (res.error || res.status !== 0)
    throw new Error(`check-package: ${cmd} ${args.join(" ")} failed (${res.status}):\n${res.stderr}\n${res.stdout}`);
  return res;
}

const tmp = mkdtempSync(join(tmpdir(), "jaxts-pack-"));
try {
  // 1. the tarball: the allowlist, nothing else
  const [packed] = JSON.parse(sh("npm", ["pack", "--json", "--pack-destination", tmp], root).stdout);
  const paths = packed.files.map((f) => f.path);
  for (const want of [
    "package.json",
    "README.md",
    "LICENSE",
    "CHANGELOG.md",
    "FEATURES.md",
    "dist/src/index.js",
    "dist/src/index.d.ts",
    `prebuilds/${process.platform}-${process.arch}/jaxts-ort.node`,
    "native/ort-addon.cc",
    "native/cpu-level.h",
    "scripts/build-native.mjs",
  ])
    assert.ok(paths.includes(want), `the package carries ${want}`);
  const stray = paths.filter(
    (p) =>
      /^(test|bench|examples|notes|src|dist\/(test|bench|examples)|native\/build|\.ci)\//.test(p) ||
      p.endsWith(".tsbuildinfo"),
  );
  assert.deepEqual(stray, [], "no tests, benches, examples, notes, TypeScript sources or build leftovers");
  console.log(
    `check-package: ${packed.filename}: ${packed.entryCount} files, ${packed.size} bytes packed, ${packed.unpackedSize} unpacked`,
  );

  // 2. an empty project installs it (dependencies from the npm cache where it has them)
  const app = join(tmp, "app");
  sh("mkdir", ["-p", app], tmp);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "jaxts-pack-check", private: true, type: "module" }));
  sh("npm", ["install", "--prefer-offline", join(tmp, packed.filename)], app);
  const installed = join(app, "node_modules", "jaxts");
  assert.ok(!existsSync(join(installed, "native", "build")), "nothing was compiled at install: the prebuild serves");
  writeFileSync(
    join(app, "check.mjs"),
    `
    import * as jax from "jaxts";
    import { numpy as jnp } from "jaxts";
    const { runnerKind } = await import(new URL("./node_modules/jaxts/dist/src/backends/onnx/ort-runtime.js", import.meta.url).href);
    const x = jnp.reshape(jnp.arange(12, undefined, undefined, "float32"), [3, 4]);
    const f = jax.jit((a) => jnp.sum(jnp.tanh(jnp.multiply(jnp.matmul(a, jnp.transpose(a)), 0.01))));
    const g = jax.grad((a) => jnp.sum(jnp.multiply(a, a)))(x);
    console.log(JSON.stringify({ runner: runnerKind().kind, f: f(x).item(), g: g.tolist() }));
  `,
  );
  const run = () => {
    const res = sh(process.execPath, ["check.mjs"], app, { JAXTS_NATIVE: "", JAXTS_NATIVE_ADDON: "", JAXTS_CPU: "" });
    return { ...JSON.parse(res.stdout.trim().split("\n").pop()), stderr: res.stderr };
  };
  // float64 references: sum of tanh(0.01 x x^T) for x = arange(12) as 3 x 4, and d/dx sum(x^2) = 2x
  const grad = [
    [0, 2, 4, 6],
    [8, 10, 12, 14],
    [16, 18, 20, 22],
  ];
  let want = 0;
  for (let i = 0; i < 3; i++)
    for (let j = 0; j < 3; j++) {
      let dot = 0;
      for (let k = 0; k < 4; k++) dot += (4 * i + k) * (4 * j + k);
      want += Math.tanh(0.01 * dot);
    }
  const withAddon = run();
  assert.equal(withAddon.runner, "native", withAddon.stderr);
  assert.doesNotMatch(withAddon.stderr, /runner unavailable/);
  assert.deepEqual(withAddon.g, grad);
  assert.ok(Math.abs(withAddon.f - want) < 1e-5, `sum tanh(0.01 x x^T) = ${withAddon.f}, float64 gives ${want}`);

  // 3. no addon at all: one line, the binding, the same numbers
  rmSync(join(installed, "prebuilds"), { recursive: true });
  const without = run();
  assert.equal(without.runner, "onnxruntime-node");
  const lines = without.stderr.split("\n").filter((l) => l.startsWith("jaxts: native ONNX Runtime runner unavailable"));
  assert.equal(lines.length, 1, without.stderr);
  assert.match(lines[0], /no prebuilt addon for .* and native\/build\/jaxts-ort\.node is not built/);
  assert.deepEqual(without.g, grad);
  assert.ok(Math.abs(without.f - want) < 1e-5, `sum tanh(0.01 x x^T) = ${without.f}, float64 gives ${want}`);
  console.log(
    "check-package: the installed package runs on its prebuilt addon, and without it on onnxruntime-node's binding (one line)",
  );
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
