/**
 * @file A fused float32 elementwise kernel: a FusedSpec compiled to a WebAssembly SIMD128 function that streams
 * every input through cache-sized chunks of its memory once, evaluating the whole chain per 4-lane vector.
 * exp/log/tanh/logistic use range reduction + polynomial or rational approximations fitted (least-squares
 * minimax, numpy) for float32: measured max errors ~1 ulp (exp, log) and ~6 ulp (tanh).
 */
import type { FusedSpec } from "./fused-spec.js";

// the project's TypeScript lib has no WebAssembly declarations: the little used here
interface WasmInstance {
  readonly exports: Record<string, unknown>;
}
export interface WasmMemory {
  readonly buffer: ArrayBufferLike;
}
declare const WebAssembly: {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => WasmInstance;
  Memory: new (d: { initial: number; maximum: number; shared: boolean }) => WasmMemory;
};

/** Elements per input/output region (one call of the compiled function processes at most this many). */
const CHUNK = 16384;
/** 4-lane vectors per loop iteration (CHUNK is a multiple of 4 * UNROLL). */
const UNROLL = 4;

// ---------------------------------------------------------------------------- encoding
const SIMD = {
  load: 0x00,
  load32Splat: 0x09,
  store: 0x0b,
  const: 0x0c,
  feq: 0x41,
  fne: 0x42,
  flt: 0x43,
  fgt: 0x44,
  fle: 0x45,
  fge: 0x46,
  not: 0x4d,
  and: 0x4e,
  or: 0x50,
  bitselect: 0x52,
  fceil: 0x67,
  ffloor: 0x68,
  ishl: 0xab,
  ishrS: 0xac,
  ishrU: 0xad,
  iadd: 0xae,
  isub: 0xb1,
  fabs: 0xe0,
  fneg: 0xe1,
  fsqrt: 0xe3,
  fadd: 0xe4,
  fsub: 0xe5,
  fmul: 0xe6,
  fdiv: 0xe7,
  fmin: 0xe8,
  fmax: 0xe9,
  fpmin: 0xea,
  fpmax: 0xeb,
  convertS: 0xfa,
} as const;

class Bytes {
  readonly b: number[] = [];
  u32(v: number): this {
    do {
      let x = v & 0x7f;
      v >>>= 7;
      if (v) x |= 0x80;
      this.b.push(x);
    } while (v);
    return this;
  }
  s32(v: number): this {
    for (;;) {
      const x = v & 0x7f;
      v >>= 7;
      if ((v === 0 && !(x & 0x40)) || (v === -1 && x & 0x40)) {
        this.b.push(x);
        return this;
      }
      this.b.push(x | 0x80);
    }
  }
  push(...xs: number[]): this {
    this.b.push(...xs);
    return this;
  }
  simd(op: number): this {
    return this.push(0xfd).u32(op);
  }
}

const f32Bytes = (v: number): number[] => [...new Uint8Array(new Float32Array([v]).buffer)];
const i32Bytes = (v: number): number[] => [...new Uint8Array(new Int32Array([v]).buffer)];

// fitted coefficients (lowest degree first)
/** e^r = 1 + r + r^2 * EXP(r) on |r| <= ln2/2. */
const EXP = [0.4999999403953552, 0.1666652113199234, 0.04166838899254799, 0.008368710055947304, 0.001381461275741458];
/** log(1+f) = f - f^2/2 + f^3 * LOG(f) on sqrt(1/2)-1 <= f < sqrt(2)-1. */
const LOG = [
  0.3333390951156616, -0.2500133812427521, 0.19963063299655914, -0.1657758504152298, 0.14914768934249878,
  -0.14267486333847046, 0.08700434863567352,
];
/** tanh(x) = x * TANH_P(x^2) / TANH_Q(x^2) on |x| <= 9 (beyond, tanh is 1 to float32 precision). */
const TANH_P = [1.0, 0.13381025195121765, 0.003495586570352316, 2.0609057173714973e-5, 1.335463029050743e-8];
const TANH_Q = [1.0, 0.4671434164047241, 0.025876976549625397, 0.00032856324105523527, 7.776544634907623e-7];
/** ln 2 split so that n * LN2_HI is exact for |n| < 2^15. */
const LN2_HI = 0.693359375,
  LN2_LO = -2.1219444e-4;

