/** @file The collectives' reduction kernels (native/reduce-kernels.cc) at every CPU level this machine has: bit for bit the scalar left fold (wrapping integer sums, NaN-winning max/min, ties to the earlier input) over types (16-bit floats: a float32 fold rounded once) x ops x 2-4 inputs x lengths around the vector, step and alignment boundaries. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { addon } from "../../../src/backends/onnx/ort-addon.js";
import { fromBFloat16Bits, fromFloat16Bits, toBFloat16Bits, toFloat16Bits } from "../../../src/core/float16.js";

const LEVELS = ["portable", "sse2", "avx2", "avx512"];
const mod = addon();
const reduceKernel = mod?.reduceKernel?.bind(mod) ?? null;
const best = mod?.fusedIsa() ?? null;
const levels = best === null ? [] : LEVELS.slice(0, LEVELS.indexOf(best) + 1);

type Kind = "f32" | "f64" | "i32" | "i64" | "i8" | "u8" | "bool" | "i16" | "u16" | "u32" | "u64" | "f16" | "bf16";
// ONNX element type codes (native/communicator.h)
const ONNX: Record<Kind, number> = {
  f32: 1,
  f64: 11,
  i32: 6,
  i64: 7,
  i8: 3,
  u8: 2,
  bool: 9,
  i16: 5,
  u16: 4,
  u32: 12,
  u64: 13,
  f16: 10,
  bf16: 16,
};
// float16 / bfloat16 arrays hold bits: decoded to their (exact) float32 values, encoded rounding to nearest even
const HALF = {
  f16: { from: fromFloat16Bits, to: toFloat16Bits, nan: 0x7e00, specials: [0x7bff, 0xfbff, 0x0001, 0x83ff] },
  bf16: { from: fromBFloat16Bits, to: toBFloat16Bits, nan: 0x7fc0, specials: [0x7f7f, 0xff7f, 0x0001, 0x807f] },
} as const;
const isHalf = (k: Kind): k is "f16" | "bf16" => k === "f16" || k === "bf16";
const OPS = ["sum", "max", "min"] as const;
type Op = (typeof OPS)[number];
type Arr =
  | Float32Array
  | Float64Array
  | Int32Array
  | BigInt64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array;

let seed = 20261201;
function rnd(): number {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 4294967296;
}

// one input: random values with the type's edge cases sprinkled in (NaNs with distinct payloads per input, so the
// winning NaN is visible in the bits; +/-0; +/-inf; values whose sums overflow or wrap)
function input(kind: Kind, len: number, q: number): Arr {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  switch (kind) {
    case "f32":
    case "f64": {
      const a = kind === "f32" ? new Float32Array(len + 1) : new Float64Array(len + 1);
      const bits = kind === "f32" ? new Uint32Array(a.buffer) : new BigUint64Array(a.buffer);
      const big = kind === "f32" ? 3.4e38 : 1.7e308;
      for (let i = 0; i < len + 1; i++) {
        const r = rnd();
        if (r < 0.08) {
          // a quiet NaN whose payload names its input
          if (bits instanceof Uint32Array) bits[i] = (0x7fc00000 | (q + 1)) >>> 0;
          else bits[i] = 0x7ff8000000000000n | BigInt(q + 1);
        } else if (r < 0.3) a[i] = pick([0, -0, Infinity, -Infinity, big, -big, 1, -1]);
        else a[i] = Math.round((rnd() - 0.5) * 16) / 4; // small values: many ties
      }
      return a.subarray(q % 2); // odd inputs start one element in: unaligned loads
    }
    case "i32": {
      const a = new Int32Array(len + 1);
      for (let i = 0; i < len + 1; i++)
        a[i] = rnd() < 0.3 ? pick([2147483647, -2147483648, 2147483000, -1, 0]) : Math.floor((rnd() - 0.5) * 2000);
      return a.subarray(q % 2);
    }
    case "i64": {
      const a = new BigInt64Array(len + 1);
      for (let i = 0; i < len + 1; i++)
        a[i] =
          rnd() < 0.3
            ? pick([9223372036854775807n, -9223372036854775808n, 9223372036854000000n, -1n, 0n])
            : BigInt(Math.floor((rnd() - 0.5) * 2000));
      return a.subarray(q % 2);
    }
    case "i8": {
      const a = new Int8Array(len + 1);
      for (let i = 0; i < len + 1; i++) a[i] = Math.floor(rnd() * 256) - 128;
      return a.subarray(q % 2);
    }
    case "i16":
    case "u16":
    case "u32": {
      const a =
        kind === "i16" ? new Int16Array(len + 1) : kind === "u16" ? new Uint16Array(len + 1) : new Uint32Array(len + 1);
      const top = kind === "u32" ? 2 ** 32 : 2 ** 16;
      const lo = kind === "i16" ? -(2 ** 15) : 0;
      for (let i = 0; i < len + 1; i++)
        a[i] = rnd() < 0.3 ? pick([lo, lo + top - 1, lo + top - 2, 0, 1]) : lo + Math.floor(rnd() * top);
      return a.subarray(q % 2);
    }
    case "u64": {
      const a = new BigUint64Array(len + 1);
      for (let i = 0; i < len + 1; i++)
        a[i] =
          rnd() < 0.3
            ? pick([18446744073709551615n, 18446744073709000000n, 9223372036854775808n, 1n, 0n])
            : BigInt(Math.floor(rnd() * 2 ** 53)) * 2048n + BigInt(Math.floor(rnd() * 2048));
      return a.subarray(q % 2);
    }
    case "f16":
    case "bf16": {
      // bits: quiet NaNs whose payload names their input, signed zeros and infinities, the largest finite values
      // (sums overflow), subnormals, and small values with many ties
      const h = HALF[kind];
      const a = new Uint16Array(len + 1);
      for (let i = 0; i < len + 1; i++) {
        const r = rnd();
        if (r < 0.08) a[i] = h.nan | (q + 1);
        else if (r < 0.3) a[i] = pick([0, 0x8000, h.to(Infinity), h.to(-Infinity), ...h.specials]);
        else a[i] = h.to(Math.round((rnd() - 0.5) * 64) / 8);
      }
      return a.subarray(q % 2);
    }
    case "u8":
    case "bool": {
      const a = new Uint8Array(len + 1);
      for (let i = 0; i < len + 1; i++) a[i] = kind === "bool" ? (rnd() < 0.5 ? 1 : 0) : Math.floor(rnd() * 256);
      return a.subarray(q % 2);
    }
  }
}

const isNan = (x: number | bigint): boolean => typeof x === "number" && x !== x;
// the scalar rule: max(a, b) = a if a is NaN, else b if b is NaN, else (b > a ? b : a); min likewise with <
function winner(op: "max" | "min", a: number | bigint, b: number | bigint): 0 | 1 {
  if (isNan(a)) return 0;
  if (isNan(b)) return 1;
  return (op === "max" ? b > a : b < a) ? 1 : 0;
}

// the expected output: max/min copy the winning input's element (its exact bits); sums fold in input order
// (16-bit floats: the fold in float32 over the decoded values, one rounding at the end)
function reference(kind: Kind, op: Op, ins: Arr[], len: number): Arr {
  const out = new (ins[0]!.constructor as new (n: number) => Arr)(len);
  const val = (q: number, i: number): number | bigint =>
    isHalf(kind) ? HALF[kind].from(ins[q]![i] as number) : ins[q]![i]!;
  for (let i = 0; i < len; i++) {
    if (op !== "sum") {
      let w = 0;
      for (let q = 1; q < ins.length; q++) if (winner(op, val(w, i), val(q, i)) === 1) w = q;
      out[i] = ins[w]![i]!;
      continue;
    }
    if (isHalf(kind)) {
      let acc = val(0, i) as number;
      for (let q = 1; q < ins.length; q++) acc = Math.fround(acc + (val(q, i) as number));
      out[i] = HALF[kind].to(acc);
      continue;
    }
    let acc = ins[0]![i]!;
    for (let q = 1; q < ins.length; q++) {
      const x = ins[q]![i]!;
      if (kind === "f32") acc = Math.fround((acc as number) + (x as number));
      else if (kind === "f64") acc = (acc as number) + (x as number);
      else if (kind === "i32") acc = ((acc as number) + (x as number)) | 0;
      else if (kind === "i8") acc = (((acc as number) + (x as number)) << 24) >> 24;
      else if (kind === "i16") acc = (((acc as number) + (x as number)) << 16) >> 16;
      else if (kind === "u16") acc = ((acc as number) + (x as number)) & 0xffff;
      else if (kind === "u32") acc = ((acc as number) + (x as number)) >>> 0;
      else if (kind === "u64") acc = BigInt.asUintN(64, (acc as bigint) + (x as bigint));
      else acc = BigInt.asIntN(64, (acc as bigint) + (x as bigint));
    }
    out[i] = acc;
  }
  return out;
}

// bytes of a typed array's elements (a subarray's own window)
const bytes = (a: Arr): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

// first element where `got` differs from `want` in its bits (a sum's NaN: any NaN, its payload is the CPU's), or -1
function firstMismatch(kind: Kind, op: Op, got: Arr, want: Arr): number {
  const w = got.BYTES_PER_ELEMENT;
  const g = bytes(got),
    e = bytes(want);
  const nan = (x: number | bigint) => (isHalf(kind) ? isNan(HALF[kind].from(x as number)) : isNan(x));
  for (let i = 0; i < got.length; i++) {
    if (op === "sum" && nan(got[i]!) && nan(want[i]!)) continue;
    for (let b = 0; b < w; b++) if (g[i * w + b] !== e[i * w + b]) return i;
  }
  return -1;
}

// lengths around 1 vector (4..64 elements by level and type), one 128-byte step, and odd tails; 1000+ spans many steps
const LENGTHS = [1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 257, 1031];

for (const level of ["avx512", "avx2", "sse2", "portable"]) {
  test(`reduction kernels at ${level}: every type x op x 2-4 inputs x length equals the scalar left fold bit for bit`, (t) => {
    if (!reduceKernel || !levels.includes(level)) {
      t.skip(
        reduceKernel
          ? `this CPU's best level is ${best}`
          : "native addon not built (npm run build compiles it with g++)",
      );
      return;
    }
    const failures: string[] = [];
    for (const kind of Object.keys(ONNX) as Kind[])
      for (const op of OPS) {
        if (op === "sum" && (kind === "u8" || kind === "bool")) continue;
        for (const n of [2, 3, 4])
          for (const len of LENGTHS) {
            const ins = Array.from({ length: n }, (_, q) => input(kind, len, q).subarray(0, len) as Arr);
            const want = reference(kind, op, ins, len);
            // one output and three; streamed from an aligned start, and from one element or 16 bytes in (a normal-store head)
            for (const [nd, stream, offset] of [
              [1, false, 0],
              [3, true, 0],
              [2, true, ins[0]!.BYTES_PER_ELEMENT],
              [2, true, 16],
              [2, false, 16],
            ] as const) {
              const outs = Array.from({ length: nd }, () =>
                new (ins[0]!.constructor as new (k: number) => Arr)(len).fill(
                  kind === "i64" || kind === "u64" ? (7n as never) : (7 as never),
                ),
              );
              const ran = reduceKernel(level, ONNX[kind], OPS.indexOf(op), ins, outs, stream, offset);
              assert.equal(ran, level);
              outs.forEach((got, d) => {
                const at = firstMismatch(kind, op, got, want);
                if (at >= 0)
                  failures.push(
                    `${kind} ${op} n=${n} len=${len} out ${d}/${nd} stream=${stream} offset=${offset}: [${at}] = ${got[at]}, ` +
                      `expected ${want[at]} from ${ins.map((a) => a[at]).join(", ")}`,
                  );
              });
            }
          }
      }
    assert.deepEqual(failures.slice(0, 10), []);
  });
}

test("reduction kernels: every level gives the portable level's bits, NaN payloads of sums included", (t) => {
  if (!reduceKernel || levels.length < 2) {
    t.skip("needs the native addon on an x86 CPU");
    return;
  }
  for (const kind of ["f32", "f64", "f16", "bf16"] as const)
    for (const len of [5, 64, 1031]) {
      const ins = [0, 1, 2].map((q) => input(kind, len, q).subarray(0, len) as Arr);
      const outs = levels.map(() => new (ins[0]!.constructor as new (k: number) => Arr)(len));
      levels.forEach((l, i) => reduceKernel(l, ONNX[kind], 0, ins, [outs[i]!], true, 0));
      for (let i = 1; i < outs.length; i++)
        assert.deepEqual(bytes(outs[i]!), bytes(outs[0]!), `${kind} sum at ${levels[i]}`);
    }
});

test("reduction kernels: a bool sum, an unknown level or mismatched lengths are refused by name", (t) => {
  if (!reduceKernel) {
    t.skip("native addon not built (npm run build compiles it with g++)");
    return;
  }
  const a = new Uint8Array(4);
  assert.throws(
    () => reduceKernel("portable", ONNX.bool, 0, [a, a], [a], false, 0),
    /no reduction 0 for element type 9/,
  );
  assert.throws(() => reduceKernel("avx9000", ONNX.u8, 1, [a, a], [a], false, 0), /unknown level 'avx9000'/);
  assert.throws(
    () => reduceKernel("portable", ONNX.u8, 1, [a, new Uint8Array(5)], [a], false, 0),
    /inputs\[1\] is not a typed array of the inputs' element count/,
  );
});
