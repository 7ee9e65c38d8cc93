/**
 * @file Fused elementwise kernels on several threads. Inputs live in ordinary (non-shared) memory only this
 * thread can read, so this thread copies chunks into the kernel's shared memory slots, helper threads evaluate
 * the chunks posted to their slots while this thread evaluates others, and this thread copies results out. A
 * chunk not yet taken by a helper is taken back, so a slow or absent helper only costs parallelism.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { FusedSpec } from "../../compiler/fuse-elementwise.js";
import { KERNEL_CHUNK, WasmKernel } from "./wasm-kernel.js";

/** Slots per helper thread: its queue of posted chunks (deep enough that it never waits for this thread). */
const SLOTS = 4;
const MAX_HELPERS = 8;

/** Tunables. */
export const fusedThreadOptions = {
  /** Helper threads (default: one per extra core; 0 disables). Read when the first parallel kernel is made. */
  helpers: Math.max(0, Math.min(MAX_HELPERS, availableParallelism() - 1)),
  /** Calls with fewer elements run on this thread only (waking a helper costs tens of µs). */
  minElements: 1 << 17,
  /** A helper holding a chunk longer than this is considered stuck: the chunk is redone here and helpers are retired. */
  stuckMs: 2000,
};

// control words (Int32Array over a SharedArrayBuffer), shared with fused-worker.ts
const CALL = 0, STATE = 4, COUNT = 36, BASE = 68, READY = 100, CTRL_WORDS = 116;
const EMPTY = 0, POSTED = 1, TAKEN = 2, DONE = 3;

let workers: Worker[] | null = null;
let retired = false;
function helperThreads(): Worker[] {
  if (workers === null) {
    workers = [];
    for (let w = 0; w < fusedThreadOptions.helpers; w++) {
      try {
        const wk = new Worker(new URL("./fused-worker.js", import.meta.url));
        wk.on("error", () => { retired = true; });
        wk.unref();
        workers.push(wk);
      } catch {
        retired = true;
        break;
      }
    }
  }
  return workers;
}

let nextId = 1;
const dropped = new FinalizationRegistry<number>((id) => { for (const w of workers ?? []) w.postMessage({ type: "drop", id }); });

/** A fused kernel that spreads large calls over helper threads. */
export class ParallelKernel {
  private readonly ctrl: Int32Array;
  private readonly id = nextId++;
  private registered = false;
  private seq = 0;
  private constructor(readonly kernel: WasmKernel, private readonly helpers: number) {
    this.ctrl = new Int32Array(new SharedArrayBuffer(CTRL_WORDS * 4));
    if (helpers > 0) dropped.register(this, this.id);
  }

  /** null where WebAssembly SIMD is unavailable. */
  static create(spec: FusedSpec): ParallelKernel | null {
    const helpers = retired ? 0 : fusedThreadOptions.helpers;
    const kernel = WasmKernel.create(spec, SLOTS * helpers);
    return kernel ? new ParallelKernel(kernel, helpers) : null;
  }

  /** As WasmKernel.run (outputs may alias inputs), spread over helper threads when the call is large. */
  run(ins: readonly Float32Array[], scalars: readonly number[], outs: readonly Float32Array[], n: number): void {
    const ready = this.readyHelpers(n);
    if (ready.length === 0) { this.kernel.run(ins, scalars, outs, n); return; }
    const k = this.kernel, ctrl = this.ctrl, fn = k.fn;
    k.setScalars(scalars);
    this.seq = (this.seq % 0x3fffffff) + 1;
    Atomics.store(ctrl, CALL, this.seq);
    const ws = helperThreads();
    for (const w of ready) ws[w].postMessage({ type: "run", id: this.id, seq: this.seq });
    const slots: number[] = [];
    for (const w of ready) for (let q = 0; q < SLOTS; q++) slots.push(SLOTS * w + q);
    const chunks = Math.ceil(n / KERNEL_CHUNK);
    const chunkOf = new Array<number>(SLOTS * this.helpers).fill(-1), sizeOf = new Array<number>(SLOTS * this.helpers).fill(0);
    let next = 0;
    const post = (s: number): void => {
      const c = next++;
      const m = k.fill(1 + s, ins, c, n);
      chunkOf[s] = c;
      sizeOf[s] = m;
      Atomics.store(ctrl, COUNT + s, WasmKernel.bytesFor(m));
      Atomics.store(ctrl, BASE + s, k.slotBase(1 + s));
      Atomics.store(ctrl, STATE + s, POSTED);
    };
    const finish = (s: number): void => {
      k.drain(1 + s, outs, chunkOf[s], sizeOf[s]);
      chunkOf[s] = -1;
      Atomics.store(ctrl, STATE + s, EMPTY);
    };
    try {
      for (const s of slots) if (next < chunks) post(s);
      const base0 = k.slotBase(0);
      let deadline = 0;
      for (;;) {
        for (const s of slots) {
          if (chunkOf[s] >= 0 && Atomics.load(ctrl, STATE + s) === DONE) { finish(s); if (next < chunks) post(s); }
        }
        if (next < chunks) {
          // serve the helpers first; evaluate a chunk here only while every helper slot is occupied
          let full = true;
          for (const s of slots) if (chunkOf[s] < 0) { full = false; break; }
          if (!full) continue;
          const c = next++;
          const m = k.fill(0, ins, c, n);
          fn(WasmKernel.bytesFor(m), base0);
          k.drain(0, outs, c, m);
          continue;
        }
        // everything is handed out: take back chunks no helper has started, wait for the rest
        let busy = false;
        for (const s of slots) {
          if (chunkOf[s] < 0) continue;
          if (Atomics.compareExchange(ctrl, STATE + s, POSTED, EMPTY) === POSTED) {
            fn(WasmKernel.bytesFor(sizeOf[s]), k.slotBase(1 + s));
            k.drain(1 + s, outs, chunkOf[s], sizeOf[s]);
            chunkOf[s] = -1;
          } else busy = true;
        }
        if (!busy) break;
        if (deadline === 0) deadline = performance.now() + fusedThreadOptions.stuckMs;
        else if (performance.now() > deadline) {
          // a helper is stuck: redo its chunks here (their inputs are intact) and stop using helpers
          retired = true;
          for (const s of slots) {
            if (chunkOf[s] < 0 || Atomics.load(ctrl, STATE + s) === DONE) continue;
            fn(WasmKernel.bytesFor(sizeOf[s]), k.slotBase(1 + s));
            k.drain(1 + s, outs, chunkOf[s], sizeOf[s]);
            chunkOf[s] = -1;
          }
        }
      }
    } finally {
      Atomics.store(ctrl, CALL, 0);
      Atomics.notify(ctrl, CALL);
    }
  }

  /** Helpers that have instantiated this kernel (registering it with them on first use). */
  private readyHelpers(n: number): number[] {
    if (this.helpers === 0 || retired || n < fusedThreadOptions.minElements) return [];
    const ws = helperThreads();
    if (!this.registered) {
      this.registered = true;
      const c = this.kernel.compiled;
      ws.forEach((w, i) => w.postMessage({ type: "kernel", id: this.id, module: c.module, memory: c.memory, ctrl: this.ctrl.buffer, slot0: SLOTS * i, slots: SLOTS, readyIndex: READY + i }));
    }
    const ready: number[] = [];
    for (let w = 0; w < Math.min(ws.length, this.helpers); w++) if (Atomics.load(this.ctrl, READY + w) === 1) ready.push(w);
    return ready;
  }
}
