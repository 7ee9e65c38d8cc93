/** @file Argument validation shared by public wrappers: unknown option keys and extra positional arguments raise naming the function. */

/** A plain options object: an object literal (or null-prototype object), not an Array, JS array or typed array. */
export function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (x === null || typeof x !== "object" || globalThis.Array.isArray(x) || ArrayBuffer.isView(x)) return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/**
 * Throws a TypeError naming fn when opts (an options object, or undefined/null for none) has a key outside allowed.
 * forms, when given, describes the accepted call forms (e.g. "vmap(f, inAxes?, outAxes?) or vmap(f, { inAxes, outAxes, axisName, axisSize, spmdAxisName })").
 */
export function checkOptions(fn: string, opts: unknown, allowed: readonly string[], forms?: string): void {
  if (opts === undefined || opts === null) return;
  if (!isPlainObject(opts)) {
    throw new TypeError(
      `${fn}: expected an options object { ${allowed.join(", ")} }, got ${describeValue(opts)}${forms ? `; accepted forms: ${forms}` : ""}`,
    );
  }
  for (const k of Object.keys(opts)) {
    if (!allowed.includes(k)) {
      const near =
        allowed.find((a) => a.toLowerCase() === k.toLowerCase()) ?? allowed.find((a) => editDistance(a, k) <= 2);
      throw new TypeError(
        `${fn}: unknown option "${k}"${near ? ` (did you mean "${near}"?)` : ""}; accepted options: ${allowed.join(", ") || "(none)"}${forms ? `; accepted forms: ${forms}` : ""}`,
      );
    }
  }
}

/** Levenshtein distance (for "did you mean" hints on misspelled option names). */
function editDistance(a: string, b: string): number {
  let prev = [...globalThis.Array(b.length + 1).keys()];
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/**
 * Throws a TypeError naming fn when more than max arguments were passed (trailing undefineds ignored):
 * a fixed-arity function must not silently drop an extra positional argument or an options object.
 */
export function checkArity(fn: string, args: ArrayLike<unknown>, max: number, forms: string): void {
  let n = args.length;
  while (n > max && args[n - 1] === undefined) n--;
  if (n <= max) return;
  const extra = args[max];
  const what = isPlainObject(extra)
    ? `an options object { ${Object.keys(extra).join(", ")} } it does not take`
    : `${n - max} extra argument(s)`;
  throw new TypeError(`${fn}: got ${what}; accepted form: ${forms}`);
}

/** A short description of a JS value for error messages. */
function describeValue(x: unknown): string {
  if (x === null) return "null";
  if (globalThis.Array.isArray(x)) return `a JS array of length ${x.length}`;
  if (typeof x === "object") return `an object (${(x as object).constructor?.name ?? "null prototype"})`;
  if (typeof x === "function") return "a function";
  return `${typeof x} ${String(x)}`;
}

const WRAPPED = Symbol("jaxts.wrapped");
/** Wraps f so a public call with more than max arguments raises (checkArity) instead of silently dropping them. */
export function fixedArity<A extends unknown[], R>(
  fn: string,
  max: number,
  f: (...a: A) => R,
  forms: string,
): (...a: A) => R {
  const w = (...args: A): R => {
    if (args.length > max) checkArity(fn, args, max, forms);
    return f(...args);
  };
  Object.defineProperty(w, WRAPPED, { value: f });
  Object.defineProperty(w, "name", { value: f.name });
  return w;
}
/** The function a fixedArity wrapper calls (f itself otherwise), so identity checks like `computation === ops.max` see through the wrapper. */
export function unwrap<F>(f: F): F {
  return (typeof f === "function" && (f as unknown as Record<symbol, F>)[WRAPPED]) || f;
}
