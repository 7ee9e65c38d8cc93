/** @file Pytrees: JS arrays, plain objects, null/undefined and registered classes, flattened to leaves. */

export interface NodeHandler<T = unknown> {
  flatten(x: T): [children: unknown[], auxData: unknown];
  unflatten(aux: unknown, children: unknown[]): T;
}
type Ctor = abstract new (...args: never[]) => unknown;
const registry = new Map<Ctor, NodeHandler>();

/** Registers a class as a pytree node (tree.registerNode / register_pytree_node). */
export function registerNode<T>(cls: abstract new (...args: never[]) => T, handler: NodeHandler<T>): void {
  registry.set(cls as Ctor, handler as NodeHandler);
}

export class TreeDef {
  constructor(
    readonly kind: "leaf" | "array" | "object" | "null" | "undefined" | "custom",
    readonly children: TreeDef[] = [],
    readonly aux: unknown = null,
    readonly numLeaves = 1,
  ) {}
  equals(o: TreeDef): boolean {
    if (this.kind !== o.kind || this.children.length !== o.children.length) return false;
    if (this.kind === "object" && JSON.stringify(this.aux) !== JSON.stringify(o.aux)) return false;
    if (this.kind === "custom") {
      const [c1, a1] = this.aux as [Ctor, unknown];
      const [c2, a2] = o.aux as [Ctor, unknown];
      if (c1 !== c2 || JSON.stringify(a1) !== JSON.stringify(a2)) return false;
    }
    return this.children.every((c, i) => c.equals(o.children[i]));
  }
  toString(): string {
    switch (this.kind) {
      case "leaf":
        return "*";
      case "null":
        return "None";
      case "undefined":
        return "undefined";
      case "array":
        return `[${this.children.map(String).join(", ")}]`;
      case "object":
        return `{${(this.aux as string[]).map((k, i) => `${k}: ${this.children[i]}`).join(", ")}}`;
      case "custom":
        return `${((this.aux as [Ctor, unknown])[0] as { name: string }).name}(${this.children.map(String).join(", ")})`;
    }
  }
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (x === null || typeof x !== "object") return false;
  const p = Object.getPrototypeOf(x);
  return p === Object.prototype || p === null;
}

function handlerFor(x: unknown): NodeHandler | undefined {
  if (x === null || typeof x !== "object") return undefined;
  for (let p = Object.getPrototypeOf(x); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    const h = registry.get(p.constructor as Ctor);
    if (h) return h;
  }
  return undefined;
}

export function flatten(x: unknown, isLeaf?: (x: unknown) => boolean): [unknown[], TreeDef] {
  const leaves: unknown[] = [];
  const rec = (v: unknown): TreeDef => {
    if (isLeaf?.(v)) {
      leaves.push(v);
      return new TreeDef("leaf");
    }
    if (v === null) return new TreeDef("null", [], null, 0);
    if (v === undefined) return new TreeDef("undefined", [], null, 0);
    if (globalThis.Array.isArray(v)) {
      const ch = v.map(rec);
      return new TreeDef(
        "array",
        ch,
        null,
        ch.reduce((a, c) => a + c.numLeaves, 0),
      );
    }
    const h = handlerFor(v);
    if (h) {
      const [children, aux] = h.flatten(v);
      const ch = children.map(rec);
      return new TreeDef(
        "custom",
        ch,
        [(v as object).constructor, aux],
        ch.reduce((a, c) => a + c.numLeaves, 0),
      );
    }
    if (isPlainObject(v)) {
      const keys = Object.keys(v).sort();
      const ch = keys.map((k) => rec(v[k]));
      return new TreeDef(
        "object",
        ch,
        keys,
        ch.reduce((a, c) => a + c.numLeaves, 0),
      );
    }
    leaves.push(v);
    return new TreeDef("leaf");
  };
  const def = rec(x);
  return [leaves, def];
}

export function unflatten(def: TreeDef, leaves: readonly unknown[]): unknown {
  if (leaves.length !== def.numLeaves) {
    throw new Error(
      `tree.unflatten: tree structure ${def} has ${def.numLeaves} leaves but ${leaves.length} were given`,
    );
  }
  let k = 0;
  const rec = (d: TreeDef): unknown => {
    switch (d.kind) {
      case "leaf":
        return leaves[k++];
      case "null":
        return null;
      case "undefined":
        return undefined;
      case "array":
        return d.children.map(rec);
      case "object": {
        const o: Record<string, unknown> = {};
        (d.aux as string[]).forEach((key, i) => {
          o[key] = rec(d.children[i]);
        });
        return o;
      }
      case "custom": {
        const [cls, aux] = d.aux as [Ctor, unknown];
        return registry.get(cls)!.unflatten(aux, d.children.map(rec));
      }
    }
  };
  return rec(def);
}

export const leaves = (x: unknown, isLeaf?: (x: unknown) => boolean): unknown[] => flatten(x, isLeaf)[0];
export const structure = (x: unknown, isLeaf?: (x: unknown) => boolean): TreeDef => flatten(x, isLeaf)[1];

/** tree.map over one or more trees with the same structure as the first. */
export function map(f: (...xs: never[]) => unknown, tree: unknown, ...rest: unknown[]): unknown {
  const [ls, def] = flatten(tree);
  const others = rest.map((r, i) => {
    const [l2, d2] = flatten(r);
    if (!d2.equals(def)) throw new Error(`tree.map: tree ${i + 1} has structure ${d2}, expected ${def}`);
    return l2;
  });
  const fn = f as (...xs: unknown[]) => unknown;
  return unflatten(
    def,
    ls.map((l, i) => fn(l, ...others.map((o) => o[i]))),
  );
}

/** The path of every leaf of `def` as JS accessor text after `root` (e.g. "carry[1].w"), in leaf order. */
export function leafPaths(def: TreeDef, root = ""): string[] {
  const out: string[] = [];
  const rec = (d: TreeDef, p: string): void => {
    switch (d.kind) {
      case "leaf":
        out.push(p);
        return;
      case "array":
      case "custom":
        d.children.forEach((c, i) => rec(c, `${p}[${i}]`));
        return;
      case "object":
        (d.aux as string[]).forEach((k, i) =>
          rec(d.children[i], /^[A-Za-z_$][\w$]*$/.test(k) ? `${p}.${k}` : `${p}[${JSON.stringify(k)}]`),
        );
        return;
      default:
        return;
    }
  };
  rec(def, root);
  return out;
}
