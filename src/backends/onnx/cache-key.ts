/** @file keyOf: a cheap, exact cache key for primitive params (objects other than plain ones keyed by identity). */
const objIds = new WeakMap<object, number>();
let nextObjId = 1;
/** A cheap, exact cache key for primitive params. */
export function keyOf(v: unknown): string {
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
    case "function":
    case "object": {
      if (v === null) return "N";
      if (Array.isArray(v)) {
        let s = "[";
        for (const x of v) s += keyOf(x) + ",";
        return s + "]";
      }
      if (Object.getPrototypeOf(v) === Object.prototype) {
        let s = "{";
        for (const k in v as Record<string, unknown>) s += k + ":" + keyOf((v as Record<string, unknown>)[k]) + ",";
        return s + "}";
      }
      let id = objIds.get(v as object);
      if (id === undefined) {
        id = nextObjId++;
        objIds.set(v as object, id);
      }
      return `#${id}`;
    }
    default:
      return "?";
  }
}
