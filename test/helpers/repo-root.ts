/** @file Locates the repository root from this module's own URL (works from src or dist, whatever the cwd), and reads fixtures under it. */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

let cached: string | null = null;

/** The nearest ancestor of this file holding jaxts's package.json. */
export function repoRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === "jaxts")
      return (cached = dir);
    const up = dirname(dir);
    if (up === dir) throw new Error(`repoRoot: no jaxts package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

/** A path under the repository root given as segments relative to it (e.g. "test", "fixtures", "x.json"). */
export const repoPath = (...segments: string[]): string => resolve(repoRoot(), ...segments);

/** Parses a JSON file under test/fixtures (the name may include a subfolder, e.g. "golden/random.json"). */
export function readFixtureJson<T>(name: string): T {
  return JSON.parse(readFileSync(repoPath("test", "fixtures", ...name.split("/")), "utf8")) as T;
}
