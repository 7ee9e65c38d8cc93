/** @file Tests for the ONNX graph builder, protobuf encoding and ORT runtime wrapper: builds and runs real models on onnxruntime-node. */

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DEFAULT_OPSET,
  GraphBuilder,
  ONNX_DTYPE,
  ORT_TYPE,
  attr,
  dtypeFromOnnx,
  dtypeFromOrt,
  type DType,
} from "../../../src/backends/onnx/graph-builder.js";
import { TensorDataType, decodeModel } from "../../../src/backends/onnx/onnx-proto.js";
import {
  bf16BitsToF32,
  createSession,
  createSessionSync,
  f32ToBf16Bits,
  runSession,
  runSessionSync,
  syncAvailable,
  type HostTensor,
} from "../../../src/backends/onnx/ort-runtime.js";
import { ORT_SUPPORT, ORT_SUPPORT_OPSET, ortSupports } from "../../../src/backends/onnx/ort-support.js";

/** Deterministic pseudo-random floats in [-1, 1). */
function rand(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

function run1(g: GraphBuilder, feeds: Record<string, HostTensor>, opset = DEFAULT_OPSET): HostTensor[] {
  const s = createSessionSync(g.toModelBytes({ opset }), { intraOpNumThreads: 1 });
  try {
    return runSessionSync(s, feeds);
  } finally {
    s.dispose();
  }
}

test("dtype mappings round-trip", () => {
  const all: DType[] = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
  ];
  for (const d of all) {
    assert.equal(dtypeFromOnnx(ONNX_DTYPE[d]), d);
    const o = ORT_TYPE[d];
    if (o !== null) assert.equal(dtypeFromOrt(o), d);
  }
  assert.equal(ONNX_DTYPE.float32, TensorDataType.FLOAT);
  assert.equal(ONNX_DTYPE.bfloat16, 16);
  assert.equal(ORT_TYPE.bfloat16, null);
});

test("model bytes decode back to the same structure", () => {
  const g = new GraphBuilder("roundtrip");
  g.addInput("x", "float32", [null, 3]);
  const y = g.op("LeakyRelu", ["x"], { alpha: attr.float(0.25) });
  const t = g.op("Transpose", [y], { perm: [1, 0] });
  g.addOutput(t, "float32", [3, "n"]);
  const m = decodeModel(g.toModelBytes({ opset: 21 }));
  assert.equal(m.irVersion, 10);
  assert.deepEqual(m.opsetImport, [{ domain: "", version: 21 }]);
  const nodes = m.graph!.node!;
  assert.equal(nodes.length, 2);
  assert.equal(nodes[0]!.opType, "LeakyRelu");
  assert.equal(nodes[0]!.attribute![0]!.f, 0.25);
  assert.deepEqual(nodes[1]!.attribute![0]!.ints, [1, 0]);
  const dims = m.graph!.input![0]!.type!.tensorType!.shape!.dim!;
  assert.equal(dims[0]!.dimValue, undefined);
  assert.equal(dims[1]!.dimValue, 3);
  assert.equal(m.graph!.output![0]!.type!.tensorType!.shape!.dim![1]!.dimParam, "n");
  assert.throws(() => g.op("Foo", ["x"], { ratio: 0.5 }), /attr\.float/);
  // known float attribute names become FLOAT even for integral values
  const elu = decodeModel(
    (() => {
      const h = new GraphBuilder("elu");
      h.addInput("x", "float32", [2]);
      h.addOutput(h.op("Elu", ["x"], { alpha: 1 }), "float32", [2]);
      return h.toModelBytes();
    })(),
  );
  assert.equal(elu.graph!.node![0]!.attribute![0]!.type, 1 /* FLOAT */);
  assert.equal(elu.graph!.node![0]!.attribute![0]!.f, 1);
});

test("MatMul float32 matches a JS triple loop", () => {
  const [M, K, N] = [5, 7, 3];
  const a = rand(M * K, 1);
  const b = rand(K * N, 2);
  const g = new GraphBuilder("mm");
  g.addInput("a", "float32", [M, K]);
  g.addInput("b", "float32", [K, N]);
  g.addOutput(g.op("MatMul", ["a", "b"]), "float32", [M, N]);
  const [out] = run1(g, {
    a: { dtype: "float32", shape: [M, K], data: a },
    b: { dtype: "float32", shape: [K, N], data: b },
  });
  assert.equal(out!.dtype, "float32");
  assert.deepEqual(out!.shape, [M, N]);
  assert.ok(out!.data instanceof Float32Array);
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++) acc += a[i * K + k]! * b[k * N + j]!;
      assert.ok(Math.abs((out!.data as Float32Array)[i * N + j]! - acc) < 1e-5, `(${i},${j})`);
    }
});