/**
 * Emits the function body: one v128 local per value. Constants live in a data segment and are loaded where
 * used (V8 rematerializes v128 constants held in locals with several instructions per use).
 */
class Emitter {
  readonly pre = new Bytes();
  readonly body = new Bytes();
  /** Constant pool bytes (16 per 4-lane constant), placed at constBase. */
  readonly constBytes: number[] = [];
  private nv = 0;
  private readonly consts = new Map<string, number>();
  constructor(readonly constBase: number) {}
  /** Locals 0, 1: end and base (params); 2: loop offset; v128 locals from 3. Constants are negative handles. */
  fresh(): number {
    return 3 + this.nv++;
  }
  get numV128(): number {
    return this.nv;
  }
  private constant(key: string, bytes: number[]): number {
    let h = this.consts.get(key);
    if (h === undefined) {
      h = -1 - this.constBytes.length / 16;
      this.constBytes.push(...bytes, ...bytes, ...bytes, ...bytes);
      this.consts.set(key, h);
    }
    return h;
  }
  /** A float32 constant in all four lanes. */
  f(v: number): number {
    return this.constant(`f${Object.is(v, -0) ? "-0" : v}`, f32Bytes(v));
  }
  /** An int32 constant in all four lanes. */
  i(v: number): number {
    return this.constant(`i${v}`, i32Bytes(v));
  }
  private set(): number {
    const l = this.fresh();
    this.body.push(0x21).u32(l);
    return l;
  }
  private get(l: number): void {
    if (l >= 0) this.body.push(0x20).u32(l);
    else
      this.body
        .push(0x41, 0x00)
        .simd(SIMD.load)
        .push(4)
        .u32(this.constBase + 16 * (-1 - l));
  }
  un(op: number, a: number): number {
    this.get(a);
    this.body.simd(op);
    return this.set();
  }
  bin(op: number, a: number, b: number): number {
    this.get(a);
    this.get(b);
    this.body.simd(op);
    return this.set();
  }
  /** Lanes of a where mask is set, else of b. */
  sel(a: number, b: number, mask: number): number {
    this.get(a);
    this.get(b);
    this.get(mask);
    this.body.simd(SIMD.bitselect);
    return this.set();
  }
  shift(op: number, a: number, n: number): number {
    this.get(a);
    this.body.push(0x41).s32(n).simd(op);
    return this.set();
  }
  load(offset: number): number {
    this.body.push(0x20, 0x02).simd(SIMD.load).push(4).u32(offset);
    return this.set();
  }
  store(offset: number, v: number): void {
    this.body.push(0x20, 0x02);
    this.get(v);
    this.body.simd(SIMD.store).push(4).u32(offset);
  }
  /** A rank-0 input, read once before the loop. */
  splatScalar(offset: number): number {
    const l = this.fresh();
    this.pre.push(0x41, 0x00).simd(SIMD.load32Splat).push(2).u32(offset).push(0x21).u32(l);
    return l;
  }
  horner(c: readonly number[], t: number): number {
    let acc = this.f(c[c.length - 1]);
    for (let k = c.length - 2; k >= 0; k--) acc = this.bin(SIMD.fadd, this.bin(SIMD.fmul, acc, t), this.f(c[k]));
    return acc;
  }
  add(a: number, b: number): number {
    return this.bin(SIMD.fadd, a, b);
  }
  sub(a: number, b: number): number {
    return this.bin(SIMD.fsub, a, b);
  }
  mul(a: number, b: number): number {
    return this.bin(SIMD.fmul, a, b);
  }
  div(a: number, b: number): number {
    return this.bin(SIMD.fdiv, a, b);
  }

