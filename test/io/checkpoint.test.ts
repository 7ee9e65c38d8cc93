/** @file save/load in the safetensors format: round trips of every dtype, header bytes, foreign files, corrupt inputs, atomic writes. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import "../../src/backends/interpreter/interpreter.js";
import { Array } from "../../src/core/array.js";
import { config } from "../../src/core/config.js";
import * as tree from "../../src/core/tree.js";
import * as jnp from "../../src/numpy/index.js";
import { deserialize, load, save, serialize } from "../../src/io/index.js";
import * as optim from "../../src/optim/index.js";
import { ShapeDtypeStruct, jit } from "../../src/transforms/api.js";

const dir = mkdtempSync(join(tmpdir(), "jaxts-ckpt-"));
let fileNo = 0;
const fresh = (name = "ckpt"): string => join(dir, `${name}-${fileNo++}.safetensors`);

/** Bit-exact equality of two pytrees (structure, dtypes, shapes, raw storage; JS scalars by value). */
function assertTreeIdentical(got: unknown, want: unknown): void {
  const [gl, gd] = tree.flatten(got);
  const [wl, wd] = tree.flatten(want);
  assert.equal(String(gd), String(wd), "tree structure");
  assert.ok(gd.equals(wd), "tree structure");
  wl.forEach((w, i) => {
    const g = gl[i];
    if (w instanceof Array) {
      assert.ok(g instanceof Array, `leaf ${i} should be an Array`);
      assert.equal(g.dtype, w.dtype, `leaf ${i} dtype`);
      assert.deepEqual(g.shape, w.shape, `leaf ${i} shape`);
      assert.deepEqual(Buffer.from(g.dataSync().buffer), Buffer.from(w.dataSync().buffer), `leaf ${i} bytes`);
    } else assert.deepEqual(g, w, `leaf ${i}`);
  });
}

function everyDtypeTree(): unknown {
  return {
    layers: [
      {
        w: jnp.array(
          [
            [1.5, -2.25, 3],
            [NaN, Infinity, -0],
          ],
          { dtype: "float32" },
        ),
        b: jnp.array([0.1, -65504, 6e-8], { dtype: "float16" }),
      },
      { w: jnp.array([[1], [-3.5], [1e30]], { dtype: "bfloat16" }), b: jnp.array([Math.PI], { dtype: "float64" }) },
    ],
    ints: {
      i8: jnp.array([-128, 127], { dtype: "int8" }),
      u8: jnp.array([0, 255], { dtype: "uint8" }),
      i16: jnp.array([-32768, 7], { dtype: "int16" }),
      u16: jnp.array([65535], { dtype: "uint16" }),
      i32: jnp.array([-2147483648, 2147483647], { dtype: "int32" }),
      u32: jnp.array([4294967295], { dtype: "uint32" }),
      i64: jnp.array([-(2n ** 63n), 2n ** 62n + 1n], { dtype: "int64" }),
      u64: jnp.array([2n ** 64n - 1n, 3n], { dtype: "uint64" }),
    },
    flags: jnp.array([true, false, true]),
    empty: jnp.zeros([0, 2], "float32"),
    scalar: jnp.array(2.5, { dtype: "float32" }),
    nothing: null,
    missing: undefined,
    step: 7,
    lr: 0.001,
    ok: true,
    big: 2n ** 60n,
  };
}

test("round trip of a nested pytree with every dtype (enableX64), with and without like", () => {
  config.update("enableX64", true);
  try {
    const t = everyDtypeTree();
    const p = fresh();
    save(p, t);
    assertTreeIdentical(load(p), t);
    assertTreeIdentical(load(p, t), t);
    // like may hold ShapeDtypeStructs instead of Arrays
    const spec = tree.map(
      ((x: unknown) => (x instanceof Array ? new ShapeDtypeStruct(x.shape, x.dtype) : x)) as (
        ...xs: never[]
      ) => unknown,
      t,
    );
    assertTreeIdentical(load(p, spec), t);
    // in-memory form: the same bytes as the file
    assert.deepEqual(Buffer.from(serialize(t)), readFileSync(p));
    assertTreeIdentical(deserialize(serialize(t)), t);
  } finally {
    config.update("enableX64", false);
  }
});

