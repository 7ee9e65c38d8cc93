/**
 * @file Fused elementwise kernels on several threads. Inputs live in ordinary (non-shared) memory only this
 * thread can read, so this thread copies chunks into the kernel's shared memory slots, helper threads evaluate
 * the chunks posted to their slots while this thread evaluates others, and this thread copies results out. A
 * chunk not yet taken by a helper is taken back, so a slow or absent helper only costs parallelism.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { FusedSpec } from "./fused-spec.js";
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
const CALL = 0,
  STATE = 4,
  COUNT = 36,
  BASE = 68,
  READY = 100,
  NAP = 108,
  CTRL_WORDS = 116;
// slot states: EMPTY -> POSTED (filled here) -> TAKEN (by its helper) -> DONE -> EMPTY (drained here)
const EMPTY = 0,
  POSTED = 1,
  DONE = 3;

let workers: Worker[] | null = null;
let retired = false;
function helperThreads(): Worker[] {
  if (workers === null) {
    workers = [];
    for (let w = 0; w < fusedThreadOptions.helpers; w++) {
      try {
        const wk = new Worker(new URL("./fused-worker.js", import.meta.url));
        wk.on("error", () => {
          retired = true;
        });
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
const dropped = new FinalizationRegistry<number>((id) => {
  for (const w of workers ?? []) w.postMessage({ type: "drop", id });
});

/** A fused kernel that spreads large calls over helper threads. */
export class ParallelKernel {
  private readonly ctrl: Int32Array;
  private readonly id = nextId++;
  /** Kernel over shared memory with SLOTS slots per helper, made (and sent to the helpers) on the first large call. */
  private shared: WasmKernel | null = null;
  private seq = 0;
  /** Calls spread over helper threads so far, and chunks helpers evaluated (tests). */
  readonly stats = { parallelCalls: 0, helperChunks: 0 };
  /** `kernel`: this thread's kernel over private memory (copies to it are faster than to shared memory). */
  private constructor(
    readonly kernel: WasmKernel,
    private readonly spec: FusedSpec,
    private readonly helpers: number,
  ) {
    this.ctrl = new Int32Array(new SharedArrayBuffer(CTRL_WORDS * 4));
  }

  /** null where WebAssembly SIMD is unavailable. */
  static create(spec: FusedSpec): ParallelKernel | null {
    const kernel = WasmKernel.create(spec);
    return kernel
      ? new ParallelKernel(
          kernel,
          spec,
          retired || typeof SharedArrayBuffer !== "function" ? 0 : fusedThreadOptions.helpers,
        )
      : null;
  }

