/**
 * @file Entry point of a helper thread for fused elementwise kernels (see fused-workers.ts): it instantiates
 * kernels over their shared memory and, during a call, takes posted chunks from its slots and evaluates them.
 */
import { parentPort } from "node:worker_threads";

interface KernelMsg {
  type: "kernel";
  id: number;
  module: object;
  memory: object;
  ctrl: SharedArrayBuffer;
  slot0: number;
  slots: number;
  helper: number;
  readyIndex: number;
}
interface RunMsg {
  type: "run";
  id: number;
  seq: number;
}
interface DropMsg {
  type: "drop";
  id: number;
}

declare const WebAssembly: { Instance: new (m: object, i: object) => { exports: Record<string, unknown> } };

/** Control words (Int32): see fused-workers.ts. */
const CALL = 0,
  STATE = 4,
  COUNT = 36,
  BASE = 68,
  NAP = 108;
const POSTED = 1,
  TAKEN = 2,
  DONE = 3;

interface Kernel {
  fn: (count: number, base: number) => void;
  ctrl: Int32Array;
  slot0: number;
  slots: number;
  nap: number;
}
const kernels = new Map<number, Kernel>();

parentPort!.on("message", (m: KernelMsg | RunMsg | DropMsg) => {
  if (m.type === "kernel") {
    const inst = new WebAssembly.Instance(m.module, { e: { m: m.memory } });
    const ctrl = new Int32Array(m.ctrl);
    kernels.set(m.id, {
      fn: inst.exports.k as (count: number, base: number) => void,
      ctrl,
      slot0: m.slot0,
      slots: m.slots,
      nap: NAP + m.helper,
    });
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
  const { fn, ctrl, slot0, slots, nap } = k;
  let idleSince = 0,
    spins = 0;
  while (Atomics.load(ctrl, CALL) === seq) {
    let found = false;
    for (let s = slot0; s < slot0 + slots; s++) {
      if (Atomics.compareExchange(ctrl, STATE + s, POSTED, TAKEN) !== POSTED) continue;
      fn(Atomics.load(ctrl, COUNT + s), Atomics.load(ctrl, BASE + s));
      Atomics.store(ctrl, STATE + s, DONE);
      found = true;
    }
    if (found) {
      idleSince = 0;
      continue;
    }
    // nothing posted: spin for a while (the poster refills within microseconds), then sleep until notified
    if ((++spins & 255) !== 0) continue;
    const now = performance.now();
    if (idleSince === 0) idleSince = now;
    else if (now - idleSince > 0.5) {
      Atomics.store(ctrl, nap, 1);
      let posted = false;
      for (let s = slot0; s < slot0 + slots; s++) if (Atomics.load(ctrl, STATE + s) === POSTED) posted = true;
      if (!posted && Atomics.load(ctrl, CALL) === seq) Atomics.wait(ctrl, nap, 1, 5);
      Atomics.store(ctrl, nap, 0);
      idleSince = 0;
    }
  }
}
