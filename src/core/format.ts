/** @file Printing arrays the way JAX does: Array([[1., 2.], [3., 4.]], dtype=float32). */
import { type DType } from "./dtype.js";

/** Shortest decimal that round-trips through the dtype (NumPy's repr digits). */
function shortest(x: number, d: DType): string {
  if (d === "float64") return String(x);
  const round = d === "float32" ? Math.fround : (v: number) => v;
  for (let p = 1; p <= 17; p++) {
    const s = x.toPrecision(p);
    const back = Number(s);
    if (round(back) === x || (d !== "float32" && Math.abs(back - x) <= Math.abs(x) * (d === "float16" ? 2 ** -11 : 2 ** -8))) return String(back);
  }
  return String(x);
}

function formatFloats(vals: number[], d: DType): string[] {
  const finite = vals.filter((v) => Number.isFinite(v) && v !== 0).map(Math.abs);
  const maxA = finite.length ? Math.max(...finite) : 0;
  const minA = finite.length ? Math.min(...finite) : 0;
  const sci = maxA >= 1e16 || (minA < 1e-4 && minA > 0) || (minA > 0 && maxA / minA > 1e3 && minA < 1e-3);
  // scientific notation: one mantissa precision for all elements, like NumPy
  const sciDigits = sci ? Math.max(0, ...vals.filter(Number.isFinite).map((v) => {
    const m = Number(shortest(v, d)).toExponential().split("e")[0];
    return m.includes(".") ? m.length - m.indexOf(".") - 1 : 0;
  })) : 0;
  const strs = vals.map((v) => {
    if (Number.isNaN(v)) return "nan";
    if (v === Infinity) return "inf";
    if (v === -Infinity) return "-inf";
    if (sci) {
      const [m, e] = Number(shortest(v, d)).toExponential(sciDigits).split("e");
      const exp = Number(e);
      return `${m.includes(".") ? m : m + "."}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
    }
    let s = shortest(v, d);
    if (s.includes("e")) s = v.toFixed(20).replace(/0+$/, "");
    if (!s.includes(".")) s += ".";
    if (Object.is(v, -0)) s = "-0.";
    return s;
  });
  if (sci) return strs;
  // align like NumPy: pad integer parts on the left, fractions on the right
  const ip = strs.map((s) => (s.includes(".") ? s.slice(0, s.indexOf(".")) : s));
  const fp = strs.map((s) => (s.includes(".") ? s.slice(s.indexOf(".")) : ""));
  const fw = Math.max(...fp.map((f) => f.length));
  return strs.map((_, i) => ip[i] + fp[i].padEnd(fw, " "));
}

export function formatArray(
  shape: readonly number[], dtype: DType, weak: boolean, get: (i: number) => number | boolean | bigint, size: number,
): string {
  const raw: (number | boolean | bigint)[] = [];
  for (let i = 0; i < size; i++) raw.push(get(i));
  let strs: string[];
  if (dtype === "bool") strs = raw.map((v) => (v ? "True" : "False"));
  else if (dtype.startsWith("float") || dtype === "bfloat16") strs = formatFloats(raw as number[], dtype);
  else strs = raw.map((v) => String(v));
  const w = Math.max(0, ...strs.map((s) => s.length));
  const padded = strs.map((s) => s.padStart(w, " "));
  const prefix = "Array(";
  let k = 0;
  const rec = (dim: number, indent: number): string => {
    if (dim === shape.length) return padded[k++];
    if (shape[dim] === 0) { return "[]"; }
    const parts: string[] = [];
    for (let i = 0; i < shape[dim]; i++) parts.push(rec(dim + 1, indent + 1));
    const sep = dim === shape.length - 1 ? ", " : "," + "\n".repeat(shape.length - dim - 1) + " ".repeat(indent + 1);
    return "[" + parts.join(sep) + "]";
  };
  const body = shape.length === 0 ? padded[0] : rec(0, prefix.length);
  const sizeNote = size === 0 && shape.length > 0 ? `, shape=(${shape.join(", ")}${shape.length === 1 ? "," : ""})` : "";
  return `${prefix}${body}${sizeNote}, dtype=${dtype}${weak ? ", weak_type=True" : ""})`;
}