test("Add with broadcasting and dynamic dims", () => {
  const g = new GraphBuilder("bcast");
  g.addInput("x", "float32", [null, 3]);
  g.addInput("y", "float32", [3]);
  g.addInput("col", "float32", ["rows", 1]);
  const s = g.op("Add", ["x", "y"]);
  g.addOutput(g.op("Add", [s, "col"]), "float32", [null, 3]);
  const sess = createSessionSync(g.toModelBytes());
  assert.deepEqual(sess.inputs[0]!.shape, [null, 3]);
  assert.deepEqual(sess.inputs[2]!.shape, ["rows", 1]);
  for (const rows of [2, 4]) {
    const x = Float32Array.from({ length: rows * 3 }, (_, i) => i);
    const col = Float32Array.from({ length: rows }, (_, i) => 100 * i);
    const [out] = runSessionSync(sess, {
      x: { dtype: "float32", shape: [rows, 3], data: x },
      y: { dtype: "float32", shape: [3], data: new Float32Array([10, 20, 30]) },
      col: { dtype: "float32", shape: [rows, 1], data: col },
    });
    assert.deepEqual(out!.shape, [rows, 3]);
    const want = Array.from({ length: rows * 3 }, (_, i) => i + [10, 20, 30][i % 3]! + 100 * Math.floor(i / 3));
    assert.deepEqual(Array.from(out!.data as Float32Array), want);
  }
  sess.dispose();
  assert.throws(() => runSessionSync(sess, {}), /disposed/);
});

test("Cast int32 -> float32, int64 and bool outputs", () => {
  const g = new GraphBuilder("cast");
  g.addInput("x", "int32", [4]);
  const f = g.op("Cast", ["x"], { to: ONNX_DTYPE.float32 });
  const l = g.op("Cast", ["x"], { to: ONNX_DTYPE.int64 });
  const b = g.op("Cast", ["x"], { to: ONNX_DTYPE.bool });
  g.addOutput(f, "float32", [4]);
  g.addOutput(l, "int64", [4]);
  g.addOutput(b, "bool", [4]);
  const x = new Int32Array([-3, 0, 7, 2147483647]);
  const [of, ol, ob] = run1(g, { x: { dtype: "int32", shape: [4], data: x } });
  assert.ok(of!.data instanceof Float32Array);
  assert.deepEqual(Array.from(of!.data as Float32Array), [-3, 0, 7, 2147483648]);
  assert.equal(ol!.dtype, "int64");
  assert.deepEqual(Array.from(ol!.data as BigInt64Array), [-3n, 0n, 7n, 2147483647n]);
  assert.equal(ob!.dtype, "bool");
  assert.ok(ob!.data instanceof Uint8Array);
  assert.deepEqual(Array.from(ob!.data as Uint8Array), [1, 0, 1, 1]);
});

for (const opset of [21, DEFAULT_OPSET]) {
  test(`If node with then/else subgraphs capturing outer values (opset ${opset})`, () => {
    const g = new GraphBuilder("if");
    g.addInput("c", "bool", []);
    g.addInput("x", "float32", [3]);
    const thenG = g.subgraph("then");
    thenG.addOutput(thenG.op("Mul", ["x", thenG.scalar("float32", 2)]), "float32", [3]);
    const elseG = g.subgraph("else");
    elseG.addOutput(elseG.op("Add", ["x", elseG.scalar("float32", 100)]), "float32", [3]);
    const [y] = g.addNode("If", ["c"], 1, { then_branch: thenG, else_branch: elseG });
    g.addOutput(y!, "float32", [3]);
    const s = createSessionSync(g.toModelBytes({ opset }));
    const x: HostTensor = { dtype: "float32", shape: [3], data: new Float32Array([1, 2, 3]) };
    const [t] = runSessionSync(s, { c: { dtype: "bool", shape: [], data: new Uint8Array([1]) }, x });
    const [e] = runSessionSync(s, { c: { dtype: "bool", shape: [], data: new Uint8Array([0]) }, x });
    assert.deepEqual(Array.from(t!.data as Float32Array), [2, 4, 6]);
    assert.deepEqual(Array.from(e!.data as Float32Array), [101, 102, 103]);
    s.dispose();
  });

  test(`Loop node summing its counter, with a scan output (opset ${opset})`, () => {
    const g = new GraphBuilder("loop");
    g.addInput("n", "int64", []);
    const body = g.subgraph("body");
    body.addInput("i", "int64", []);
    body.addInput("cond_in", "bool", []);
    body.addInput("acc_in", "int64", []);
    const condOut = body.op("Identity", ["cond_in"]);
    const accOut = body.op("Add", ["acc_in", "i"]);
    const sq = body.op("Mul", ["i", "i"]);
    body.addOutput(condOut, "bool", []);
    body.addOutput(accOut, "int64", []);
    body.addOutput(sq, "int64", []);
    const zero = g.scalar("int64", 0);
    const [sum, squares] = g.addNode("Loop", ["n", "", zero], 2, { body });
    g.addOutput(sum!, "int64", []);
    g.addOutput(squares!, "int64", [null]);
    const [s, q] = run1(g, { n: { dtype: "int64", shape: [], data: new BigInt64Array([5n]) } }, opset);
    assert.deepEqual(s!.shape, []);
    assert.equal((s!.data as BigInt64Array)[0], 10n);
    assert.deepEqual(q!.shape, [5]);
    assert.deepEqual(Array.from(q!.data as BigInt64Array), [0n, 1n, 4n, 9n, 16n]);
  });
}

