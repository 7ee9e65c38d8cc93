/** @file Readable text summaries of compiled ONNX models and programs (what `jit(f).lower(...).asText()` shows). */
import { dtypeFromOnnx } from "../backends/onnx/graph-builder.js";
import {
  type AttributeProto,
  type GraphProto,
  type TensorProto,
  type ValueInfoProto,
  decodeModel,
} from "../backends/onnx/onnx-proto.js";
import { shortName } from "../core/dtype.js";
import type { Program } from "./compile.js";

const utf8 = new TextDecoder();

function typeStr(code: number | undefined, dims: readonly (number | string | undefined)[] | null): string {
  let t: string;
  try {
    t = shortName(dtypeFromOnnx(code ?? 0));
  } catch {
    t = `type${code}`;
  }
  return dims === null ? `${t}[?]` : `${t}[${dims.map((d) => d ?? "?").join(",")}]`;
}
function vi(v: ValueInfoProto): string {
  const tt = v.type?.tensorType;
  const dims = tt?.shape ? (tt.shape.dim ?? []).map((d) => d.dimValue ?? d.dimParam) : null;
  return `${v.name}: ${typeStr(tt?.elemType, dims)}`;
}
function tensorStr(t: TensorProto): string {
  const n = (t.dims ?? []).reduce((a, b) => a * b, 1);
  const head = typeStr(t.dataType, t.dims ?? []);
  if (n > 8 || !t.rawData) return head;
  let vals: ArrayLike<number | bigint> = [];
  const raw = t.rawData;
  const buf = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
  try {
    switch (dtypeFromOnnx(t.dataType ?? 0)) {
      case "float32":
        vals = new Float32Array(buf);
        break;
      case "float64":
        vals = new Float64Array(buf);
        break;
      case "int32":
        vals = new Int32Array(buf);
        break;
      case "int64":
        vals = new BigInt64Array(buf);
        break;
      case "uint32":
        vals = new Uint32Array(buf);
        break;
      case "uint64":
        vals = new BigUint64Array(buf);
        break;
      case "bool":
      case "uint8":
        vals = new Uint8Array(buf);
        break;
      case "int8":
        vals = new Int8Array(buf);
        break;
      case "int16":
        vals = new Int16Array(buf);
        break;
      default:
        return head;
    }
  } catch {
    return head;
  }
  const s = Array.from(vals as ArrayLike<number>, String);
  return `${head}{${(t.dims ?? []).length === 0 ? s[0] : s.join(",")}}`;
}
function attrStr(a: AttributeProto, indent: string): string {
  const v = a.ints?.length
    ? `[${a.ints.join(",")}]`
    : a.floats?.length
      ? `[${a.floats.join(",")}]`
      : a.s
        ? JSON.stringify(utf8.decode(a.s))
        : a.t
          ? tensorStr(a.t)
          : a.g
            ? `\n${graphLines(a.g, indent + "    ").join("\n")}`
            : a.f !== undefined && a.f !== 0
              ? String(a.f)
              : a.i !== undefined
                ? String(a.i)
                : a.type === 1
                  ? "0.0"
                  : a.ints
                    ? "[]"
                    : "0";
  return `${a.name}=${v}`;
}

function graphLines(g: GraphProto, indent: string): string[] {
  const lines: string[] = [];
  const consts = new Map<string, string>();
  for (const t of g.initializer ?? []) if (t.name) consts.set(t.name, tensorStr(t));
  lines.push(`${indent}graph ${g.name ?? ""}(${(g.input ?? []).map(vi).join(", ")})`);
  const big = [...consts].filter(([, s]) => !s.includes("{"));
  if (big.length) lines.push(`${indent}  initializers: ${big.map(([n, s]) => `${n}: ${s}`).join(", ")}`);
  const arg = (n: string) => (n === "" ? "_" : consts.has(n) && consts.get(n)!.includes("{") ? consts.get(n)! : n);
  for (const n of g.node ?? []) {
    const attrs = (n.attribute ?? []).map((a) => attrStr(a, indent));
    const outs = (n.output ?? []).join(", ");
    const op = n.domain ? `${n.domain}.${n.opType}` : n.opType;
    lines.push(
      `${indent}  ${outs} = ${op}${attrs.length ? `[${attrs.join(" ")}]` : ""}(${(n.input ?? []).map(arg).join(", ")})`,
    );
  }
  lines.push(`${indent}  return ${(g.output ?? []).map(vi).join(", ")}`);
  return lines;
}

/** A readable listing of an ONNX model (bytes), a decoded graph, or a compiled program (all its models). */
export function summarizeOnnx(model: Uint8Array | GraphProto | Program): string {
  if (model instanceof Uint8Array) {
    const m = decodeModel(model);
    const opset = (m.opsetImport ?? []).map((o) => `${o.domain || "ai.onnx"} ${o.version}`).join(", ");
    return [`// ONNX model, IR ${m.irVersion}, opset ${opset}`, ...graphLines(m.graph ?? {}, "")].join("\n");
  }
  if ("steps" in model) {
    const parts: string[] = [];
    for (const s of model.steps) {
      if (s.kind === "onnx") parts.push(summarizeOnnx(s.model));
      else {
        // a host step whose primitive runs a program of its own (shard_map on the devices) may describe it
        const describe = (s.eqn.params as { describe?: unknown }).describe;
        parts.push(
          typeof describe === "function"
            ? String((describe as () => string)())
            : `// ${s.eqn.primitive.name} on the reference interpreter (${s.reason})`,
        );
      }
    }
    if (parts.length === 0) parts.push("// no computation (outputs are inputs or constants)");
    return parts.join("\n");
  }
  return graphLines(model, "").join("\n");
}
