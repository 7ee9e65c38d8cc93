/** @file gc and assertCollected: full garbage collections for tests that check nothing keeps arrays alive. */
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";

v8.setFlagsFromString("--expose-gc");
/** A full garbage collection (V8's gc, exposed when this module loads). */
export const gc = vm.runInNewContext("gc") as () => void;

/** Two rounds of (let the event loop turn, collect garbage), then asserts that every target of `refs` is gone. */
export async function assertCollected(refs: readonly WeakRef<object>[], what: string): Promise<void> {
  for (let k = 0; k < 2; k++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  assert.deepEqual(
    refs.map((r) => r.deref() === undefined),
    refs.map(() => true),
    what,
  );
}
