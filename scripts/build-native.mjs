// @file Builds the optional native addon (ONNX Runtime runner, its GEMM custom op and fused elementwise kernels: native/*.cc -> native/build/jaxts-ort.node) with g++; never fails the build.
// Without it jaxts runs through onnxruntime-node's own binding (slower: that binding copies every output).
import { existsSync, mkdirSync, renameSync, statSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const sources = ["ort-addon.cc", "fused.cc", "gemm-op.cc", "sgemm.cc", "arena.cc"].map((f) => join(root, "native", f));
const headers = ["fused-kernel.inc", "fused.h", "gemm-op.h", "ort-api.h", "sgemm.h"].map((f) => join(root, "native", f));
const outDir = join(root, "native", "build");
const out = join(outDir, "jaxts-ort.node");

function note(msg) {
  console.error(`build-native: ${msg}`);
}

function nodeApiIncludeDir() {
  const candidates = [
    join(dirname(process.execPath), "..", "include", "node"),
    "/usr/include/node",
    "/usr/local/include/node",
  ];
  return candidates.find((d) => existsSync(join(d, "node_api.h"))) ?? null;
}

function main() {
  if (process.env.JAXTS_NATIVE === "0") return note("skipped (JAXTS_NATIVE=0)");
  if (process.platform !== "linux") return note(`skipped: only built on Linux (this is ${process.platform})`);
  if (existsSync(out) && [...sources, ...headers].every((f) => statSync(out).mtimeMs >= statSync(f).mtimeMs)) return; // up to date
  const inc = nodeApiIncludeDir();
  if (!inc) return note("skipped: Node-API headers (node_api.h) not found; using onnxruntime-node's binding");
  const cxx = process.env.CXX || "g++";
  mkdirSync(outDir, { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  // no FMA contraction: the fused elementwise kernels round exactly like their WebAssembly twin
  const args = ["-O2", "-std=c++17", "-ffp-contract=off", "-shared", "-fPIC", "-fvisibility=hidden", `-I${inc}`, ...sources, "-o", tmp, "-ldl", "-lpthread"];
  const res = spawnSync(cxx, args, { encoding: "utf8" });
  if (res.error || res.status !== 0) {
    rmSync(tmp, { force: true });
    return note(`skipped: ${cxx} failed (${res.error?.message ?? res.stderr.trim().split("\n").slice(0, 5).join(" | ")}); using onnxruntime-node's binding`);
  }
  renameSync(tmp, out); // atomic: a concurrent reader never sees a half-written addon
  note(`built ${out}`);
}

main();
