/**
 * @file jax.debug.print and jax.debug.callback: stageable host callbacks (the debug_callback primitive) that run eagerly
 * and inside jit, vmap, grad, scan and shardMap, in program order; print formats like Python's str.format.
 */
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { isFloat } from "../core/dtype.js";
import { array2string } from "../core/format.js";
import { bind } from "../core/trace.js";
import { flatten, unflatten } from "../core/tree.js";
import { type CallbackContext, currentCallbackContext, debugCallbackP } from "../primitives/debug-callback.js";

export type { CallbackContext };

let sink: ((line: string) => void) | null = null;
/** Routes debug.print lines to `s` (null: back to stdout). Returns the previous sink. */
export function setPrintSink(s: ((line: string) => void) | null): ((line: string) => void) | null {
  const prev = sink;
  sink = s;
  return prev;
}

/** Binds the Array leaves of `values`; at run time `fn` receives the tree rebuilt with concrete arrays. */
function stage(name: string, values: unknown[], fn: (values: unknown[], ctx: CallbackContext) => void): void {
  const [leaves, def] = flatten(values);
  const isArr = leaves.map((l) => l instanceof Array);
  const arrays = leaves.filter((l): l is Array => l instanceof Array);
  bind(debugCallbackP, arrays, {
    name,
    axis_indices: {},
    batch_indices: [],
    callback: (vals: ArrayImpl[], ctx: CallbackContext) => {
      let k = 0;
      fn(
        unflatten(
          def,
          leaves.map((l, i) => (isArr[i] ? vals[k++] : l)),
        ) as unknown[],
        ctx,
      );
    },
  });
}

/**
 * jax.debug.callback(fn, ...values): calls fn with the concrete values (same tree structure; arrays become concrete
 * arrays) when the program reaches this point, eagerly or staged. Under vmap fn runs once per batch element; inside a
 * shardMap once per device; debug.callbackContext() inside fn gives the axis indices.
 */
export function callback<T extends unknown[]>(fn: (...values: T) => void, ...values: T): void {
  if (typeof fn !== "function")
    throw new TypeError(`debug.callback: expected a function as the first argument, got ${typeof fn}`);
  stage(`callback ${fn.name || "fn"}`, values, (vals) => fn(...(vals as T)));
}

/** The axis indices of the debug callback running now (inside a shardMap or named vmap), or null outside callbacks. */
export function callbackContext(): CallbackContext | null {
  return currentCallbackContext();
}

/**
 * jax.debug.print(fmt, ...args): formats like Python's str.format when the program reaches this point: `{}` and
 * `{0}` take positional values, `{name}` a field of the last argument when it is a plain object (Python's kwargs),
 * `{x:.3f}` formats a scalar, `{{`/`}}` are braces; `{axis_index[x]}` is this device's index along mesh axis x and
 * `{device}` its device id (on the device runtime; "?" on the emulation).
 */
export function print(fmt: string, ...values: unknown[]): void {
  if (typeof fmt !== "string") throw new TypeError(`debug.print: the format must be a string, got ${typeof fmt}`);
  const fields = parseFormat(fmt);
  const named = fields.some((f) => typeof f !== "string" && f.key !== null && !/^\d+$/.test(f.key));
  const last = values[values.length - 1];
  const kwargs =
    named && last !== null && typeof last === "object" && !(last instanceof Array) && !globalThis.Array.isArray(last)
      ? (last as Record<string, unknown>)
      : null;
  const args = kwargs ? values.slice(0, -1) : values;
  // checked while tracing, so a bad format fails where print is called
  render(fields, args, kwargs, { axisIndices: {}, batchIndices: [] }, true);
  stage(`print ${JSON.stringify(fmt)}`, [args, kwargs ?? {}], (vals, ctx) => {
    const line = render(fields, vals[0] as unknown[], kwargs ? (vals[1] as Record<string, unknown>) : null, ctx, false);
    if (sink) sink(line);
    else process.stdout.write(line + "\n");
  });
}

type Field = string | { key: string | null; index: string | null; spec: string };

function parseFormat(fmt: string): Field[] {
  const out: Field[] = [];
  let lit = "",
    i = 0;
  while (i < fmt.length) {
    const c = fmt[i];
    if (c === "{" && fmt[i + 1] === "{") {
      lit += "{";
      i += 2;
      continue;
    }
    if (c === "}" && fmt[i + 1] === "}") {
      lit += "}";
      i += 2;
      continue;
    }
    if (c === "}") throw new Error(`debug.print: single '}' encountered in format string ${JSON.stringify(fmt)}`);
    if (c !== "{") {
      lit += c;
      i++;
      continue;
    }
    const end = fmt.indexOf("}", i);
    if (end < 0) throw new Error(`debug.print: single '{' encountered in format string ${JSON.stringify(fmt)}`);
    const body = fmt.slice(i + 1, end);
    const m = /^([A-Za-z_][A-Za-z0-9_]*|\d+)?(?:\[([^\]]+)\])?(?::(.*))?$/.exec(body);
    if (!m) throw new Error(`debug.print: cannot parse the field {${body}} of format string ${JSON.stringify(fmt)}`);
    if (lit) {
      out.push(lit);
      lit = "";
    }
    out.push({ key: m[1] ?? null, index: m[2] ?? null, spec: m[3] ?? "" });
    i = end + 1;
  }
  if (lit) out.push(lit);
  return out;
}

