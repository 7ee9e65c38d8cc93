// @file Builds the optional native addon (ONNX Runtime runner, its GEMM custom op, fused elementwise kernels, device executors and collective ops: native/*.cc -> native/build/jaxts-ort.node) with g++; never fails the build.
// Without it jaxts runs through onnxruntime-node's own binding (slower: that binding copies every output).
//   (no flag)   native/build/jaxts-ort.node, skipped when up to date (npm run build)
//   --prebuild  prebuilds/<platform>-<arch>/jaxts-ort.node, the addon the npm package ships (stripped);
//               exits 1 when it cannot be built, since a package must not ship without it (npm run build:prebuild)
//   --install   npm's install step: nothing when the package ships a prebuild for this platform, else the source build
//   --out FILE  another output file (always rebuilt; exits 1 when it cannot be built)
// JAXTS_NO_X86=1 compiles the portable kernels other architectures get, even on x86 (to test that path here).
import { existsSync, mkdirSync, renameSync, statSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const sources = [
  "ort-addon.cc",
  "fused.cc",
  "gemm-op.cc",
  "linalg-ops.cc",
  "fft-ops.cc",
  "linalg-eig-kernels.cc",
  "sgemm.cc",
  "cpu-level.cc",
  "arena.cc",
  "devices.cc",
  "executor.cc",
  "block-copy.cc",
  "shm-communicator.cc",
  "reduce-kernels.cc",
  "collective-ops.cc",
  "async-collective-ops.cc",
  "mailbox-collectives.cc",
  "mpi-loader.cc",
  "mpi-communicator.cc",
  "mpi-ring-collectives.cc",
  "mpi-napi.cc",
  "mpi-shm.cc",
  "mpi-stream-kernels.cc",
].map((f) => join(root, "native", f));
const headers = [
  "cpu-level.h",
  "fused-kernel.inc",
  "fused.h",
  "fused-attrs.h",
  "gemm-op.h",
  "linalg-ops.h",
  "fft-ops.h",
  "custom-op-util.h",
  "linalg-eig-kernels.h",
  "ort-api.h",
  "sgemm.h",
  "communicator.h",
  "reduce-kernels.h",
  "reduce-kernel.inc",
  "half-float.h",
  "device-context.h",
  "executor.h",
  "ort-globals.h",
  "collective-ops.h",
  "async-collective-ops.h",
  "mailbox-collectives.h",
  "bounded-poll.h",
  "meeting-registry.h",
  "napi-util.h",
  "mpi-loader.h",
  "mpi-communicator.h",
  "mpi-process-communicator.h",
  "mpi-shm.h",
  "mpi-stream-kernels.h",
].map((f) => join(root, "native", f));
const argv = process.argv.slice(2);
const prebuild = argv.includes("--prebuild");
const install = argv.includes("--install");
const outArg = argv.indexOf("--out");
const prebuildFile = join(root, "prebuilds", `${process.platform}-${process.arch}`, "jaxts-ort.node");
const out =
  outArg >= 0
    ? resolve(argv[outArg + 1] ?? "")
    : prebuild
      ? prebuildFile
      : join(root, "native", "build", "jaxts-ort.node");

function note(msg) {
  console.error(`build-native: ${msg}`);
}

/** Reports why nothing was built: an error exit for --prebuild (a package without its addon must not ship) and --out. */
function skip(msg) {
  note(`skipped: ${msg}`);
  if (prebuild || outArg >= 0) process.exitCode = 1;
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
  if (process.env.JAXTS_NATIVE === "0") return skip("JAXTS_NATIVE=0");
  if (process.platform !== "linux") return skip(`only built on Linux (this is ${process.platform})`);
  if (install && existsSync(prebuildFile)) return; // the package ships this platform's addon
  const fixed = outArg < 0 && !prebuild;
  if (fixed && existsSync(out) && [...sources, ...headers].every((f) => statSync(out).mtimeMs >= statSync(f).mtimeMs))
    return; // up to date
  const inc = nodeApiIncludeDir();
  if (!inc) return skip("Node-API headers (node_api.h) not found; using onnxruntime-node's binding");
  const cxx = process.env.CXX || "g++";
  mkdirSync(dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  // no FMA contraction: the fused elementwise kernels round exactly like their WebAssembly twin
  const args = ["-O2", "-std=c++17", "-ffp-contract=off", "-shared", "-fPIC", "-fvisibility=hidden", `-I${inc}`];
  if (process.env.JAXTS_NO_X86 === "1") args.push("-DJAXTS_NO_X86=1");
  // a prebuild runs on other machines: stripped. It links the system libstdc++ (built on Debian 12 it needs glibc >= 2.34
  // and GCC >= 12's libstdc++, e.g. Ubuntu 22.04); a static libstdc++ would pull in glibc 2.36's arc4random instead.
  // Where it does not load, jaxts tries the source build, then onnxruntime-node's binding.
  if (prebuild) args.push("-s");
  args.push(...sources, "-o", tmp, "-ldl", "-lpthread", "-lrt");
  const res = spawnSync(cxx, args, { encoding: "utf8" });
  if (res.error || res.status !== 0) {
    rmSync(tmp, { force: true });
    return skip(
      `${cxx} failed (${res.error?.message ?? res.stderr.trim().split("\n").slice(0, 5).join(" | ")}); using onnxruntime-node's binding`,
    );
  }
  renameSync(tmp, out); // atomic: a concurrent reader never sees a half-written addon
  note(`built ${out}${process.env.JAXTS_NO_X86 === "1" ? " (JAXTS_NO_X86: portable kernels)" : ""}`);
}

main();
