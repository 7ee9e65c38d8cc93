/** @file Printing arrays the way JAX does: Array(<NumPy's array2string of the value>, dtype=float32). */
import { type Complex, type DType } from "./dtype.js";
import { castTo, exponentString, formatG, positionalDigits, scientificDigits } from "./float-digits.js";

type Element = number | boolean | bigint | Complex;

/** NumPy's print options as JAX leaves them. */
const LINE_WIDTH = 75;
const THRESHOLD = 1000;
const EDGE_ITEMS = 3;
const PRECISION = 8;
const PREFIX = "Array(";

/** Where NumPy (>= 2.3) switches to scientific notation: 10^min(8, finfo(dtype).precision). */
const EXP_CUTOFF: Partial<Record<DType, number>> = { float16: 1e3, float32: 1e6, float64: 1e8 };

/** NumPy's FloatingFormat (floatmode 'maxprec', precision 8): one width and notation for all shown elements; `plus`: sign='+'. */
function floatFormatter(shown: number[], dtype: DType, plus = false): (x: number) => string {
  const sg = (s: string): string => (plus && !s.startsWith("-") ? "+" + s : s);
  const finite = shown.filter(Number.isFinite);
  const nonZero = finite.filter((v) => v !== 0).map(Math.abs);
  let sci = false;
  if (nonZero.length > 0) {
    let max = nonZero[0],
      min = nonZero[0];
    for (const v of nonZero) {
      if (v > max) max = v;
      if (v < min) min = v;
    }
    const cutoff = EXP_CUTOFF[dtype] ?? 1e8;
    // NumPy compares in the dtype (the Python float 1e-4 is weak), so a float32 1e-4 is not below 1e-4
    const cast = castTo(dtype);
    sci = max >= cutoff || min < cast(1e-4) || cast(max / min) > 1000;
  }
  let padLeft = 0,
    padRight = 0,
    precision = 0,
    expWidth = 2;
  if (sci) {
    for (const v of finite) {
      const p = scientificDigits(v, dtype, PRECISION, 0);
      // the sizing pass trims trailing zeros (trim='.'), so count the significant fraction digits only
      precision = Math.max(precision, p.frac.replace(/0+$/, "").length);
      padLeft = Math.max(padLeft, sg(p.int).length);
      expWidth = Math.max(expWidth, String(Math.abs(p.exp)).length);
    }
    padRight = expWidth + 2 + precision;
  } else {
    for (const v of finite) {
      const p = positionalDigits(v, dtype, PRECISION);
      padLeft = Math.max(padLeft, sg(p.int).length);
      padRight = Math.max(padRight, p.frac.length);
    }
  }
  if (finite.length < shown.length) {
    // nan and inf are right-aligned in the full width, which may have to grow for them
    const negInf = plus || shown.some((v) => v === -Infinity) ? 1 : 0;
    padLeft = Math.max(padLeft, 3 + negInf - (padRight + 1));
  }
  return (x) => {
    if (!Number.isFinite(x)) {
      const s = sg(Number.isNaN(x) ? "nan" : x < 0 ? "-inf" : "inf");
      return s.padStart(padLeft + padRight + 1, " ");
    }
    if (sci) {
      const p = scientificDigits(x, dtype, precision, precision);
      return `${sg(p.int).padStart(padLeft, " ")}.${p.frac}${exponentString(p.exp, expWidth)}`;
    }
    const p = positionalDigits(x, dtype, PRECISION);
    return `${sg(p.int).padStart(padLeft, " ")}.${p.frac.padEnd(padRight, " ")}`;
  };
}

/** NumPy's IntegerFormat: right-aligned to the wider of the largest and smallest shown value. */
function intFormatter(shown: (number | bigint)[]): (x: Element) => string {
  let max = shown[0],
    min = shown[0];
  for (const v of shown) {
    if (v > max) max = v;
    if (v < min) min = v;
  }
  const width = Math.max(String(max).length, String(min).length);
  return (x) => String(x).padStart(width, " ");
}

function formatterFor(dtype: DType, shown: Element[], rank: number): (x: Element) => string {
  // " True" keeps columns aligned with "False", except for a lone 0-d value
  if (dtype === "bool") return (x) => (x ? (rank === 0 ? "True" : " True") : "False");
  // ml_dtypes' bfloat16 is not a NumPy floating type: each element is its own repr, unpadded
  if (dtype === "bfloat16") return (x) => formatG(x as number);
  if (dtype === "complex64" || dtype === "complex128") {
    // NumPy's ComplexFloatingFormat: the real parts' format, then the imaginary parts' with sign='+', then "j"
    const part: DType = dtype === "complex64" ? "float32" : "float64";
    const cs = shown as Complex[];
    const fr = floatFormatter(
        cs.map((c) => c.re),
        part,
      ),
      fi = floatFormatter(
        cs.map((c) => c.im),
        part,
        true,
      );
    return (x) => {
      const c = x as Complex;
      const i = fi(c.im),
        sp = i.trimEnd().length;
      return fr(c.re) + i.slice(0, sp) + "j" + i.slice(sp);
    };
  }
  if (dtype === "float16" || dtype === "float32" || dtype === "float64") {
    const f = floatFormatter(shown as number[], dtype);
    return (x) => f(x as number);
  }
  return intFormatter(shown as (number | bigint)[]);
}

