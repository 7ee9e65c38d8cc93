/** @file Canonical cache keys for static arguments and primitive params: equal keys exactly when the values are equal as JAX hashes them. */
import { Array } from "./array.js";

/** Thrown for a static value that cannot be compared by equality (JAX: "Non-hashable static arguments are not supported"). */
export class UnhashableStaticError extends TypeError {}

const objIds = new WeakMap<object, number>();
const symIds = new Map<symbol, number>();
let nextId = 1;
/** A per-object identity number; the WeakMap lets the object be collected (the number is never reused). */
function identity(o: object): number {
  let id = objIds.get(o);
  if (id === undefined) {
    id = nextId++;
    objIds.set(o, id);
  }
  return id;
}

function isPlainObject(x: object): boolean {
  const p = Object.getPrototypeOf(x);
  return p === Object.prototype || p === null;
}

/** Why `v` has no value equality, or null when it is identity-hashable (functions, class instances). */
function unhashableReason(v: object): string | null {
  if (v instanceof Array) return `a jaxts Array ${v.aval.str()}`;
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name} (a mutable buffer)`;
  if (v instanceof ArrayBuffer || (typeof SharedArrayBuffer !== "undefined" && v instanceof SharedArrayBuffer))
    return `an ${v.constructor.name} (a mutable buffer)`;
  if (v instanceof Map) return "a Map (mutable, like a Python dict)";
  if (v instanceof Set) return "a Set (mutable, like a Python set)";
  if (v instanceof WeakMap || v instanceof WeakSet) return `a ${v.constructor.name}`;
  return null;
}

/**
 * The canonical key of a static value. Numbers compare by `Object.is` (NaN equals NaN; -0, +0, Infinity and
 * -Infinity are all distinct, since a trace specialized to one can compute a different result for the other);
 * strings, booleans, bigints, null and undefined by value and type (true is not 1, 1n is not 1); plain JS arrays
 * and plain objects structurally (object keys in sorted order); functions, symbols and class instances by identity.
 * jaxts Arrays, typed arrays, ArrayBuffers, Maps and Sets have no value equality: `unhashable(path, why)` decides
 * (throw, or return a fallback key). `path` names the offending part, e.g. "[1].act".
 */
export function hashKey(
  v: unknown,
  unhashable: (path: string, why: string, value: object) => string,
  path = "",
  seen: object[] = [],
): string {
  switch (typeof v) {
    case "number":
      return Object.is(v, -0) ? "-0" : String(v);
    case "string":
      return JSON.stringify(v);
    case "boolean":
      return v ? "T" : "F";
    case "bigint":
      return `${v}n`;
    case "undefined":
      return "u";
    case "symbol": {
      let id = symIds.get(v);
      if (id === undefined) {
        id = nextId++;
        symIds.set(v, id);
      }
      return `$${id}`;
    }
    case "function":
      return `#${identity(v)}`;
    case "object": {
      if (v === null) return "N";
      const why = unhashableReason(v);
      if (why !== null) return unhashable(path, why, v);
      const isArr = globalThis.Array.isArray(v);
      if (!isArr && !isPlainObject(v)) return `#${identity(v)}`;
      if (seen.includes(v)) return unhashable(path, "a cyclic structure", v);
      seen.push(v);
      let s: string;
      if (isArr) {
        s = "[";
        for (let i = 0; i < v.length; i++) s += hashKey(v[i], unhashable, `${path}[${i}]`, seen) + ",";
        s += "]";
      } else {
        const o = v as Record<string, unknown>;
        s = "{";
        for (const k of Object.keys(o).sort())
          s += JSON.stringify(k) + ":" + hashKey(o[k], unhashable, `${path}.${k}`, seen) + ",";
        s += "}";
      }
      seen.pop();
      return s;
    }
  }
}

/**
 * The key of a static argument of a transformation; throws UnhashableStaticError naming `fn`, the argument (`what`,
 * e.g. "static argument 1") and the offending part when the value has no value equality.
 */
export function staticArgKey(fn: string, what: string, v: unknown): string {
  return hashKey(v, (path, why) => {
    const where = path ? `${what} (at ${path.startsWith(".") ? path.slice(1) : path})` : what;
    throw new UnhashableStaticError(
      `${fn}: non-hashable static arguments are not supported: ${where} is ${why}. Static arguments must be values with ` +
        `equality (numbers, strings, booleans, null/undefined, bigints, plain arrays/objects of those) or are compared by ` +
        `identity (functions, class instances); pass arrays as regular (traced) arguments, or convert them to plain JS arrays`,
    );
  });
}

/** The key of primitive params (never throws): values without value equality are keyed by identity. */
export function paramsKey(v: unknown): string {
  return hashKey(v, (_path, _why, o) => `#${identity(o)}`);
}
