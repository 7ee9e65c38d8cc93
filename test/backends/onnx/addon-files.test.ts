/** @file Where the native addon is looked for (JAXTS_NATIVE_ADDON, the package's prebuild, the source build, newest first) and the one line printed without it. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addonFiles, noAddonReason, prebuildPath, warnNoNativeRunner } from "../../../src/backends/onnx/addon-files.js";
import { runnerKind } from "../../../src/backends/onnx/ort-runtime.js";

/** Runs f with JAXTS_NATIVE_ADDON set to `value` (or unset), restoring it after. */
function withAddonEnv<T>(value: string | undefined, f: () => T): T {
  const prev = process.env.JAXTS_NATIVE_ADDON;
  if (value === undefined) delete process.env.JAXTS_NATIVE_ADDON;
  else process.env.JAXTS_NATIVE_ADDON = value;
  try {
    return f();
  } finally {
    if (prev === undefined) delete process.env.JAXTS_NATIVE_ADDON;
    else process.env.JAXTS_NATIVE_ADDON = prev;
  }
}

test("the prebuild is tried first, the source build next; a source build newer than the prebuild goes first", () => {
  const root = mkdtempSync(join(tmpdir(), "jaxts-addon-"));
  try {
    const pre = prebuildPath(root),
      src = join(root, "native", "build", "jaxts-ort.node");
    assert.equal(pre, join(root, "prebuilds", `${process.platform}-${process.arch}`, "jaxts-ort.node"));
    withAddonEnv(undefined, () => {
      assert.deepEqual(addonFiles(root), []);
      assert.match(
        noAddonReason(root),
        new RegExp(
          `no prebuilt addon for ${process.platform}-${process.arch} and native/build/jaxts-ort.node is not built`,
        ),
      );
      mkdirSync(join(root, "native", "build"), { recursive: true });
      writeFileSync(src, "");
      assert.deepEqual(addonFiles(root), [src]);
      mkdirSync(join(pre, ".."), { recursive: true });
      writeFileSync(pre, "");
      utimesSync(src, 1000, 1000);
      utimesSync(pre, 2000, 2000);
      assert.deepEqual(addonFiles(root), [pre, src], "an installed package: its prebuild first");
      utimesSync(src, 3000, 3000);
      assert.deepEqual(addonFiles(root), [src, pre], "a checkout that rebuilt its sources runs them");
      assert.deepEqual(addonFiles(null), []);
    });
    // an explicit file is the only candidate, and a missing one is named
    withAddonEnv(src, () => assert.deepEqual(addonFiles(root), [src]));
    const cwd = process.cwd();
    process.chdir(root);
    try {
      withAddonEnv("native/build/jaxts-ort.node", () =>
        assert.deepEqual(addonFiles(null), [src], "a relative path is the working directory's"),
      );
    } finally {
      process.chdir(cwd);
    }
    const missing = join(root, "nope.node");
    withAddonEnv(missing, () => {
      assert.deepEqual(addonFiles(root), []);
      assert.equal(noAddonReason(root), `JAXTS_NATIVE_ADDON=${missing} does not exist`);
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("without the addon jaxts prints one line saying why and what it uses instead, once per process", () => {
  // loading the runner here first: without an addon (or with JAXTS_NATIVE=0) its one chance to print is spent
  const loaded = runnerKind().kind === "native";
  const lines: string[] = [];
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    lines.push(args.join(" "));
  };
  try {
    warnNoNativeRunner("no prebuilt addon for linux-riscv64\nand no compiler");
    warnNoNativeRunner("another reason");
  } finally {
    console.warn = warn;
  }
  if (!loaded || process.env.JAXTS_NATIVE === "0") {
    assert.deepEqual(lines, [], "printed at most once (by the runner's load), never with JAXTS_NATIVE=0");
    return;
  }
  assert.deepEqual(lines, [
    "jaxts: native ONNX Runtime runner unavailable (no prebuilt addon for linux-riscv64 and no compiler); " +
      "using onnxruntime-node's binding (slower: it copies every output). JAXTS_NATIVE=0 silences this.",
  ]);
});
