/**
 * @file Entry point of a helper thread for fused elementwise kernels (see fused-workers.ts): it instantiates
 * kernels over their shared memory and, during a call, takes posted chunks from its slots and evaluates them.
 */
import { parentPort } from "node:worker_threads";

interface KernelMsg { type: "kernel"; id: number; module: object; memory: object; ctrl: SharedArrayBuffer; slot0: number; slots: number; readyIndex: number }
interface RunMsg { type: "run"; id: number; seq: number }
interface DropMsg { type: "drop"; id: number }

declare const WebAssembly: { Instance: new (m: object, i: object) => { exports: Record<string, unknown> } };

/** Control words (Int32): see fused-workers.ts. */
const CALL = 0, STATE = 4, COUNT = 36, BASE = 68;
const POSTED = 1, TAKEN = 2, DONE = 3;

interface Kernel { fn: (count: number, base: number) => void; ctrl: Int32Array; slot0: number; slots: number }
const kernels = new Map<number, Kernel>();

parentPort!.on("message", (m: KernelMsg | RunMsg | DropMsg) => {
  if (m.type === "kernel") {
    const inst = new WebAssembly.Instance(m.module, { e: { m: m.memory } });
    const ctrl = new Int32Array(m.ctrl);
    kernels.set(m.id, { fn: inst.exports.k as (count: number, base: number) => void, ctrl, slot0: m.slot0, slots: m.slots });
    Atomics.store(ctrl, m.readyIndex, 1);
  } else if (m.type === "drop") {
    kernels.delete(m.id);
  } else {
    const k = kernels.get(m.id);
    if (k) work(k, m.seq);
  }
});

/** While call `seq` lasts, evaluate every chunk posted to this thread's slots. */
function work(k: Kernel, seq: number): void {
  const { fn, ctrl, slot0, slots } = k;
  let idle = 0;
  while (Atomics.load(ctrl, CALL) === seq) {
    let found = false;
    for (let s = slot0; s < slot0 + slots; s++) {
      if (Atomics.compareExchange(ctrl, STATE + s, POSTED, TAKEN) !== POSTED) continue;
      fn(Atomics.load(ctrl, COUNT + s), Atomics.load(ctrl, BASE + s));
      Atomics.store(ctrl, STATE + s, DONE);
      found = true;
    }
    // nothing posted: spin briefly, then nap in short waits (the call ends when CALL changes)
    if (!found && ++idle > 2000) { Atomics.wait(ctrl, CALL, seq, 0.2); idle = 0; }
    else if (found) idle = 0;
  }
}