/** NumPy's _extendLine: wrap before `word` when it would pass the width, unless the line holds only its indent. */
function extendLine(acc: { s: string; line: string }, word: string, width: number, indent: string): void {
  if (acc.line.length + word.length > width && acc.line.length > indent.length) {
    acc.s += acc.line.trimEnd() + "\n";
    acc.line = indent;
  }
  acc.line += word;
}

/** The array2string arguments that change with the caller: repr uses (', ', 'Array(', ','), str uses (' ', '', ''). */
export interface Array2StringOptions {
  separator: string;
  prefix: string;
  suffix: string;
}

/** np.array2string(value, separator, prefix, suffix) with NumPy's default print options. */
export function array2string(
  shape: readonly number[],
  dtype: DType,
  get: (i: number) => Element,
  { separator, prefix, suffix }: Array2StringOptions = { separator: ", ", prefix: PREFIX, suffix: "," },
): string {
  const rank = shape.length;
  const size = shape.reduce((a, b) => a * b, 1);
  if (size === 0) return "[]"; // NumPy prints every empty array this way, whatever its shape
  const summarize = size > THRESHOLD;
  const strides: number[] = new globalThis.Array(rank).fill(1);
  for (let k = rank - 2; k >= 0; k--) strides[k] = strides[k + 1] * shape[k + 1];
  // indices along an axis that are printed: all of them, or the edge items around "..."
  const cut = (n: number): boolean => summarize && n > 2 * EDGE_ITEMS;
  const shownIdx = (n: number): number[] =>
    cut(n) ? [0, 1, 2, n - 3, n - 2, n - 1] : globalThis.Array.from({ length: n }, (_, i) => i);
  const shown: Element[] = [];
  const collect = (axis: number, offset: number): void => {
    if (axis === rank) {
      shown.push(get(offset));
      return;
    }
    for (const i of shownIdx(shape[axis])) collect(axis + 1, offset + i * strides[axis]);
  };
  collect(0, 0);
  const fmt = formatterFor(dtype, shown, rank);
  const width = LINE_WIDTH - suffix.length; // the suffix is kept free on every line

  const rec = (axis: number, offset: number, indent: string, curWidth: number): string => {
    if (axis === rank) return fmt(get(offset));
    const n = shape[axis];
    const idx = shownIdx(n);
    const nextIndent = indent + " ";
    const nextWidth = curWidth - 1; // room for the closing "]"
    const item = (k: number): string => rec(axis + 1, offset + idx[k] * strides[axis], nextIndent, nextWidth);
    const half = cut(n) ? EDGE_ITEMS : -1;
    let s: string;
    if (axis === rank - 1) {
      const elemWidth = curWidth - Math.max(separator.trimEnd().length, 1); // room for the "," or "]" after each element
      const acc = { s: "", line: indent };
      for (let k = 0; k < idx.length; k++) {
        if (k === half) {
          extendLine(acc, "...", elemWidth, indent);
          acc.line += separator;
        }
        extendLine(acc, item(k), elemWidth, indent);
        if (k < idx.length - 1) acc.line += separator;
      }
      s = acc.s + acc.line;
    } else {
      // rows of a matrix end with ",\n"; blocks of higher rank get one blank line per extra dimension
      const lineSep = separator.trimEnd() + "\n".repeat(rank - axis - 1);
      const parts: string[] = [];
      for (let k = 0; k < idx.length; k++) {
        if (k === half) parts.push(indent + "...");
        parts.push(indent + item(k));
      }
      s = parts.join(lineSep);
    }
    return "[" + s.slice(indent.length) + "]";
  };
  return rec(0, 0, " ".repeat(prefix.length + 1), width);
}

/** jax.Array.__repr__: `Array(<array2string>, dtype=float32)`, weak types marked, empty arrays by shape. */
export function formatArray(
  shape: readonly number[],
  dtype: DType,
  weak: boolean,
  get: (i: number) => Element,
  size: number,
): string {
  const dtypeStr = `dtype=${dtype}${weak ? ", weak_type=True" : ""})`;
  const body =
    size === 0 ? `[], shape=(${shape.join(", ")}${shape.length === 1 ? "," : ""})` : array2string(shape, dtype, get);
  // JAX measures the last line as its length + 2 and, when dtype= would pass the width, pads with len('Array(') spaces
  const lastLine = body.length - body.lastIndexOf("\n") + 1;
  const sep = lastLine + dtypeStr.length + 1 > LINE_WIDTH ? " ".repeat(PREFIX.length) : " ";
  return `${PREFIX}${body},${sep}${dtypeStr}`;
}