  /**
   * x clamped to [lo, hi], NaN kept. pmin/pmax (b < a ? b : a, a < b ? b : a) are single instructions, unlike
   * min/max, whose NaN and signed-zero rules V8 implements with several; with x first, a NaN x is returned.
   */
  clamp(x: number, lo: number, hi: number): number {
    return this.bin(SIMD.fpmax, this.bin(SIMD.fpmin, x, this.f(hi)), this.f(lo));
  }
  exp(x: number): number {
    // e^x = 2^n e^r, n = round(x / ln2), r = x - n ln2; 2^n applied in two halves so denormal results come out right
    const t = this.clamp(x, -104, 89);
    // adding 1.5*2^23 rounds to an integer (ties to even) held in the low mantissa bits: n as float and as int
    const k = this.add(this.mul(t, this.f(Math.LOG2E)), this.f(12582912));
    const n = this.sub(k, this.f(12582912)),
      ni = this.bin(SIMD.isub, k, this.i(0x4b400000));
    const r = this.sub(this.sub(t, this.mul(n, this.f(LN2_HI))), this.mul(n, this.f(LN2_LO)));
    const p = this.add(this.f(1), this.add(r, this.mul(this.mul(r, r), this.horner(EXP, r))));
    const n1 = this.shift(SIMD.ishrS, ni, 1),
      n2 = this.bin(SIMD.isub, ni, n1);
    const s1 = this.shift(SIMD.ishl, this.bin(SIMD.iadd, n1, this.i(127)), 23);
    const s2 = this.shift(SIMD.ishl, this.bin(SIMD.iadd, n2, this.i(127)), 23);
    return this.mul(this.mul(p, s1), s2);
  }
  log(x: number): number {
    // x = m 2^e with m in [sqrt(1/2), sqrt(2)); log x = e ln2 + log m (denormals scaled by 2^23 first)
    const tiny = this.bin(SIMD.flt, x, this.f(1.1754943508222875e-38));
    const xs = this.sel(this.mul(x, this.f(8388608)), x, tiny);
    let e = this.bin(SIMD.isub, this.bin(SIMD.and, this.shift(SIMD.ishrU, xs, 23), this.i(255)), this.i(127));
    e = this.bin(SIMD.isub, e, this.bin(SIMD.and, tiny, this.i(23)));
    let m = this.bin(SIMD.or, this.bin(SIMD.and, xs, this.i(0x7fffff)), this.i(0x3f800000));
    const big = this.bin(SIMD.fgt, m, this.f(Math.SQRT2));
    m = this.sel(this.mul(m, this.f(0.5)), m, big);
    e = this.bin(SIMD.isub, e, big);
    const f = this.sub(m, this.f(1)),
      ef = this.un(SIMD.convertS, e);
    const f2 = this.mul(f, f);
    let y = this.add(this.mul(ef, this.f(LN2_LO)), this.mul(this.mul(f2, f), this.horner(LOG, f)));
    y = this.add(this.add(this.sub(y, this.mul(this.f(0.5), f2)), f), this.mul(ef, this.f(LN2_HI)));
    // log of a negative or NaN is NaN, log 0 = -inf, log inf = inf
    y = this.sel(y, this.f(NaN), this.bin(SIMD.fgt, x, this.f(0)));
    y = this.sel(this.f(-Infinity), y, this.bin(SIMD.feq, x, this.f(0)));
    return this.sel(this.f(Infinity), y, this.bin(SIMD.feq, x, this.f(Infinity)));
  }
  tanh(x: number): number {
    const xc = this.clamp(x, -9, 9);
    const t = this.mul(xc, xc);
    // the rational form can overshoot 1 by an ulp near the clamp: keep |tanh| <= 1
    return this.clamp(this.div(this.mul(xc, this.horner(TANH_P, t)), this.horner(TANH_Q, t)), -1, 1);
  }
  logistic(x: number): number {
    // 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below (no cancellation, tiny results keep their precision)
    const e = this.exp(this.un(SIMD.fneg, this.un(SIMD.fabs, x)));
    const den = this.add(e, this.f(1));
    return this.sel(this.div(this.f(1), den), this.div(e, den), this.bin(SIMD.fge, x, this.f(0)));
  }
}

