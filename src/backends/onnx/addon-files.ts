/** @file Where jaxts's native runner addon is found (an explicit path, the package's prebuild, the source build) and the one line printed when it is not. */

import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

/** The addon the npm package ships for this platform (scripts/build-native.mjs --prebuild writes it). */
export function prebuildPath(root: string): string {
  return join(root, "prebuilds", `${process.platform}-${process.arch}`, "jaxts-ort.node");
}

/**
 * Addon files to try, in order: JAXTS_NATIVE_ADDON alone when set; else the prebuild, then the source build
 * (native/build/jaxts-ort.node, from `npm run build` or the install step) — the source build first when it is newer,
 * so a checkout that rebuilt its sources never runs a stale prebuild. Only files that exist.
 */
export function addonFiles(root: string | null): string[] {
  const explicit = process.env.JAXTS_NATIVE_ADDON;
  if (explicit) return existsSync(explicit) ? [resolve(explicit)] : []; // relative to the working directory
  if (!root) return [];
  const files = [prebuildPath(root), join(root, "native", "build", "jaxts-ort.node")].filter((f) => existsSync(f));
  if (files.length === 2 && statSync(files[1]).mtimeMs > statSync(files[0]).mtimeMs) files.reverse();
  return files;
}

/** Why no addon file was found, for runnerKind().why and the warning. */
export function noAddonReason(root: string | null): string {
  const explicit = process.env.JAXTS_NATIVE_ADDON;
  if (explicit) return `JAXTS_NATIVE_ADDON=${explicit} does not exist`;
  return (
    `no prebuilt addon for ${process.platform}-${process.arch} and native/build/jaxts-ort.node is not built` +
    ` (${root ? "npm run build, or `npm rebuild jaxts` in a project using it, compiles it with g++" : "package root not found"})`
  );
}

let warned = false;

/** Prints, once per process, that sessions run on onnxruntime-node's binding and why (silent with JAXTS_NATIVE=0). */
export function warnNoNativeRunner(why: string): void {
  if (warned || process.env.JAXTS_NATIVE === "0") return;
  warned = true;
  console.warn(
    `jaxts: native ONNX Runtime runner unavailable (${why.replace(/\s*\n\s*/g, " ")}); using onnxruntime-node's binding (slower: it copies every output). JAXTS_NATIVE=0 silences this.`,
  );
}