test("64-bit tensors load as 32-bit Arrays without enableX64, like jnp.asarray", () => {
  config.update("enableX64", true);
  const p = fresh();
  try {
    save(p, { a: jnp.array([1, -2], { dtype: "int64" }), f: jnp.array([0.5], { dtype: "float64" }) });
  } finally {
    config.update("enableX64", false);
  }
  const r = load(p) as { a: Array; f: Array };
  assert.equal(r.a.dtype, "int32");
  assert.deepEqual(r.a.tolist(), [1, -2]);
  assert.equal(r.f.dtype, "float32");
});

test("header bytes follow the safetensors spec for a tiny tensor", () => {
  const p = fresh();
  save(p, { x: jnp.array([1, 2], { dtype: "float32" }), h: jnp.array(1, { dtype: "bfloat16" }) });
  const b = readFileSync(p);
  const n = Number(b.readBigUInt64LE(0));
  assert.equal(n % 8, 0, "header padded to a multiple of 8 bytes");
  const headerText = b.subarray(8, 8 + n).toString("utf8");
  const meta = { format: "jaxts", "jaxts.tree": JSON.stringify({ object: { h: "h", x: "x" } }) };
  // tensors are laid out largest item size first (F32 before BF16), each {dtype, shape, data_offsets}
  const expected = JSON.stringify({
    __metadata__: meta,
    x: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
    h: { dtype: "BF16", shape: [], data_offsets: [8, 10] },
  });
  assert.equal(headerText.trimEnd(), expected);
  assert.match(headerText.slice(expected.length), /^ *$/, "padding is spaces");
  assert.equal(b.length, 8 + n + 10);
  assert.deepEqual([...b.subarray(8 + n)], [0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40, 0x80, 0x3f]);
});

/** A file as another writer (e.g. the Python safetensors package) would produce it. */
function foreignFile(padded: boolean): Buffer {
  const header = JSON.stringify({
    __metadata__: { format: "pt" },
    "model.layers.0.bias": { dtype: "F32", shape: [2], data_offsets: [0, 8] },
    "model.layers.0.weight": { dtype: "BF16", shape: [2, 2], data_offsets: [8, 16] },
    "model.norm": { dtype: "I32", shape: [], data_offsets: [16, 20] },
  });
  const h = Buffer.from(padded ? header.padEnd(Math.ceil(header.length / 8) * 8, " ") : header, "utf8");
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  const data = Buffer.alloc(20);
  data.writeFloatLE(0.5, 0);
  data.writeFloatLE(-1, 4);
  [0x3f80, 0x4000, 0xbf80, 0x0000].forEach((bits, i) => data.writeUInt16LE(bits, 8 + 2 * i)); // bf16 1, 2, -1, 0
  data.writeInt32LE(-7, 16);
  return Buffer.concat([len, h, data]);
}

test("a file built byte by byte like another writer's loads (flat without like, nested with like)", () => {
  for (const padded of [false, true]) {
    const p = fresh("foreign");
    writeFileSync(p, foreignFile(padded));
    const flat = load(p) as Record<string, Array>;
    assert.deepEqual(Object.keys(flat).sort(), ["model.layers.0.bias", "model.layers.0.weight", "model.norm"]);
    assert.deepEqual(flat["model.layers.0.bias"].tolist(), [0.5, -1]);
    assert.equal(flat["model.layers.0.weight"].dtype, "bfloat16");
    assert.deepEqual(flat["model.layers.0.weight"].tolist(), [
      [1, 2],
      [-1, 0],
    ]);
    assert.equal(flat["model.norm"].item(), -7);
    const like = {
      model: {
        layers: [{ bias: new ShapeDtypeStruct([2], "float32"), weight: jnp.zeros([2, 2], "bfloat16") }],
        norm: jnp.array(0, { dtype: "int32" }),
      },
    };
    const nested = load(p, like);
    assert.deepEqual(nested.model.layers[0].weight.tolist(), [
      [1, 2],
      [-1, 0],
    ]);
    assert.deepEqual((nested.model.layers[0].bias as unknown as Array).tolist(), [0.5, -1]);
  }
});