test("uint32 BitwiseXor / BitShift / Add wrap around", () => {
  const g = new GraphBuilder("u32");
  g.addInput("a", "uint32", [3]);
  g.addInput("b", "uint32", [3]);
  g.addOutput(g.op("BitwiseXor", ["a", "b"]), "uint32", [3]);
  g.addOutput(g.op("BitShift", ["a", "b"], { direction: "LEFT" }), "uint32", [3]);
  g.addOutput(g.op("BitShift", ["a", "b"], { direction: "RIGHT" }), "uint32", [3]);
  g.addOutput(g.op("Add", ["a", "b"]), "uint32", [3]);
  g.addOutput(g.op("Mul", ["a", "a"]), "uint32", [3]);
  const a = new Uint32Array([0xffffffff, 0x80000001, 0x12345678]);
  const b = new Uint32Array([0x0f0f0f0f, 1, 4]);
  const [xor, shl, shr, add, mul] = run1(g, {
    a: { dtype: "uint32", shape: [3], data: a },
    b: { dtype: "uint32", shape: [3], data: b },
  });
  assert.ok(xor!.data instanceof Uint32Array);
  assert.deepEqual(Array.from(xor!.data as Uint32Array), [0xf0f0f0f0, 0x80000000, 0x1234567c]);
  // shift amounts >= 32 are implementation-defined in ORT; stay below
  assert.deepEqual(Array.from(shl!.data as Uint32Array).slice(1), [0x00000002, 0x23456780]);
  assert.deepEqual(Array.from(shr!.data as Uint32Array).slice(1), [0x40000000, 0x01234567]);
  assert.deepEqual(Array.from(add!.data as Uint32Array), [(0xffffffff + 0x0f0f0f0f) >>> 0, 0x80000002, 0x1234567c]);
  assert.deepEqual(
    Array.from(mul!.data as Uint32Array),
    Array.from(a, (v) => Math.imul(v, v) >>> 0),
  );
});

test("float64 Exp is double precision", () => {
  const x = new Float64Array([-20.5, -1, 0, 1e-10, 0.5, 1, 10, 700]);
  const g = new GraphBuilder("exp64");
  g.addInput("x", "float64", [x.length]);
  g.addOutput(g.op("Exp", ["x"]), "float64", [x.length]);
  const [y] = run1(g, { x: { dtype: "float64", shape: [x.length], data: x } });
  assert.ok(y!.data instanceof Float64Array);
  x.forEach((v, i) => {
    const want = Math.exp(v);
    const got = (y!.data as Float64Array)[i]!;
    assert.ok(Math.abs(got - want) <= 4e-16 * want, `exp(${v}) = ${got}, want ${want}`);
  });
  // 1 + 1e-10 is not representable in float32: proves the computation stayed f64
  assert.notEqual((y!.data as Float64Array)[3], 1);
});

test("constants: initializers, Constant nodes, scalars", () => {
  const g = new GraphBuilder("consts");
  g.addInput("x", "float32", [2, 2]);
  const w = g.addInitializer("w", "float32", [2, 2], new Float32Array([1, 2, 3, 4]));
  const k = g.constant("float32", [2], [10, 20], { node: true });
  const i64 = g.int64s([4]);
  const h = g.scalar("float16", 0x3c00); // 1.0 as half bits
  const y = g.op("Add", [g.op("MatMul", ["x", w]), k]);
  g.addOutput(g.op("Reshape", [y, i64]), "float32", [4]);
  g.addOutput(g.op("Add", [h, h]), "float16", []);
  const m = decodeModel(g.toModelBytes());
  assert.deepEqual(m.graph!.initializer!.map((t) => t.name).sort(), [i64, h, "w"].sort());
  assert.equal(m.graph!.node![0]!.opType, "Constant");
  const [out, two] = run1(g, { x: { dtype: "float32", shape: [2, 2], data: new Float32Array([1, 0, 0, 1]) } });
  assert.deepEqual(out!.shape, [4]);
  assert.deepEqual(Array.from(out!.data as Float32Array), [11, 22, 13, 24]);
  assert.equal(two!.dtype, "float16");
  assert.ok(two!.data instanceof Uint16Array);
  assert.equal((two!.data as Uint16Array)[0], 0x4000); // 2.0 as half bits
});

