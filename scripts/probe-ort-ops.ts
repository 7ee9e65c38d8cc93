/** @file Probes onnxruntime-node CPU kernel support for op x dtype (x opset) by building and running tiny models; writes src/backends/onnx/ort-support.ts (with ort-cast-support.ts) and the matrix section of notes/onnx-runtime.md. */
// Usage (after compiling with tsc to OUT/): node OUT/scripts/probe-ort-ops.js [--opset N] [--opsets 18,21,...] [--no-write]
// Run from the repository root.

import { readFileSync, writeFileSync, existsSync } from "node:fs";
import {
  DEFAULT_OPSET,
  DTYPES,
  GraphBuilder,
  ONNX_DTYPE,
  allocHostArray,
  itemSize,
  type DType,
} from "../src/backends/onnx/graph-builder.js";
import { createSessionSync, ortVersion, runSessionSync, type HostTensor } from "../src/backends/onnx/ort-runtime.js";

type Status = "ok" | "nokernel" | "spec" | "error";

/** float32 -> IEEE half bits (round-to-nearest-even; fine for the small probe values). */
function f32ToF16Bits(v: number): number {
  const f = new Float32Array([v]);
  const x = new Uint32Array(f.buffer)[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  const mant = x & 0x7fffff;
  if (exp <= 0) return sign;
  if (exp >= 31) return sign | 0x7c00;
  let h = sign | (exp << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++;
  return h;
}

class Ctx {
  readonly g = new GraphBuilder("probe");
  readonly feeds: Record<string, HostTensor> = {};
  /** A graph input of `dtype` (bfloat16 enters as float32 and is Cast inside). */
  input(dtype: DType, shape: number[], values?: number[]): string {
    const n = shape.reduce((a, b) => a * b, 1);
    const vals = values ?? Array.from({ length: n }, (_, i) => (i % 5) + 1);
    const name = this.g.fresh("in");
    const feedType: DType = dtype === "bfloat16" ? "float32" : dtype;
    const data = allocHostArray(feedType, n);
    for (let i = 0; i < n; i++) {
      const v = vals[i]!;
      if (feedType === "int64" || feedType === "uint64") (data as BigInt64Array)[i] = BigInt(v);
      else if (feedType === "bool") (data as Uint8Array)[i] = v % 2;
      else if (feedType === "float16") (data as Uint16Array)[i] = f32ToF16Bits(v);
      else (data as Float64Array)[i] = v;
    }
    this.g.addInput(name, feedType, shape);
    this.feeds[name] = { dtype: feedType, shape, data };
    if (dtype !== "bfloat16") return name;
    return this.g.op("Cast", [name], { to: ONNX_DTYPE.bfloat16 });
  }
  i64(values: number[], shape: number[] = [values.length]): string {
    return this.g.constant("int64", shape, values);
  }
  idx(dtype: DType, values: number[], shape: number[] = [values.length]): string {
    return this.g.constant(dtype, shape, values);
  }
}

type Out = [name: string, dtype: DType];
interface Spec {
  key: string;
  build(c: Ctx, d: DType): Out[];
}

const g1 =
  (op: string, attrs: Record<string, number | string> = {}) =>
  (c: Ctx, d: DType): Out[] => [[c.g.op(op, [c.input(d, [2, 3])], attrs), d]];
const g2 =
  (op: string, outBool = false, attrs: Record<string, number | string> = {}) =>
  (c: Ctx, d: DType): Out[] => [[c.g.op(op, [c.input(d, [2, 3]), c.input(d, [3])], attrs), outBool ? "bool" : d]];
const red =
  (op: string) =>
  (c: Ctx, d: DType): Out[] => [[c.g.op(op, [c.input(d, [2, 3]), c.i64([1])], { keepdims: 0 }), d]];

const specs: Spec[] = [];
for (const op of [
  "Add",
  "Sub",
  "Mul",
  "Div",
  "Max",
  "Min",
  "Pow",
  "BitwiseAnd",
  "BitwiseOr",
  "BitwiseXor",
  "And",
  "Or",
  "Xor",
  "PRelu",
])
  specs.push({ key: op, build: g2(op) });
for (const op of ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
  specs.push({ key: op, build: g2(op, true) });
specs.push({ key: "Mod(fmod=0)", build: g2("Mod", false, { fmod: 0 }) });
specs.push({ key: "Mod(fmod=1)", build: g2("Mod", false, { fmod: 1 }) });
specs.push({ key: "BitShift(LEFT)", build: g2("BitShift", false, { direction: "LEFT" }) });
specs.push({ key: "BitShift(RIGHT)", build: g2("BitShift", false, { direction: "RIGHT" }) });
for (const op of [
  "Neg",
  "Abs",
  "Exp",
  "Log",
  "Tanh",
  "Sqrt",
  "Sigmoid",
  "Erf",
  "Sin",
  "Cos",
  "Tan",
  "Asin",
  "Acos",
  "Atan",
  "Sinh",
  "Cosh",
  "Asinh",
  "Acosh",
  "Atanh",
  "Reciprocal",
  "Relu",
  "Softplus",
  "Not",
  "BitwiseNot",
  "Round",
  "Floor",
  "Ceil",
  "Sign",
  "Identity",
])
  specs.push({ key: op, build: g1(op) });
specs.push({ key: "IsNaN", build: (c, d) => [[c.g.op("IsNaN", [c.input(d, [2, 3])]), "bool"]] });
specs.push({ key: "IsInf", build: (c, d) => [[c.g.op("IsInf", [c.input(d, [2, 3])]), "bool"]] });
specs.push({ key: "Softmax", build: g1("Softmax", { axis: -1 }) });
specs.push({ key: "LogSoftmax", build: g1("LogSoftmax", { axis: -1 }) });
specs.push({
  key: "Clip",
  build: (c, d) => [[c.g.op("Clip", [c.input(d, [2, 3]), c.input(d, [], [2]), c.input(d, [], [4])]), d]],
});
specs.push({
  key: "Where",
  build: (c, d) => [[c.g.op("Where", [c.input("bool", [2, 3]), c.input(d, [2, 3]), c.input(d, [3])]), d]],
});
for (const op of [
  "ReduceSum",
  "ReduceMax",
  "ReduceMin",
  "ReduceProd",
  "ReduceMean",
  "ReduceLogSumExp",
  "ReduceSumSquare",
  "ReduceL2",
])
  specs.push({ key: op, build: red(op) });
specs.push({
  key: "ArgMax",
  build: (c, d) => [[c.g.op("ArgMax", [c.input(d, [2, 3])], { axis: 1, keepdims: 0 }), "int64"]],
});
specs.push({
  key: "ArgMin",
  build: (c, d) => [[c.g.op("ArgMin", [c.input(d, [2, 3])], { axis: 1, keepdims: 0 }), "int64"]],
});
specs.push({ key: "CumSum", build: (c, d) => [[c.g.op("CumSum", [c.input(d, [2, 3]), c.g.scalar("int64", 1)]), d]] });
specs.push({ key: "MatMul", build: (c, d) => [[c.g.op("MatMul", [c.input(d, [2, 3]), c.input(d, [3, 2])]), d]] });
specs.push({
  key: "MatMul(batched)",
  build: (c, d) => [[c.g.op("MatMul", [c.input(d, [2, 2, 3]), c.input(d, [2, 3, 2])]), d]],
});
specs.push({ key: "Gemm", build: (c, d) => [[c.g.op("Gemm", [c.input(d, [2, 3]), c.input(d, [3, 2])]), d]] });
specs.push({
  key: "Einsum",
  build: (c, d) => [[c.g.op("Einsum", [c.input(d, [2, 3]), c.input(d, [3, 2])], { equation: "ij,jk->ik" }), d]],
});
specs.push({
  key: "Conv",
  build: (c, d) => [[c.g.op("Conv", [c.input(d, [1, 1, 3, 3]), c.input(d, [1, 1, 2, 2])]), d]],
});
specs.push({
  key: "MaxPool",
  build: (c, d) => [[c.g.op("MaxPool", [c.input(d, [1, 1, 3, 3])], { kernel_shape: [2, 2] }), d]],
});
specs.push({
  key: "AveragePool",
  build: (c, d) => [[c.g.op("AveragePool", [c.input(d, [1, 1, 3, 3])], { kernel_shape: [2, 2] }), d]],
});
specs.push({
  key: "Gather",
  build: (c, d) => [[c.g.op("Gather", [c.input(d, [2, 3]), c.i64([2, 0])], { axis: 1 }), d]],
});
specs.push({
  key: "GatherND",
  build: (c, d) => [[c.g.op("GatherND", [c.input(d, [2, 3]), c.i64([1, 2, 0, 1], [2, 2])]), d]],
});
specs.push({
  key: "GatherElements",
  build: (c, d) => [
    [c.g.op("GatherElements", [c.input(d, [2, 3]), c.i64([2, 0, 1, 1, 0, 2], [2, 3])], { axis: 1 }), d],
  ],
});
for (const r of ["none", "add", "mul", "max", "min"]) {
  specs.push({
    key: `ScatterND(${r})`,
    build: (c, d) => [
      [c.g.op("ScatterND", [c.input(d, [2, 3]), c.i64([1, 2, 0, 0], [2, 2]), c.input(d, [2])], { reduction: r }), d],
    ],
  });
  specs.push({
    key: `ScatterElements(${r})`,
    build: (c, d) => [
      [
        c.g.op("ScatterElements", [c.input(d, [2, 3]), c.i64([2, 0], [1, 2]), c.input(d, [1, 2])], {
          axis: 1,
          reduction: r,
        }),
        d,
      ],
    ],
  });
}
specs.push({
  key: "Slice",
  build: (c, d) => [
    [c.g.op("Slice", [c.input(d, [2, 3]), c.i64([0, 2]), c.i64([2, -4]), c.i64([0, 1]), c.i64([1, -2])]), d],
  ],
});
specs.push({
  key: "Pad(constant)",
  build: (c, d) => [[c.g.op("Pad", [c.input(d, [2, 3]), c.i64([0, 1, 1, 0]), c.input(d, [], [7])]), d]],
});
specs.push({
  key: "Pad(edge)",
  build: (c, d) => [[c.g.op("Pad", [c.input(d, [2, 3]), c.i64([0, 1, 1, 0])], { mode: "edge" }), d]],
});
specs.push({
  key: "Pad(reflect)",
  build: (c, d) => [[c.g.op("Pad", [c.input(d, [2, 3]), c.i64([0, 1, 0, 1])], { mode: "reflect" }), d]],
});
specs.push({
  key: "Concat",
  build: (c, d) => [[c.g.op("Concat", [c.input(d, [2, 3]), c.input(d, [1, 3])], { axis: 0 }), d]],
});
specs.push({
  key: "Split",
  build: (c, d) => c.g.addNode("Split", [c.input(d, [2, 4]), c.i64([1, 3])], 2, { axis: 1 }).map((o): Out => [o, d]),
});
specs.push({ key: "Transpose", build: (c, d) => [[c.g.op("Transpose", [c.input(d, [2, 3])], { perm: [1, 0] }), d]] });
specs.push({ key: "Reshape", build: (c, d) => [[c.g.op("Reshape", [c.input(d, [2, 3]), c.i64([3, 2])]), d]] });
specs.push({ key: "Squeeze", build: (c, d) => [[c.g.op("Squeeze", [c.input(d, [1, 3]), c.i64([0])]), d]] });
specs.push({ key: "Unsqueeze", build: (c, d) => [[c.g.op("Unsqueeze", [c.input(d, [2, 3]), c.i64([1])]), d]] });
specs.push({ key: "Expand", build: (c, d) => [[c.g.op("Expand", [c.input(d, [1, 3]), c.i64([2, 3])]), d]] });
specs.push({ key: "Tile", build: (c, d) => [[c.g.op("Tile", [c.input(d, [2, 3]), c.i64([2, 1])]), d]] });
specs.push({
  key: "TopK",
  build: (c, d) => {
    const [v, i] = c.g.addNode("TopK", [c.input(d, [2, 3]), c.i64([2])], 2, { axis: 1 });
    return [
      [v!, d],
      [i!, "int64"],
    ];
  },
});
specs.push({
  key: "Range",
  build: (c, d) => [[c.g.op("Range", [c.input(d, [], [1]), c.input(d, [], [5]), c.input(d, [], [2])]), d]],
});
specs.push({ key: "Trilu", build: (c, d) => [[c.g.op("Trilu", [c.input(d, [3, 3])], { upper: 1 }), d]] });
specs.push({ key: "Shape", build: (c, d) => [[c.g.op("Shape", [c.input(d, [2, 3])]), "int64"]] });
specs.push({
  key: "ConstantOfShape",
  build: (c, d) => [
    [
      c.g.op("ConstantOfShape", [c.i64([2, 3])], {
        value: { kind: "tensor", value: { dtype: d, shape: [1], data: [1] } },
      }),
      d,
    ],
  ],
});
specs.push({ key: "NonZero", build: (c, d) => [[c.g.op("NonZero", [c.input(d, [2, 3])]), "int64"]] });
specs.push({
  key: "OneHot",
  build: (c, d) => [[c.g.op("OneHot", [c.input(d, [3]), c.input(d, [], [6]), c.input(d, [2], [0, 1])]), d]],
});
// index-dtype variants: the dtype axis is the *index* dtype, data is float32
specs.push({
  key: "Gather[indices]",
  build: (c, d) => [[c.g.op("Gather", [c.input("float32", [2, 3]), c.idx(d, [2, 0])], { axis: 1 }), "float32"]],
});
specs.push({
  key: "GatherElements[indices]",
  build: (c, d) => [
    [
      c.g.op("GatherElements", [c.input("float32", [2, 3]), c.idx(d, [2, 0, 1, 1, 0, 2], [2, 3])], { axis: 1 }),
      "float32",
    ],
  ],
});
specs.push({
  key: "ScatterElements[indices]",
  build: (c, d) => [
    [
      c.g.op("ScatterElements", [c.input("float32", [2, 3]), c.idx(d, [2, 0], [1, 2]), c.input("float32", [1, 2])], {
        axis: 1,
      }),
      "float32",
    ],
  ],
});
specs.push({
  key: "Slice[indices]",
  build: (c, d) => [
    [
      c.g.op("Slice", [
        c.input("float32", [2, 3]),
        c.idx(d, [0, 2]),
        c.idx(d, [2, 0]),
        c.idx(d, [0, 1]),
        c.idx(d, [1, -1]),
      ]),
      "float32",
    ],
  ],
});
specs.push({
  key: "CumSum[axis]",
  build: (c, d) => [[c.g.op("CumSum", [c.input("float32", [2, 3]), c.g.scalar(d, 1)]), "float32"]],
});
specs.push({
  key: "Pow[exponent]",
  build: (c, d) => [[c.g.op("Pow", [c.input("float32", [2, 3]), c.input(d, [3])]), "float32"]],
});
specs.push({ key: "CumProd", build: (c, d) => [[c.g.op("CumProd", [c.input(d, [2, 3]), c.g.scalar("int64", 1)]), d]] });
// BitCast (opset >= 26): D -> unsigned int of the same width, and back
const uintOfWidth = (d: DType): DType =>
  (({ 1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64" }) as const)[itemSize(d) as 1 | 2 | 4 | 8];
specs.push({
  key: "BitCast(->uint)",
  build: (c, d) => [[c.g.op("BitCast", [c.input(d, [2, 3])], { to: ONNX_DTYPE[uintOfWidth(d)] }), uintOfWidth(d)]],
});
specs.push({
  key: "BitCast(uint->)",
  build: (c, d) => [[c.g.op("BitCast", [c.input(uintOfWidth(d), [2, 3])], { to: ONNX_DTYPE[d] }), d]],
});
specs.push({
  key: "Cast(->float32)",
  build: (c, d) => [[c.g.op("Cast", [c.input(d, [2, 3])], { to: ONNX_DTYPE.float32 }), "float32"]],
});
specs.push({
  key: "Cast(float32->)",
  build: (c, d) => [[c.g.op("Cast", [c.input("float32", [2, 3])], { to: ONNX_DTYPE[d] }), d]],
});

function classify(msg: string): Status {
  if (/Could not find an implementation|NOT_IMPLEMENTED/i.test(msg)) return "nokernel";
  if (
    /Type Error|invalid model|type constraint|InvalidGraph|ShapeInferenceError|INVALID_GRAPH|Unrecognized attribute|Mismatched attribute|not a registered function\/op/i.test(
      msg,
    )
  )
    return "spec";
  return "error";
}

interface Cell {
  status: Status;
  msg?: string;
}

function probe(spec: Spec, d: DType, opset: number): Cell {
  const c = new Ctx();
  let bytes: Uint8Array;
  const outNames: string[] = [];
  try {
    for (const [name, dt] of spec.build(c, d)) {
      let out = name;
      let odt = dt;
      if (dt === "bfloat16") {
        out = c.g.op("Cast", [name], { to: ONNX_DTYPE.float32 });
        odt = "float32";
      }
      c.g.addOutput(out, odt, null);
      outNames.push(out);
    }
    bytes = c.g.toModelBytes({ opset });
  } catch (e) {
    return { status: "error", msg: `build: ${String(e)}` };
  }
  let session;
  try {
    session = createSessionSync(bytes, { intraOpNumThreads: 1, logSeverityLevel: 4 });
  } catch (e) {
    const msg = String(e).split("\n")[0]!;
    return { status: classify(msg), msg };
  }
  try {
    runSessionSync(session, c.feeds, outNames);
    return { status: "ok" };
  } catch (e) {
    return { status: "error", msg: `run: ${String(e).split("\n")[0]}` };
  } finally {
    session.dispose();
  }
}

function castMatrix(opset: number): Record<string, DType[]> {
  const out: Record<string, DType[]> = {};
  for (const from of DTYPES) {
    out[from] = [];
    for (const to of DTYPES) {
      const cell = probe(
        { key: "Cast", build: (c, d) => [[c.g.op("Cast", [c.input(d, [2, 3])], { to: ONNX_DTYPE[to] }), to]] },
        from,
        opset,
      );
      if (cell.status === "ok") out[from]!.push(to);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------

const args = process.argv.slice(2);
const argVal = (k: string): string | undefined => {
  const i = args.indexOf(k);
  return i >= 0 ? args[i + 1] : undefined;
};
const mainOpset = Number(argVal("--opset") ?? DEFAULT_OPSET);
const opsets = (argVal("--opsets") ?? `18,21,22,23,24,25,26`).split(",").map(Number);
if (!opsets.includes(mainOpset)) opsets.push(mainOpset);
const write = !args.includes("--no-write");

const t0 = performance.now();
const results = new Map<number, Map<string, Map<DType, Cell>>>();
for (const opset of opsets) {
  const byOp = new Map<string, Map<DType, Cell>>();
  for (const s of specs) {
    const row = new Map<DType, Cell>();
    for (const d of DTYPES) row.set(d, probe(s, d, opset));
    byOp.set(s.key, row);
  }
  results.set(opset, byOp);
  const ok = [...byOp.values()].reduce((n, r) => n + [...r.values()].filter((c) => c.status === "ok").length, 0);
  console.log(`opset ${opset}: ${ok} ok cells of ${specs.length * DTYPES.length}`);
}
const main = results.get(mainOpset)!;
const casts = castMatrix(mainOpset);
console.log(`probed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

// opset differences vs the main opset (only where runnable-or-not changes), grouped per cell
const diffs: string[] = [];
for (const s of specs)
  for (const d of DTYPES) {
    const a = main.get(s.key)!.get(d)!.status;
    const flips = opsets.filter(
      (o) => o !== mainOpset && (results.get(o)!.get(s.key)!.get(d)!.status === "ok") !== (a === "ok"),
    );
    if (flips.length) diffs.push(`${s.key} ${d}: ${a === "ok" ? "fails" : "runs"} at opset ${flips.join(", ")}`);
  }

/** The useful tail of an ORT error message. */
function shortMsg(m: string): string {
  let t = m.replace(/^.*Status Message: /, "");
  t = t.replace(/^\/onnxruntime_src\S+ .* const (\[with [^\]]*\] )?/, "");
  return t.length > 160 ? `${t.slice(0, 157)}...` : t;
}

// unexpected errors (not a clean load/kernel failure)
const errors: string[] = [];
for (const s of specs)
  for (const d of DTYPES) {
    const c = main.get(s.key)!.get(d)!;
    if (c.status === "error") errors.push(`${s.key} ${d}: ${shortMsg(c.msg ?? "")}`);
  }

const SYM: Record<Status, string> = { ok: "✓", nokernel: "NK", spec: "·", error: "E" };
const md: string[] = [];
md.push(`Generated by \`scripts/probe-ort-ops.ts\` with onnxruntime-node ${ortVersion()}, CPU EP, opset ${mainOpset}.`);
md.push(
  "`✓` runs; `NK` valid ONNX but ORT CPU has no kernel; `·` rejected by the ONNX schema (type constraint); `E` other error.",
);
md.push(
  "Columns are the op's data dtype; rows marked `[indices]`/`[axis]`/`[exponent]` vary that input's dtype (data float32).",
);
md.push("bfloat16 rows enter/leave the model as float32 with a Cast inside.\n");
md.push(`| op | ${DTYPES.join(" | ")} |`);
md.push(`|---|${DTYPES.map(() => "---").join("|")}|`);
for (const s of specs) md.push(`| ${s.key} | ${DTYPES.map((d) => SYM[main.get(s.key)!.get(d)!.status]).join(" | ")} |`);
md.push("\nCast support (rows: from, ✓ columns: to):\n");
md.push(`| from \\ to | ${DTYPES.join(" | ")} |`);
md.push(`|---|${DTYPES.map(() => "---").join("|")}|`);
for (const f of DTYPES) md.push(`| ${f} | ${DTYPES.map((t) => (casts[f]!.includes(t) ? "✓" : "NK")).join(" | ")} |`);
md.push(
  `\nRunnable at opset ${mainOpset} but not at another probed opset (${opsets.filter((o) => o !== mainOpset).join(", ")}), or vice versa:\n`,
);
md.push(diffs.length ? diffs.map((d) => `- ${d}`).join("\n") : "- none");
if (errors.length) md.push(`\nOther errors at opset ${mainOpset}:\n\n${errors.map((e) => `- ${e}`).join("\n")}`);
const mdText = md.join("\n");

const supported: string[] = [];
const missing: string[] = [];
for (const s of specs) {
  const row = main.get(s.key)!;
  const ok = DTYPES.filter((d) => row.get(d)!.status === "ok");
  const nk = DTYPES.filter((d) => row.get(d)!.status === "nokernel");
  supported.push(`  ${JSON.stringify(s.key)}: ${JSON.stringify(ok)},`);
  if (nk.length) missing.push(`  ${JSON.stringify(s.key)}: ${JSON.stringify(nk)},`);
}
const ts = `/** @file GENERATED by scripts/probe-ort-ops.ts (do not edit): ORT CPU kernel support per op x dtype, onnxruntime-node ${ortVersion()}, opset ${mainOpset}. */

import type { DType } from "./graph-builder.js";

/** The opset the table was probed at. */
export const ORT_SUPPORT_OPSET = ${mainOpset};

/**
 * Op key -> dtypes for which a tiny model loads and runs on ORT CPU. Keys are
 * ONNX op types, with variants in parentheses (e.g. "ScatterND(add)", "Mod(fmod=1)").
 * Keys ending in "[indices]" / "[axis]" / "[exponent]" vary that input's dtype with float32 data.
 */
export const ORT_SUPPORT: Readonly<Record<string, readonly DType[]>> = {
${supported.join("\n")}
};

/** The missing kernels and the Cast matrix live in ort-cast-support.ts. */
export { ORT_CAST_SUPPORT, ORT_MISSING_KERNELS } from "./ort-cast-support.js";

/** Whether ORT CPU runs \`op\` (an ORT_SUPPORT key) on \`dtype\`; unknown ops -> undefined. */
export function ortSupports(op: string, dtype: DType): boolean | undefined {
  const row = ORT_SUPPORT[op];
  return row === undefined ? undefined : row.includes(dtype);
}

/** The first of \`preferred\` dtypes that \`op\` supports (for choosing a cast target), or undefined. */
export function ortSupportedDtype(op: string, preferred: readonly DType[]): DType | undefined {
  const row = ORT_SUPPORT[op];
  return row === undefined ? undefined : preferred.find((d) => row.includes(d));
}
`;
const castTs = `/** @file GENERATED by scripts/probe-ort-ops.ts (do not edit): the op x dtype pairs the ONNX schema allows but ORT CPU has no kernel for, and the Cast matrix, onnxruntime-node ${ortVersion()}, opset ${mainOpset}. */

import type { DType } from "./graph-builder.js";

/** Op key -> dtypes the ONNX schema allows but ORT CPU has no kernel for. */
export const ORT_MISSING_KERNELS: Readonly<Record<string, readonly DType[]>> = {
${missing.join("\n")}
};

/** Cast: from -> supported target dtypes. */
export const ORT_CAST_SUPPORT: Readonly<Record<DType, readonly DType[]>> = {
${DTYPES.map((f) => `  ${f}: ${JSON.stringify(casts[f])},`).join("\n")}
};
`;

if (write) {
  writeFileSync("src/backends/onnx/ort-support.ts", ts);
  writeFileSync("src/backends/onnx/ort-cast-support.ts", castTs);
  const notes = "notes/onnx-runtime.md";
  const BEGIN = "<!-- BEGIN PROBE MATRIX -->";
  const END = "<!-- END PROBE MATRIX -->";
  const block = `${BEGIN}\n${mdText}\n${END}`;
  let text = existsSync(notes)
    ? readFileSync(notes, "utf8")
    : `# ONNX Runtime notes\n\n## Support matrix\n\n${BEGIN}\n${END}\n`;
  const i = text.indexOf(BEGIN);
  const j = text.indexOf(END);
  text = i >= 0 && j > i ? text.slice(0, i) + block + text.slice(j + END.length) : `${text}\n${block}\n`;
  writeFileSync(notes, text);
  console.log("wrote src/backends/onnx/ort-support.ts, ort-cast-support.ts and notes/onnx-runtime.md");
} else {
  console.log(mdText);
}