  /** As WasmKernel.run (outputs may alias inputs), spread over helper threads when the call is large. */
  run(ins: readonly Float32Array[], scalars: readonly number[], outs: readonly Float32Array[], n: number): void {
    const ready = this.readyHelpers(n);
    const h = this.shared;
    if (ready.length === 0 || !h) {
      this.kernel.run(ins, scalars, outs, n);
      return;
    }
    const own = this.kernel,
      ctrl = this.ctrl;
    own.setScalars(scalars);
    h.setScalars(scalars);
    this.stats.parallelCalls++;
    this.seq = (this.seq % 0x3fffffff) + 1;
    Atomics.store(ctrl, CALL, this.seq);
    const ws = helperThreads();
    for (const w of ready) ws[w].postMessage({ type: "run", id: this.id, seq: this.seq });
    const slots: number[] = [];
    for (const w of ready) for (let q = 0; q < SLOTS; q++) slots.push(SLOTS * w + q);
    const chunks = Math.ceil(n / KERNEL_CHUNK);
    const chunkOf = new Array<number>(SLOTS * this.helpers).fill(-1),
      sizeOf = new Array<number>(SLOTS * this.helpers).fill(0);
    let next = 0;
    const post = (s: number): void => {
      const c = next++;
      const m = h.fill(s, ins, c, n);
      chunkOf[s] = c;
      sizeOf[s] = m;
      Atomics.store(ctrl, COUNT + s, WasmKernel.bytesFor(m));
      Atomics.store(ctrl, BASE + s, h.slotBase(s));
      Atomics.store(ctrl, STATE + s, POSTED);
      // a helper that went to sleep waiting for work
      const nap = NAP + Math.floor(s / SLOTS);
      if (Atomics.load(ctrl, nap) === 1) {
        Atomics.store(ctrl, nap, 0);
        Atomics.notify(ctrl, nap);
      }
    };
    /** Evaluates slot s here (a chunk no helper took, or one a stuck helper holds: its inputs are intact). */
    const evalHere = (s: number): void => {
      h.fn(WasmKernel.bytesFor(sizeOf[s]), h.slotBase(s));
      h.drain(s, outs, chunkOf[s], sizeOf[s]);
      chunkOf[s] = -1;
    };
    try {
      for (const s of slots) if (next < chunks) post(s);
      const base0 = own.slotBase(0);
      let deadline = 0;
      for (;;) {
        for (const s of slots) {
          if (chunkOf[s] >= 0 && Atomics.load(ctrl, STATE + s) === DONE) {
            this.stats.helperChunks++;
            h.drain(s, outs, chunkOf[s], sizeOf[s]);
            chunkOf[s] = -1;
            Atomics.store(ctrl, STATE + s, EMPTY);
            if (next < chunks) post(s);
          }
        }
        if (next < chunks) {
          // serve the helpers first; evaluate a chunk here only while every helper slot is occupied
          let full = true;
          for (const s of slots)
            if (chunkOf[s] < 0) {
              full = false;
              break;
            }
          if (!full) continue;
          const c = next++;
          const m = own.fill(0, ins, c, n);
          own.fn(WasmKernel.bytesFor(m), base0);
          own.drain(0, outs, c, m);
          continue;
        }
        // everything is handed out: take back chunks no helper has started, wait for the rest
        let busy = false;
        for (const s of slots) {
          if (chunkOf[s] < 0) continue;
          if (Atomics.compareExchange(ctrl, STATE + s, POSTED, EMPTY) === POSTED) evalHere(s);
          else busy = true;
        }
        if (!busy) break;
        if (deadline === 0) deadline = performance.now() + fusedThreadOptions.stuckMs;
        else if (performance.now() > deadline) {
          // a helper is stuck: redo its chunks here and stop using helpers
          retired = true;
          for (const s of slots) if (chunkOf[s] >= 0 && Atomics.load(ctrl, STATE + s) !== DONE) evalHere(s);
        }
      }
    } finally {
      Atomics.store(ctrl, CALL, 0);
      for (const w of ready) {
        Atomics.store(ctrl, NAP + w, 0);
        Atomics.notify(ctrl, NAP + w);
      }
    }
  }

  /** Helpers that have instantiated the shared kernel (which is made and sent to them on the first large call). */
  private readyHelpers(n: number): number[] {
    if (this.helpers === 0 || retired || n < fusedThreadOptions.minElements) return [];
    const ws = helperThreads();
    if (!this.shared) {
      this.shared = WasmKernel.create(this.spec, SLOTS * this.helpers, true);
      if (!this.shared) return [];
      const c = this.shared.compiled;
      ws.forEach((w, i) =>
        w.postMessage({
          type: "kernel",
          id: this.id,
          module: c.module,
          memory: c.memory,
          ctrl: this.ctrl.buffer,
          slot0: SLOTS * i,
          slots: SLOTS,
          helper: i,
          readyIndex: READY + i,
        }),
      );
      dropped.register(this, this.id);
    }
    const ready: number[] = [];
    for (let w = 0; w < Math.min(ws.length, this.helpers); w++)
      if (Atomics.load(this.ctrl, READY + w) === 1) ready.push(w);
    return ready;
  }
}