test("fresh names are unique across nested subgraphs", () => {
  const g = new GraphBuilder("names");
  g.addInput("add_0", "float32", [1]);
  const sub = g.subgraph("s");
  const names = new Set<string>(["add_0"]);
  for (let i = 0; i < 5; i++) {
    for (const n of [g.op("Add", ["add_0", "add_0"]), sub.op("Add", ["add_0", "add_0"]), g.fresh(), sub.fresh()]) {
      assert.ok(!names.has(n), n);
      names.add(n);
    }
  }
});

test("async create/run, preallocated outputs, copy semantics", async () => {
  const g = new GraphBuilder("async");
  g.addInput("x", "float32", [4]);
  g.addOutput(g.op("Neg", ["x"]), "float32", [4]);
  g.addOutput(g.op("Abs", ["x"]), "float32", [4]);
  const s = await createSession(g.toModelBytes(), { intraOpNumThreads: 1, graphOptimizationLevel: "basic" });
  assert.deepEqual(s.inputNames, ["x"]);
  assert.equal(s.outputNames.length, 2);
  const x = new Float32Array([1, -2, 3, -4]);
  const [neg, abs] = await runSession(s, { x: { dtype: "float32", shape: [4], data: x } });
  assert.deepEqual(Array.from(neg!.data as Float32Array), [-1, 2, -3, 4]);
  assert.deepEqual(Array.from(abs!.data as Float32Array), [1, 2, 3, 4]);
  // results own their buffers and do not alias the inputs
  assert.notEqual((neg!.data as Float32Array).buffer, x.buffer);
  // preallocated: ORT writes into the caller's array; request a subset of outputs
  const pre = new Float32Array(4);
  const absName = s.outputNames[1]!;
  const [r] = await runSession(s, { x: { dtype: "float32", shape: [4], data: x } }, [absName], {
    preallocated: { [absName]: { dtype: "float32", shape: [4], data: pre } },
  });
  assert.equal(r!.data, pre);
  assert.deepEqual(Array.from(pre), [1, 2, 3, 4]);
  if (syncAvailable()) {
    const [again] = runSessionSync(s, { x: { dtype: "float32", shape: [4], data: x } }, [absName], { copy: true });
    assert.deepEqual(Array.from(again!.data as Float32Array), [1, 2, 3, 4]);
  }
  s.dispose();
});

test("bfloat16 crosses the model boundary as float32", () => {
  const vals = new Float32Array([1.5, -2.25, 3.0078125, 1e-3]);
  const bits = f32ToBf16Bits(vals);
  assert.equal(bits[0], 0x3fc0);
  // 3.0078125 = 0x40408000 is a tie: rounds to even 0x4040
  assert.equal(bits[2], 0x4040);
  assert.deepEqual(Array.from(bf16BitsToF32(f32ToBf16Bits(new Float32Array([2.5])))), [2.5]);
  const g = new GraphBuilder("bf16");
  g.addInput("x", "float32", [4]); // fed from a bfloat16 HostTensor
  const xb = g.op("Cast", ["x"], { to: ONNX_DTYPE.bfloat16 });
  const y = g.op("Cast", [g.op("Identity", [xb])], { to: ONNX_DTYPE.float32 });
  g.addOutput(y, "float32", [4]);
  const s = createSessionSync(g.toModelBytes());
  const [out] = runSessionSync(s, { x: { dtype: "bfloat16", shape: [4], data: bits } }, undefined, {
    outputDTypes: { [y]: "bfloat16" },
  });
  assert.equal(out!.dtype, "bfloat16");
  assert.deepEqual(Array.from(out!.data as Uint16Array), Array.from(bits));
  s.dispose();
});

test("generated ORT support table is consistent", () => {
  assert.equal(ORT_SUPPORT_OPSET, DEFAULT_OPSET);
  assert.equal(ortSupports("MatMul", "float32"), true);
  assert.equal(ortSupports("MatMul", "bool"), false);
  assert.equal(ortSupports("NoSuchOp", "float32"), undefined);
  assert.ok(ORT_SUPPORT["Add"]!.includes("int64"));
});
