/** @file The safetensors container codec: byte-identical layout to the reference (Rust/Python) writer, decode of its output. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { DType } from "../../src/core/dtype.js";
import { type RawTensor, decode, encode } from "../../src/io/safetensors.js";

const zeros = (dtype: DType, bytes: number): RawTensor => ({ dtype, shape: [1], bytes: new Uint8Array(bytes) });

test("encode lays tensors out like the reference writer (largest item size first, then name; header padded to 8)", () => {
  // the Python safetensors 0.8 package's save({"w": f32[1], "a": f16[1], "z": f64[1], "b": u8[1], "c": f32[1]}) header:
  const reference =
    '{"z":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"c":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},' +
    '"w":{"dtype":"F32","shape":[1],"data_offsets":[12,16]},"a":{"dtype":"F16","shape":[1],"data_offsets":[16,18]},' +
    '"b":{"dtype":"U8","shape":[1],"data_offsets":[18,19]}}';
  const m = new Map<string, RawTensor>([
    ["w", zeros("float32", 4)],
    ["a", zeros("float16", 2)],
    ["z", zeros("float64", 8)],
    ["b", zeros("uint8", 1)],
    ["c", zeros("float32", 4)],
  ]);
  const out = encode(m, null);
  const n = Number(new DataView(out.buffer).getBigUint64(0, true));
  assert.equal(n, 272);
  assert.equal(new TextDecoder().decode(out.subarray(8, 8 + n)), reference);
  assert.equal(out.length, 8 + 272 + 19);
  // padding with spaces, as the reference writes {"a": f32[1]} (54 bytes of JSON -> 56)
  const one = encode(new Map([["a", zeros("float32", 4)]]), null);
  assert.equal(
    new TextDecoder().decode(one.subarray(8, 8 + 56)),
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}  ',
  );
});

test("decode returns tensors, shapes, metadata and byte views", () => {
  const m = new Map<string, RawTensor>([
    ["x", { dtype: "int16", shape: [2, 1], bytes: new Uint8Array([1, 0, 0xff, 0xff]) }],
    ["e", { dtype: "float32", shape: [0], bytes: new Uint8Array(0) }],
  ]);
  const d = decode(encode(m, { k: "v" }), "test");
  assert.deepEqual(d.metadata, { k: "v" });
  assert.deepEqual([...d.tensors.keys()].sort(), ["e", "x"]);
  assert.deepEqual(d.tensors.get("x")!.shape, [2, 1]);
  assert.equal(d.tensors.get("x")!.dtype, "int16");
  assert.deepEqual([...d.tensors.get("x")!.bytes], [1, 0, 0xff, 0xff]);
  assert.equal(d.tensors.get("e")!.bytes.length, 0);
  assert.throws(
    () => encode(new Map([["x", { dtype: "float32", shape: [2], bytes: new Uint8Array(4) }]]), null),
    /"x" has 4 bytes but shape \(2,\) of F32 needs 8/,
  );
});

test("complex64 round-trips as the spec's C64 (interleaved float32 pairs); complex128 is refused by name", async () => {
  const { serialize, deserialize } = await import("../../src/io/checkpoint.js");
  const np = await import("../../src/numpy/index.js");
  const z = np.complex([1.5, -2, 0], [0.25, 3, -1]);
  const bytes = serialize({ z });
  const headerLen = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen))) as Record<
    string,
    { dtype: string }
  >;
  assert.ok(
    Object.values(header).some((t) => t.dtype === "C64"),
    JSON.stringify(header),
  );
  const back = deserialize<{ z: import("../../src/core/array.js").Array }>(bytes).z;
  assert.equal(back.dtype, "complex64");
  assert.deepEqual(back.tolist(), z.tolist());
  const { config } = await import("../../src/core/config.js");
  config.update("enableX64", true);
  try {
    assert.throws(
      () => serialize({ w: np.complex(np.array([1], "float64"), 0) }),
      /complex128, which the safetensors format has no dtype for/,
    );
  } finally {
    config.update("enableX64", false);
  }
});
