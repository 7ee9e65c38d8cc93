/** @file Decimal digits of float16/float32/float64 values as NumPy's Dragon4 prints them (shortest round-trip, exact rounding). */
import { type DType } from "./dtype.js";
import { fromFloat16Bits, toFloat16Bits } from "./float16.js";

/** A non-negative decimal d0.d1d2... × 10^exp; `digits` has no trailing zeros ("0" for zero). */
export interface Decimal {
  readonly digits: string;
  readonly exp: number;
}

const ZERO: Decimal = { digits: "0", exp: 0 };

/** The decimal int(s) × 10^e10, normalized (s has no leading zeros). */
function fromInteger(s: string, e10: number): Decimal {
  const digits = s.replace(/0+$/, "");
  return digits === "" ? ZERO : { digits, exp: s.length - 1 + e10 };
}

/** "d.ddde±x" (JS toExponential output) as a Decimal. */
function parseExponential(s: string): Decimal {
  const [m, e] = s.split("e");
  return fromInteger(m.replace(".", ""), Number(e) - (m.length > 1 ? m.length - 2 : 0));
}

const view = new DataView(new ArrayBuffer(8));

/** Every digit of a finite |x| (a double is m × 2^e, so m × 5^-e × 10^e is exact when e < 0). */
export function exactDecimal(x: number): Decimal {
  const a = Math.abs(x);
  if (a === 0) return ZERO;
  view.setFloat64(0, a);
  const hi = view.getUint32(0);
  const biased = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(view.getUint32(4));
  let e2 = -1074;
  if (biased !== 0) {
    mant |= 1n << 52n;
    e2 = biased - 1075;
  }
  if (e2 >= 0) return fromInteger((mant << BigInt(e2)).toString(), 0);
  return fromInteger((mant * 5n ** BigInt(-e2)).toString(), e2);
}

/** Keeps the first `keep` digits of an exact decimal, rounding half to even on the dropped tail. */
export function roundKeep(d: Decimal, keep: number): Decimal {
  if (d.digits === "0" || d.digits.length <= keep) return d;
  if (keep < 0) return ZERO;
  const head = d.digits.slice(0, keep);
  const rest = d.digits.slice(keep);
  // the tail has no trailing zeros, so it is exactly one half only when it is "5"
  const up = rest[0] !== "5" ? rest[0] > "5" : rest.length > 1 || (keep > 0 && Number(head[keep - 1]) % 2 === 1);
  const e10 = d.exp - keep + 1;
  if (!up) return keep === 0 ? ZERO : fromInteger(head, e10);
  return fromInteger((BigInt(head === "" ? "0" : head) + 1n).toString(), e10);
}

/** Rounds to `f` digits after the decimal point (half to even, on the exact value). */
export const roundFraction = (d: Decimal, f: number): Decimal => roundKeep(d, d.exp + 1 + f);

// JS's toExponential/toFixed round the exact value too, but ties go up: when the next digit could be a final 5,
// the BigInt path decides instead.

/** |x| rounded half-to-even to n >= 1 significant digits. */
export function roundSignificant(x: number, n: number): Decimal {
  const a = Math.abs(x);
  if (a === 0) return ZERO;
  if (n < 100 && !a.toExponential(n).split("e")[0].endsWith("5")) return parseExponential(a.toExponential(n - 1));
  return roundKeep(exactDecimal(a), n);
}

/** |x| rounded half-to-even to f digits after the point. */
export function roundFractionDigits(x: number, f: number): Decimal {
  const a = Math.abs(x);
  if (a === 0) return ZERO;
  if (a < 1e21 && f < 100 && !a.toFixed(f + 1).endsWith("5")) {
    const digits = a.toFixed(f).replace(".", "").replace(/^0+/, "");
    return digits === "" ? ZERO : fromInteger(digits, -f);
  }
  return roundFraction(exactDecimal(a), f);
}

/** Digits after the point in positional notation. */
export const fractionLength = (d: Decimal): number => Math.max(0, d.digits.length - 1 - d.exp);

/** Rounding of a JS number to the dtype's precision. */
export function castTo(dtype: DType): (v: number) => number {
  if (dtype === "float32") return Math.fround;
  if (dtype === "float16") return (v) => fromFloat16Bits(toFloat16Bits(v));
  return (v) => v;
}