function section(id: number, content: Bytes): number[] {
  return [id, ...new Bytes().u32(content.b.length).b, ...content.b];
}

/** Emits one value of the program for the vector at `u` (loads of inputs are relative to the loop offset). */
function emitOp(em: Emitter, v: Extract<FusedSpec["values"][number], { kind: "op" }>, a: readonly number[]): number {
  switch (v.op) {
    case "neg":
      return em.un(SIMD.fneg, a[0]);
    case "abs":
      return em.un(SIMD.fabs, a[0]);
    case "sqrt":
      return em.un(SIMD.fsqrt, a[0]);
    case "rsqrt":
      return em.div(em.f(1), em.un(SIMD.fsqrt, a[0]));
    case "floor":
      return em.un(SIMD.ffloor, a[0]);
    case "ceil":
      return em.un(SIMD.fceil, a[0]);
    case "sign":
      return em.sel(em.f(1), em.sel(em.f(-1), a[0], em.bin(SIMD.flt, a[0], em.f(0))), em.bin(SIMD.fgt, a[0], em.f(0)));
    case "exp":
      return em.exp(a[0]);
    case "log":
      return em.log(a[0]);
    case "tanh":
      return em.tanh(a[0]);
    case "logistic":
      return em.logistic(a[0]);
    case "add":
      return em.add(a[0], a[1]);
    case "sub":
      return em.sub(a[0], a[1]);
    case "mul":
      return em.mul(a[0], a[1]);
    case "div":
      return em.div(a[0], a[1]);
    // lax.max/min: NaN wins, -0 < +0 (the exact min/max, not pmin/pmax)
    case "max":
      return em.bin(SIMD.fmax, a[0], a[1]);
    case "min":
      return em.bin(SIMD.fmin, a[0], a[1]);
    case "eq":
      return em.bin(SIMD.feq, a[0], a[1]);
    case "ne":
      return em.bin(SIMD.fne, a[0], a[1]);
    case "lt":
      return em.bin(SIMD.flt, a[0], a[1]);
    case "le":
      return em.bin(SIMD.fle, a[0], a[1]);
    case "gt":
      return em.bin(SIMD.fgt, a[0], a[1]);
    case "ge":
      return em.bin(SIMD.fge, a[0], a[1]);
    case "and":
      return em.bin(SIMD.and, a[0], a[1]);
    case "or":
      return em.bin(SIMD.or, a[0], a[1]);
    case "not":
      return em.un(SIMD.not, a[0]);
    case "select":
      return em.sel(a[2], a[1], a[0]);
  }
}

/**
 * Memory layout: rank-0 inputs at 0, constants at `constBase`, then `slots` slots of (inputs + outputs) regions
 * of CHUNK elements each. The function `k(count, base)` evaluates `count` bytes per region of the slot at `base`.
 */
export interface KernelLayout {
  readonly constBase: number;
  readonly slotStart: number;
  readonly slotBytes: number;
  readonly regionBytes: number;
  readonly pages: number;
}