test("optimizer state and params round trip through a checkpoint", () => {
  const params = { w: jnp.array([1, -2, 3], { dtype: "float32" }), b: jnp.array([0.5], { dtype: "float32" }) };
  const opt = optim.adamw(0.1);
  let s = opt.init(params);
  [, s] = opt.update(params, s, params);
  const p = fresh();
  save(p, { params, opt_state: s });
  const r = load(p, { params, opt_state: opt.init(params) });
  assertTreeIdentical(r, { params, opt_state: s });
  assertTreeIdentical(load(p), { params, opt_state: s });
});

// ---------------------------------------------------------------- errors

const throwsWith = (f: () => unknown, ...pats: string[]): void => {
  assert.throws(f, (e: Error) => {
    for (const s of pats)
      assert.ok(e.message.includes(s), `message ${JSON.stringify(e.message)} should contain ${JSON.stringify(s)}`);
    return true;
  });
};
/** Writes a file with the given header object (or raw header text) and data bytes. */
function rawFile(header: unknown, data: number[] | Buffer, lenOverride?: bigint): string {
  const h = Buffer.from(typeof header === "string" ? header : JSON.stringify(header), "utf8");
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(lenOverride ?? BigInt(h.length));
  const p = fresh("bad");
  writeFileSync(p, Buffer.concat([len, h, Buffer.from(data as number[])]));
  return p;
}

test("corrupt files give clear errors", () => {
  const good = fresh();
  save(good, { a: jnp.array([1, 2, 3], { dtype: "float32" }) });
  const bytes = readFileSync(good);
  const short = fresh("bad");
  writeFileSync(short, bytes.subarray(0, 5));
  throwsWith(() => load(short), "not a valid safetensors file", "only 5 bytes", "header length is missing");
  const truncated = fresh("bad");
  writeFileSync(truncated, bytes.subarray(0, bytes.length - 3));
  throwsWith(() => load(truncated), 'tensor "a"', "out of range", "truncated");
  const cutHeader = fresh("bad");
  writeFileSync(cutHeader, bytes.subarray(0, 20));
  throwsWith(() => load(cutHeader), "header length is", "truncated");
  throwsWith(() => load(rawFile("{}", [], 2n ** 40n)), "exceeds");
  throwsWith(() => load(rawFile("{not json}", [])), "not valid JSON");
  throwsWith(() => load(rawFile("[1, 2]  ", [])), 'must start with "{"');
  throwsWith(() => load(rawFile({ __metadata__: { a: 1 } }, [])), "__metadata__", "strings");
  throwsWith(
    () => load(rawFile({ x: { dtype: "F32", shape: [200], data_offsets: [0, 800] } }, Buffer.alloc(8))),
    'tensor "x"',
    "out of range",
  );
  throwsWith(
    () => load(rawFile({ x: { dtype: "F32", shape: [2], data_offsets: [0, 6] } }, Buffer.alloc(6))),
    'tensor "x"',
    "spanning 6 bytes",
    "needs 8",
  );
  throwsWith(
    () => load(rawFile({ x: { dtype: "F32", shape: [2], data_offsets: [8, 0] } }, Buffer.alloc(8))),
    "invalid data_offsets",
  );
  throwsWith(
    () =>
      load(
        rawFile(
          {
            x: { dtype: "U8", shape: [2], data_offsets: [0, 2] },
            y: { dtype: "U8", shape: [2], data_offsets: [1, 3] },
          },
          [1, 2, 3],
        ),
      ),
    "overlaps",
  );
  throwsWith(() => load(rawFile({ x: { dtype: "U8", shape: [2], data_offsets: [2, 4] } }, [1, 2, 3, 4])), "hole");
  throwsWith(() => load(rawFile({ x: { dtype: "U8", shape: [2], data_offsets: [0, 2] } }, [1, 2, 3])), "trailing");
  throwsWith(
    () => load(rawFile({ x: { dtype: "F8_E4M3", shape: [1], data_offsets: [0, 1] } }, [0])),
    "F8_E4M3",
    "does not support",
  );
  throwsWith(() => load(rawFile({ x: { dtype: "Q4", shape: [1], data_offsets: [0, 1] } }, [0])), 'unknown dtype "Q4"');
  throwsWith(() => load(rawFile({ x: { dtype: "U8", shape: [-1], data_offsets: [0, 0] } }, [])), "invalid shape");
  throwsWith(() => load(join(dir, "does-not-exist.safetensors")), "cannot read");
});

