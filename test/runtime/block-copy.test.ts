/** @file The native block copy (native/block-copy.cc): strided regions of every element size between devices equal the host-thread JS copy byte for byte; bad plans fail clearly; copies wait for their sources' launches. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { DType, TypedArray } from "../../src/core/dtype.js";
import {
  type BlockCopy,
  copiesInFlight,
  copyBlocks,
  DeviceBuffer,
  deviceRuntimeUnavailable,
  nativeBlockCopy,
  runtimeDevice,
  setNativeBlockCopy,
  synchronizeCopies,
} from "../../src/runtime/index.js";
import { deviceAddon } from "../../src/backends/onnx/ort-runtime.js";

const skip = deviceRuntimeUnavailable() ?? (nativeBlockCopy() ? false : "the addon has no native block copy");

/** A small deterministic generator (xorshift32). */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}
const bytesOf = (t: TypedArray) => new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
/** A buffer on `dev` whose every byte is pseudo-random (NaN bit patterns included: copies move bytes, not values). */
function filled(dev: number, dtype: DType, shape: number[], r: () => number): DeviceBuffer {
  const b = DeviceBuffer.uninitialized(runtimeDevice(dev), dtype, shape);
  const u = bytesOf(b.data);
  for (let i = 0; i < u.length; i++) u[i] = Math.floor(r() * 256);
  return b;
}

test(
  "block copies of 1, 2, 4, 8 and 16-byte elements, ranks 0-4, between devices: native equals the JS copy byte for byte",
  { skip },
  () => {
    const r = rng(7);
    const dtypes: DType[] = ["bool", "float16", "int32", "float64", "complex128"];
    for (const dtype of dtypes)
      for (let rank = 0; rank <= 4; rank++)
        for (let trial = 0; trial < 4; trial++) {
          const srcShape = Array.from({ length: rank }, () => 1 + Math.floor(r() * 6));
          const size = srcShape.map((n) => 1 + Math.floor(r() * n));
          const srcOrigin = srcShape.map((n, d) => Math.floor(r() * (n - size[d] + 1)));
          const dstShape = size.map((n) => n + Math.floor(r() * 3));
          const dstOrigin = dstShape.map((n, d) => Math.floor(r() * (n - size[d] + 1)));
          const srcDev = trial % 3,
            dstDev = (trial + 1) % 3;
          const what = `${dtype} rank ${rank}: (${size}) at (${srcOrigin}) of (${srcShape}) -> (${dstOrigin}) of (${dstShape})`;
          const src = filled(srcDev, dtype, srcShape, r);
          const out: Uint8Array[] = [];
          for (const native of [true, false]) {
            const dst = filled(dstDev, dtype, dstShape, rng(99)); // the same bytes outside the region both times
            const prev = setNativeBlockCopy(native);
            try {
              const c: BlockCopy = { src, srcShape, srcOrigin, dst, dstOrigin, size };
              let p;
              try {
                p = copyBlocks([c]);
              } catch (e) {
                throw new Error(`${what}: ${(e as Error).message}`);
              }
              assert.equal(p !== null, native, `${what}: a device source is copied asynchronously only natively`);
              if (native) assert.equal(dst.writer, p, `${what}: the op is the destination's writer`);
            } finally {
              setNativeBlockCopy(prev);
            }
            out.push(bytesOf(dst.ready().data).slice());
            dst.free();
          }
          assert.deepEqual(out[0], out[1], what);
          // a host source is copied before copyBlocks returns
          const dst = filled(dstDev, dtype, dstShape, rng(99));
          assert.equal(copyBlocks([{ src: src.data, srcShape, srcOrigin, dst, dstOrigin, size }]), null);
          assert.equal(dst.writer, null, `${what}: nothing pending for a host source`);
          assert.deepEqual(bytesOf(dst.data), out[1], `${what}: from host storage`);
          dst.free();
          src.free();
        }
    synchronizeCopies();
    assert.equal(copiesInFlight(), 0);
  },
);

test(
  "many destinations read one source; copies into one buffer from several devices; source freed at once",
  { skip },
  () => {
    // the global [8, 6] int32 value 0..47 in four row blocks on devices 0-3; device 4 gathers it, devices 5-7 take columns
    const blocks = [0, 1, 2, 3].map((d) => {
      const b = DeviceBuffer.uninitialized(runtimeDevice(d), "int32", [2, 6]);
      (b.data as Int32Array).set(Int32Array.from({ length: 12 }, (_, i) => d * 12 + i));
      return b;
    });
    const all = DeviceBuffer.uninitialized(runtimeDevice(4), "int32", [8, 6]);
    const cols = [5, 6, 7].map((d) => DeviceBuffer.uninitialized(runtimeDevice(d), "int32", [8, 2]));
    const copies: BlockCopy[] = [];
    blocks.forEach((src, k) => {
      copies.push({ src, srcShape: [2, 6], srcOrigin: [0, 0], dst: all, dstOrigin: [2 * k, 0], size: [2, 6] });
      cols.forEach((dst, c) =>
        copies.push({ src, srcShape: [2, 6], srcOrigin: [0, 2 * c], dst, dstOrigin: [2 * k, 0], size: [2, 2] }),
      );
    });
    const p = copyBlocks(copies)!;
    for (const b of blocks) b.free(); // the op holds its sources until it settles
    assert.deepEqual([...(all.ready().data as Int32Array)], [...Array(48).keys()]);
    cols.forEach((b, c) => {
      const want = [...Array(48).keys()].filter((v) => Math.floor((v % 6) / 2) === c);
      assert.deepEqual([...(b.ready().data as Int32Array)], want, `columns ${2 * c}:${2 * c + 2}`);
    });
    assert.ok(p.settled);
    for (const b of [all, ...cols]) b.free();
  },
);

test("a plan past a buffer's end, or with a bad element size, is refused before anything runs", { skip }, () => {
  const api = deviceAddon().api!;
  const a = new Int32Array(8),
    b = new Int32Array(8);
  // one copy: src 0, dst 1, devices 0 -> 1, 4-byte elements, rank 1, offsets 4 and 0, extent 5, strides 1 and 1
  const plan = (es: number, ext: number) => Float64Array.from([1, 0, 1, 0, 1, es, 1, 4, 0, ext, 1, 1]);
  assert.throws(() => api.devCopyBlocks!([a, b], plan(4, 5), 0), /copy 0: the region runs past the end of its source/);
  assert.throws(() => api.devCopyBlocks!([a, b], plan(3, 2), 0), /copy 0: element size must be 1, 2, 4, 8 or 16/);
  assert.throws(() => api.devCopyBlocks!([a], plan(4, 2), 0), /copy 0: buffer index out of range/);
});