/** The module (importing memory "e"."m", shared or not) and its memory layout for a spec with `slots` slots. */
function compile(spec: FusedSpec, slots: number, shared: boolean): { bytes: Uint8Array; layout: KernelLayout } {
  const regionBytes = CHUNK * 4;
  const constBase = Math.ceil((spec.numScalars * 4) / 16) * 16 + 16;
  const em = new Emitter(constBase);
  const scalars = new Map<number, number>();
  // the chain for vector `u` of UNROLL consecutive ones (independent chains give the CPU parallel work)
  for (let u = 0; u < UNROLL; u++) {
    const local: number[] = [];
    for (const v of spec.values) {
      let l: number;
      if (v.kind === "input") l = em.load(v.index * regionBytes + 16 * u);
      else if (v.kind === "scalar") {
        l = scalars.get(v.index) ?? em.splatScalar(v.index * 4);
        scalars.set(v.index, l);
      } else if (v.kind === "const") l = em.f(v.value);
      else
        l = emitOp(
          em,
          v,
          v.args.map((k) => local[k]),
        );
      local.push(l);
    }
    spec.outputs.forEach((v, j) => em.store((spec.numInputs + j) * regionBytes + 16 * u, local[v]));
  }
  const slotStart = Math.ceil((constBase + em.constBytes.length) / 64) * 64 + 64;
  const slotBytes = (spec.numInputs + spec.outputs.length) * regionBytes;
  const pages = Math.ceil((slotStart + slots * slotBytes) / 65536);

  const code = new Bytes();
  code.push(0x02, 0x01, 0x7f).u32(em.numV128).push(0x7b); // locals: 1 x i32 (offset), n x v128
  code.push(...em.pre.b);
  code.push(0x20, 0x01, 0x20, 0x00, 0x6a, 0x21, 0x00, 0x20, 0x01, 0x21, 0x02); // end = base + count; offset = base
  code.push(0x02, 0x40, 0x03, 0x40); // block, loop
  code.push(0x20, 0x02, 0x20, 0x00, 0x4f, 0x0d, 0x01); // if offset >= end: break
  code.push(...em.body.b);
  code
    .push(0x20, 0x02, 0x41)
    .s32(16 * UNROLL)
    .push(0x6a, 0x21, 0x02, 0x0c, 0x00); // offset += 16 * UNROLL; continue
  code.push(0x0b, 0x0b, 0x0b); // end loop, end block, end function
  const funcBody = new Bytes().u32(code.b.length).push(...code.b);
  const data = new Bytes()
    .push(0x01, 0x00, 0x41)
    .s32(constBase)
    .push(0x0b)
    .u32(em.constBytes.length)
    .push(...em.constBytes);
  const mod = [
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, new Bytes().push(0x01, 0x60, 0x02, 0x7f, 0x7f, 0x00)),
    ...section(
      2,
      new Bytes()
        .push(0x01, 0x01, 0x65, 0x01, 0x6d, 0x02, shared ? 0x03 : 0x01)
        .u32(pages)
        .u32(pages),
    ),
    ...section(3, new Bytes().push(0x01, 0x00)),
    ...section(7, new Bytes().push(0x01, 0x01, 0x6b, 0x00, 0x00)),
    ...section(10, new Bytes().push(0x01, ...funcBody.b)),
    ...section(11, data),
  ];
  return { bytes: new Uint8Array(mod), layout: { constBase, slotStart, slotBytes, regionBytes, pages } };
}

/** A compiled module plus its memory (shared: also instantiated by helper threads). */
export interface CompiledKernel {
  readonly module: object;
  readonly memory: WasmMemory;
  readonly layout: KernelLayout;
  readonly numInputs: number;
  readonly numOutputs: number;
  readonly slots: number;
}

/** A fused kernel: the compiled program, this thread's instance and views of every slot's regions. */
export class WasmKernel {
  readonly compiled: CompiledKernel;
  /** k(count, base): evaluates `count` bytes per region of the slot at byte offset `base`. */
  readonly fn: (count: number, base: number) => void;
  private readonly views: { ins: Float32Array[]; outs: Float32Array[] }[];
  private readonly scalars: Float32Array;

