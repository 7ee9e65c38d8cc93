/** @file withX64: runs a test body with config enableX64 set (on by default), restoring the previous value after. */
import { config } from "../../src/core/config.js";

export function withX64<T>(f: () => T): T;
export function withX64<T>(on: boolean, f: () => T): T;
export function withX64<T>(a: boolean | (() => T), b?: () => T): T {
  const [on, f] = typeof a === "function" ? [true, a] : [a, b!];
  const saved = config.enableX64;
  config.update("enableX64", on);
  try {
    return f();
  } finally {
    config.update("enableX64", saved);
  }
}