function render(
  fields: Field[],
  args: readonly unknown[],
  kwargs: Record<string, unknown> | null,
  ctx: CallbackContext,
  checkOnly: boolean,
): string {
  let auto = 0,
    manual = false,
    autoUsed = false;
  let s = "";
  for (const f of fields) {
    if (typeof f === "string") {
      s += f;
      continue;
    }
    let v: unknown;
    if (f.key === null || /^\d+$/.test(f.key)) {
      if (f.key === null) autoUsed = true;
      else manual = true;
      if (autoUsed && manual)
        throw new Error("debug.print: cannot switch from automatic field numbering to manual field specification");
      const k = f.key === null ? auto++ : Number(f.key);
      if (k >= args.length)
        throw new Error(`debug.print: the format needs positional value ${k} but ${args.length} value(s) were given`);
      v = args[k];
    } else if (kwargs && Object.hasOwn(kwargs, f.key)) v = kwargs[f.key];
    else if (f.key === "axis_index") v = ctx.axisIndices;
    else if (f.key === "device") v = checkOnly ? "" : (ctx.device ?? "?");
    else
      throw new Error(
        `debug.print: the format names {${f.key}}, which is not a field of the last argument (pass named values as a final plain object)`,
      );
    if (f.index !== null) {
      if (checkOnly && f.key === "axis_index") continue;
      const o = v as Record<string, unknown> | null;
      if (o === null || typeof o !== "object" || !(f.index in o))
        throw new Error(
          `debug.print: {${f.key}[${f.index}]}: no entry ${f.index} (${f.key === "axis_index" ? "not inside a shardMap or named vmap over that axis" : "not a field of the value"})`,
        );
      v = o[f.index];
    }
    if (!checkOnly) s += formatValue(v, f.spec);
  }
  return s;
}

/** Python's str() of the value NumPy would hand to str.format: arrays as np.array2string, scalars as Python scalars. */
function formatValue(v: unknown, spec: string): string {
  if (spec) {
    const x = v instanceof ArrayImpl ? (v.size === 1 && v.ndim === 0 ? v.elementAt(0) : null) : v;
    if (x === null || (typeof x !== "number" && typeof x !== "bigint" && typeof x !== "boolean"))
      throw new Error(`debug.print: format spec ':${spec}' applies to scalars only`);
    return formatSpec(Number(x), spec);
  }
  if (v instanceof ArrayImpl) {
    if (v.ndim === 0) {
      const e = v.elementAt(0);
      if (typeof e === "boolean") return e ? "True" : "False";
      if (isFloat(v.dtype) && typeof e === "number" && Number.isFinite(e) && Number.isInteger(e)) return `${e}.0`;
    }
    return array2string(v.shape, v.dtype, (i) => v.elementAt(i), { separator: " ", prefix: "", suffix: "" });
  }
  if (globalThis.Array.isArray(v)) return `[${v.map((x) => formatValue(x, "")).join(", ")}]`;
  if (v !== null && typeof v === "object")
    return `{${Object.entries(v)
      .map(([k, x]) => `'${k}': ${formatValue(x, "")}`)
      .join(", ")}}`;
  if (typeof v === "boolean") return v ? "True" : "False";
  return String(v);
}

/** Python format-spec mini language for numbers: [width][,][.precision][f|e|g|d|%]. */
function formatSpec(x: number, spec: string): string {
  const m = /^(\d+)?(\.(\d+))?([fFeEgGd%])?$/.exec(spec);
  if (!m)
    throw new Error(`debug.print: unsupported format spec ':${spec}' (supported: [width][.precision][f|e|g|d|%])`);
  const p = m[3] === undefined ? undefined : Number(m[3]);
  let s: string;
  switch (m[4]) {
    case "f":
    case "F":
      s = x.toFixed(p ?? 6);
      break;
    case "e":
    case "E":
      s = x.toExponential(p ?? 6).replace(/e([+-])(\d)$/, "e$10$2");
      break;
    case "g":
    case "G":
      s = String(Number(x.toPrecision(p || 6)));
      break;
    case "d":
      s = Math.trunc(x).toString();
      break;
    case "%":
      s = `${(x * 100).toFixed(p ?? 6)}%`;
      break;
    default:
      s = p === undefined ? String(x) : String(Number(x.toPrecision(p || 1)));
  }
  return m[1] ? s.padStart(Number(m[1])) : s;
}