/** The JS number a decimal stands for (correctly rounded to a double). */
const toNumber = (d: Decimal): number => Number(`${d.digits}e${d.exp - d.digits.length + 1}`);

/**
 * The shortest decimal that reads back as |x| in `dtype` (Dragon4's unique mode): with p digits, the nearest
 * (ties to even) or, at a power of two where the gap below is half the gap above, the other neighbour.
 */
export function shortestDecimal(x: number, dtype: DType): Decimal {
  const a = Math.abs(x);
  if (a === 0) return ZERO;
  if (dtype === "float64") return parseExponential(a.toExponential());
  const cast = castTo(dtype);
  // only at a power of two is the gap below smaller than the gap above
  const pow2 = a === 2 ** Math.round(Math.log2(a));
  for (let p = 1; p < 17; p++) {
    const s = a.toExponential(p - 1);
    const v = Number(s);
    if (cast(v) === a) {
      // JS rounded a tie up; Dragon4 takes the even neighbour when that one reads back too
      if (!a.toExponential(p).split("e")[0].endsWith("5")) return parseExponential(s);
      const even = roundKeep(exactDecimal(a), p);
      return cast(toNumber(even)) === a ? even : parseExponential(s);
    }
    if (!pow2) continue;
    const [m, e] = s.split("e");
    const e10 = Number(e) - (p - 1);
    const other = BigInt(m.replace(".", "")) + (v > a ? -1n : 1n);
    if (other > 0n && cast(Number(`${other}e${e10}`)) === a) return fromInteger(other.toString(), e10);
  }
  return exactDecimal(a);
}

/** NumPy's dragon4_positional(unique=True, fractional=True, precision, trim='.') without padding: "-0.125", "3.". */
export function positionalDigits(x: number, dtype: DType, precision: number): { int: string; frac: string } {
  const shortest = shortestDecimal(x, dtype);
  const d = fractionLength(shortest) > precision ? roundFractionDigits(x, precision) : shortest;
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  if (d.exp < 0) return { int: sign + "0", frac: "0".repeat(-d.exp - 1) + (d.digits === "0" ? "" : d.digits) };
  return { int: sign + d.digits.slice(0, d.exp + 1).padEnd(d.exp + 1, "0"), frac: d.digits.slice(d.exp + 1) };
}

/**
 * NumPy's dragon4_scientific(unique=True, precision, min_digits): the shortest mantissa, cut to `precision`
 * digits after the point, or extended with the exact value's digits to `minDigits`. Returns the parts unpadded.
 */
export function scientificDigits(
  x: number,
  dtype: DType,
  precision: number,
  minDigits: number,
): { int: string; frac: string; exp: number } {
  const shortest = shortestDecimal(x, dtype);
  const f = shortest.digits.length - 1;
  const d =
    f > precision ? roundSignificant(x, precision + 1) : f < minDigits ? roundSignificant(x, minDigits + 1) : shortest;
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  return { int: sign + d.digits[0], frac: d.digits.slice(1).padEnd(minDigits, "0"), exp: d.digits === "0" ? 0 : d.exp };
}

/** "e+05", "e-100": the exponent with a sign and at least `width` digits. */
export const exponentString = (e: number, width: number): string =>
  `e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(width, "0")}`;

/** C's "%g" (six significant digits, zeros trimmed): how ml_dtypes prints a bfloat16 element. */
export function formatG(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x < 0 ? "-inf" : "inf";
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  const d = roundSignificant(x, 6);
  if (d.digits === "0") return sign + "0";
  // %g picks positional notation when -4 <= exponent < precision
  if (d.exp < -4 || d.exp >= 6) {
    const frac = d.digits.slice(1);
    return `${sign}${d.digits[0]}${frac ? "." + frac : ""}${exponentString(d.exp, 2)}`;
  }
  if (d.exp < 0) return `${sign}0.${"0".repeat(-d.exp - 1)}${d.digits}`;
  const int = d.digits.slice(0, d.exp + 1).padEnd(d.exp + 1, "0");
  const frac = d.digits.slice(d.exp + 1);
  return sign + int + (frac ? "." + frac : "");
}
