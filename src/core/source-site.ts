/** @file The user's source location: the first stack frame outside the jaxts sources (for debug errors). */
import { fileURLToPath } from "node:url";

const SRC_URL = new URL("../", import.meta.url).href;
const SRC_PATH = fileURLToPath(SRC_URL);

/** The first frame of the current stack that is neither in jaxts's own modules nor in Node internals; undefined if none. */
export function userSite(): string | undefined {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 64;
  const stack = new Error().stack ?? "";
  Error.stackTraceLimit = limit;
  for (const line of stack.split("\n").slice(1)) {
    const l = line.trim();
    if (!l.startsWith("at ") || l.includes(SRC_URL) || l.includes(SRC_PATH) || l.includes("node:")) continue;
    return l.slice(3);
  }
  return undefined;
}