  private constructor(spec: FusedSpec, slots: number, shared: boolean) {
    const { bytes, layout } = compile(spec, slots, shared);
    const module = new WebAssembly.Module(bytes);
    // shared memory only where helper threads need it: copies to and from it are slower
    const memory = new WebAssembly.Memory({ initial: layout.pages, maximum: layout.pages, shared });
    const inst = new WebAssembly.Instance(module, { e: { m: memory } });
    this.fn = inst.exports.k as (count: number, base: number) => void;
    this.compiled = { module, memory, layout, numInputs: spec.numInputs, numOutputs: spec.outputs.length, slots };
    const buf = memory.buffer;
    const region = (slot: number, k: number) =>
      new Float32Array(buf, layout.slotStart + slot * layout.slotBytes + k * layout.regionBytes, CHUNK);
    this.views = Array.from({ length: slots }, (_, j) => ({
      ins: Array.from({ length: spec.numInputs }, (_, k) => region(j, k)),
      outs: spec.outputs.map((_, k) => region(j, spec.numInputs + k)),
    }));
    this.scalars = new Float32Array(buf, 0, Math.max(spec.numScalars, 1));
  }

  /**
   * The kernel for `spec` with `slots` chunk slots (slot 0 is what run() uses), its memory shared with helper
   * threads or not; null where WebAssembly SIMD (or, for shared memory, SharedArrayBuffer) is unavailable.
   */
  static create(spec: FusedSpec, slots = 1, shared = false): WasmKernel | null {
    if (typeof WebAssembly !== "object" || !simdSupported() || (shared && typeof SharedArrayBuffer !== "function"))
      return null;
    return new WasmKernel(spec, slots, shared);
  }

  /** Byte offset of slot j. */
  slotBase(j: number): number {
    return this.compiled.layout.slotStart + j * this.compiled.layout.slotBytes;
  }

  setScalars(scalars: readonly number[]): void {
    for (let k = 0; k < scalars.length; k++) this.scalars[k] = scalars[k];
  }
  /** Copies chunk `c` (elements c*CHUNK..) of every input into slot j; returns the element count. */
  fill(j: number, ins: readonly Float32Array[], c: number, n: number): number {
    const off = c * CHUNK,
      m = Math.min(CHUNK, n - off);
    const v = this.views[j].ins;
    for (let k = 0; k < ins.length; k++)
      v[k].set(off === 0 && m === ins[k].length ? ins[k] : ins[k].subarray(off, off + m));
    return m;
  }
  /** Bytes the kernel processes for m elements (whole unrolled iterations; lanes past m are scratch). */
  static bytesFor(m: number): number {
    return Math.ceil(m / (4 * UNROLL)) * 16 * UNROLL;
  }
  /** Copies slot j's results for chunk `c` (m elements) into the outputs. */
  drain(j: number, outs: readonly Float32Array[], c: number, m: number): void {
    const v = this.views[j].outs;
    for (let k = 0; k < outs.length; k++) outs[k].set(m === CHUNK ? v[k] : v[k].subarray(0, m), c * CHUNK);
  }

  /**
   * Evaluates n elements on this thread: `ins` hold n elements each (rank-0 operands in `scalars`), results
   * go to `outs`. An output may be the same array as an input (every chunk is read before it is written).
   */
  run(ins: readonly Float32Array[], scalars: readonly number[], outs: readonly Float32Array[], n: number): void {
    this.setScalars(scalars);
    const base = this.slotBase(0);
    for (let c = 0; c * CHUNK < n; c++) {
      const m = this.fill(0, ins, c, n);
      this.fn(WasmKernel.bytesFor(m), base);
      this.drain(0, outs, c, m);
    }
  }
}

/** Elements per chunk (exported for the parallel runner). */
export const KERNEL_CHUNK = CHUNK;

let simdOk: boolean | undefined;
function simdSupported(): boolean {
  if (simdOk === undefined) {
    // (func (result v128) v128.const 0)
    const probe = new Uint8Array([
      0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 22, 1, 20, 0, 253, 12, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 11,
    ]);
    try {
      simdOk = WebAssembly.validate(probe);
    } catch {
      simdOk = false;
    }
  }
  return simdOk === true;
}