test("load with like names the key and the mismatch", () => {
  const p = fresh();
  save(p, { layers: [{ w: jnp.zeros([2, 3], "float32") }], b: jnp.zeros([3], "float32") });
  throwsWith(
    () => load(p, { layers: [{ w: jnp.zeros([3, 2], "float32") }], b: jnp.zeros([3], "float32") }),
    '"layers.0.w"',
    "shape (2, 3)",
    "expects shape (3, 2)",
  );
  throwsWith(
    () => load(p, { layers: [{ w: jnp.zeros([2, 3], "float16") }], b: jnp.zeros([3], "float32") }),
    '"layers.0.w"',
    "dtype F32 (float32)",
    "expects dtype float16",
  );
  throwsWith(
    () =>
      load(p, {
        layers: [{ w: jnp.zeros([2, 3], "float32"), v: jnp.zeros([1], "float32") }],
        b: jnp.zeros([3], "float32"),
      }),
    'no tensor "layers.0.v"',
  );
  throwsWith(() => load(p, { layers: [{ w: jnp.zeros([2, 3], "float32") }] }), "does not contain", '"b"');
  throwsWith(
    () => load(p, { layers: [{ w: "x" }], b: jnp.zeros([3], "float32") }),
    'like\'s leaf "layers.0.w"',
    "string",
  );
});

test("save rejects unserializable leaves, traced values and colliding names", () => {
  const p = fresh();
  throwsWith(() => save(p, { a: jnp.zeros([1], "float32"), f: (() => 1) as unknown }), 'leaf "f"', "function");
  throwsWith(
    () => save(p, { "a.b": jnp.zeros([1], "float32"), a: { b: jnp.zeros([1], "float32") } }),
    '"a.b"',
    "collides",
  );
  throwsWith(() => save(p, { __metadata__: jnp.zeros([1], "float32") }), "reserved");
  throwsWith(
    () =>
      jit((x: Array) => {
        save(p, { x });
        return x;
      })(jnp.zeros([1], "float32")),
    'leaf "x"',
    "traced",
  );
});

test("atomic write: a failed save leaves no partial or temporary file and keeps the old checkpoint", () => {
  const sub = join(dir, "atomic");
  mkdirSync(sub);
  const p = join(sub, "model.safetensors");
  save(p, { a: jnp.array([1, 2], { dtype: "float32" }) });
  const before = readFileSync(p);
  throwsWith(
    () => save(p, { a: jnp.array([3, 4], { dtype: "float32" }), name: "not an array" }),
    'leaf "name"',
    "string",
  );
  assert.deepEqual(readFileSync(p), before);
  assert.deepEqual(readdirSync(sub), ["model.safetensors"]);
  // a failure after the temporary file is written (renaming onto a non-empty directory) cleans up too
  const target = join(sub, "occupied");
  mkdirSync(target);
  writeFileSync(join(target, "keep"), "x");
  throwsWith(() => save(target, { a: jnp.zeros([2], "float32") }), "could not write");
  assert.deepEqual(readdirSync(sub).sort(), ["model.safetensors", "occupied"]);
  // overwriting succeeds and is complete
  save(p, { a: jnp.array([5, 6], { dtype: "float32" }) });
  assert.deepEqual((load(p) as { a: Array }).a.tolist(), [5, 6]);
  assert.deepEqual(readdirSync(sub).sort(), ["model.safetensors", "occupied"]);
});
