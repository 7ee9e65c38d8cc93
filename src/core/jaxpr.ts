/** @file The Jaxpr IR: variables, literals, equations; JAX-style printing, a type checker and an evaluator. */
import { Array } from "./array.js";
import { ArrayImpl } from "./array-impl.js";
import { ShapedArray } from "./aval.js";
import { type Params, Primitive } from "./primitive.js";
import { abstractEval, bind } from "./trace.js";

let varCount = 0;
export class Var {
  readonly id = varCount++;
  constructor(readonly aval: ShapedArray) {}
}
export class Literal {
  constructor(readonly value: ArrayImpl) {}
  get aval(): ShapedArray {
    return this.value.aval;
  }
}
export type Atom = Var | Literal;

export interface JaxprEqn {
  primitive: Primitive;
  inputs: Atom[];
  params: Params;
  outVars: Var[];
  /** The user's source frame that traced this equation (recorded while debugNans/debugInfs is on). */
  site?: string;
}

export class Jaxpr {
  constructor(
    readonly constvars: Var[],
    readonly invars: Var[],
    readonly outvars: Atom[],
    readonly eqns: JaxprEqn[],
  ) {}
  get inAvals(): ShapedArray[] {
    return this.invars.map((v) => v.aval);
  }
  get outAvals(): ShapedArray[] {
    return this.outvars.map((v) => v.aval);
  }
  toString(): string {
    return printJaxpr(this);
  }
}

/** A jaxpr with its constants bound (consts may be concrete arrays or tracers of an enclosing trace). */
export class ClosedJaxpr {
  constructor(
    readonly jaxpr: Jaxpr,
    readonly consts: Array[],
  ) {
    if (consts.length !== jaxpr.constvars.length)
      throw new Error(`ClosedJaxpr: ${consts.length} consts for ${jaxpr.constvars.length} constvars`);
  }
  get inAvals(): ShapedArray[] {
    return this.jaxpr.inAvals;
  }
  get outAvals(): ShapedArray[] {
    return this.jaxpr.outAvals;
  }
  toString(): string {
    return printJaxpr(this.jaxpr);
  }
}

/** Moves constvars into leading invars (JAX's convert_constvars_jaxpr). */
export function convertConstvars(j: Jaxpr): Jaxpr {
  return new Jaxpr([], [...j.constvars, ...j.invars], j.outvars, j.eqns);
}

// ---------------- printing ----------------
function varName(n: number): string {
  // a..z, ba..bz, ca.. like JAX
  let s = "";
  do {
    s = String.fromCharCode(97 + (n % 26)) + s;
    n = Math.floor(n / 26);
  } while (n > 0);
  return s;
}

function fmtLiteral(l: Literal): string {
  const v = l.value.item();
  let s: string;
  if (typeof v === "boolean") s = v ? "True" : "False";
  else if (typeof v === "bigint") s = String(v);
  else if (l.aval.dtype.startsWith("float") || l.aval.dtype === "bfloat16")
    s = Number.isInteger(v) ? `${v}.0` : String(v);
  else s = String(v);
  return `${s}:${l.aval.str()}`;
}

function fmtParam(v: unknown, names: Map<Var, string>, indent: number): string {
  if (v instanceof ClosedJaxpr || v instanceof Jaxpr) {
    const j = v instanceof ClosedJaxpr ? v.jaxpr : v;
    return printJaxpr(j, indent + 2, names);
  }
  if (v instanceof Primitive) return v.name;
  if (v === null || v === undefined) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "string") return v;
  if (typeof v === "function") return (v as { policyName?: string }).policyName ?? (v.name || "<fn>");
  if (globalThis.Array.isArray(v)) {
    const inner = v.map((x) => fmtParam(x, names, indent));
    return `(${inner.join(", ")}${v.length === 1 ? "," : ""})`;
  }
  if (v instanceof ShapedArray) return v.str();
  if (v instanceof Array) return `Array${v.aval.str()}`;
  if (typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (typeof o.toString === "function" && o.toString !== Object.prototype.toString) return String(o);
    return `{${Object.entries(o)
      .map(([k, x]) => `${k}=${fmtParam(x, names, indent)}`)
      .join(", ")}}`;
  }
  return String(v);
}

/** Names are shared with enclosing jaxprs so nested jaxprs never reuse a name, as in JAX's printer. */
interface NameCtx {
  names: Map<Var, string>;
  next: number;
}
const ctxOf = new WeakMap<Map<Var, string>, NameCtx>();

export function printJaxpr(j: Jaxpr, indent = 0, outer?: Map<Var, string>): string {
  const ctx: NameCtx = (outer && ctxOf.get(outer)) ?? { names: new Map<Var, string>(), next: 0 };
  const names = ctx.names;
  ctxOf.set(names, ctx);
  const name = (v: Var): string => {
    let s = names.get(v);
    if (!s) {
      s = varName(ctx.next++);
      names.set(v, s);
    }
    return s;
  };
  const decl = (v: Var) => `${name(v)}:${v.aval.str()}`;
  const atom = (a: Atom) => (a instanceof Literal ? fmtLiteral(a) : (names.get(a) ?? `<unbound ${a.aval.str()}>`));
  const pad = " ".repeat(indent);
  const lines: string[] = [];
  const head = `{ lambda ${j.constvars.map(decl).join(" ")}; ${j.invars.map(decl).join(" ")}. let`;
  lines.push(head);
  for (const e of j.eqns) {
    const lhs = e.outVars.length ? e.outVars.map(decl).join(" ") : "_";
    const ps = Object.entries(e.params).filter(([, v]) => v !== undefined);
    const pstr = ps.length
      ? `[\n${ps.map(([k, v]) => `${pad}      ${k}=${fmtParam(v, names, indent + 6)}`).join("\n")}\n${pad}    ]`
      : "";
    const short =
      ps.length && ps.every(([, v]) => !(v instanceof ClosedJaxpr || v instanceof Jaxpr))
        ? `[${ps.map(([k, v]) => `${k}=${fmtParam(v, names, indent)}`).join(" ")}]`
        : pstr;
    lines.push(
      `${pad}    ${lhs} = ${e.primitive.name}${short.length < 80 ? short : pstr} ${e.inputs.map(atom).join(" ")}`.trimEnd(),
    );
  }
  lines.push(`${pad}  in (${j.outvars.map(atom).join(", ")}${j.outvars.length === 1 ? "," : ""}) }`);
  return lines.join("\n");
}

/** Equation k of j as printJaxpr prints it (same variable names), for error messages; long ones are cut. */
export function jaxprEqnLine(j: Jaxpr, k: number): string {
  const lines = printJaxpr(j).split("\n");
  // top-level equations start with exactly four spaces; continuation lines are indented further or close a "]"
  const starts: number[] = [];
  lines.forEach((l, i) => {
    if (/^ {4}[^ \]]/.test(l)) starts.push(i);
  });
  if (k < 0 || k >= starts.length) return `<equation ${k}>`;
  const end = k + 1 < starts.length ? starts[k + 1] : lines.length - 1;
  const eq = lines.slice(starts[k], end).map((l) => l.trim());
  return eq.length > 6 ? `${eq.slice(0, 5).join(" ")} ...` : eq.join(" ");
}

// ---------------- type checking ----------------
export class JaxprTypeError extends Error {
  constructor(msg: string) {
    super(msg);
    this.name = "JaxprTypeError";
  }
}

/** Checks scoping and that every equation's outputs agree with its primitive's abstract eval. */
export function typecheckJaxpr(j: Jaxpr, where = "jaxpr"): void {
  const defined = new Set<Var>([...j.constvars, ...j.invars]);
  if (defined.size !== j.constvars.length + j.invars.length)
    throw new JaxprTypeError(`${where}: a variable is bound twice among inputs`);
  const check = (a: Atom, ctx: string) => {
    if (a instanceof Var && !defined.has(a))
      throw new JaxprTypeError(`${where}: ${ctx} uses a variable ${a.aval.str()} before it is defined`);
  };
  j.eqns.forEach((e, i) => {
    e.inputs.forEach((a) => check(a, `equation ${i} (${e.primitive.name})`));
    let outs: ShapedArray[];
    try {
      outs = abstractEval(
        e.primitive,
        e.inputs.map((a) => a.aval),
        e.params,
      );
    } catch (err) {
      throw new JaxprTypeError(
        `${where}: equation ${i} (${e.primitive.name}) fails abstract evaluation: ${(err as Error).message}`,
      );
    }
    if (outs.length !== e.outVars.length)
      throw new JaxprTypeError(
        `${where}: equation ${i} (${e.primitive.name}) has ${e.outVars.length} outputs, rule gives ${outs.length}`,
      );
    outs.forEach((o, k) => {
      const v = e.outVars[k];
      if (!o.sameType(v.aval)) {
        throw new JaxprTypeError(
          `${where}: equation ${i} (${e.primitive.name}) output ${k} is typed ${v.aval.str()} but its rule gives ${o.str()}`,
        );
      }
      if (defined.has(v)) throw new JaxprTypeError(`${where}: equation ${i} rebinds a variable`);
      defined.add(v);
    });
    for (const p of Object.values(e.params)) {
      if (p instanceof ClosedJaxpr) typecheckJaxpr(p.jaxpr, `${where}/${e.primitive.name}`);
      else if (p instanceof Jaxpr) typecheckJaxpr(p, `${where}/${e.primitive.name}`);
      else if (globalThis.Array.isArray(p))
        for (const q of p) if (q instanceof ClosedJaxpr) typecheckJaxpr(q.jaxpr, `${where}/${e.primitive.name}`);
    }
  });
  j.outvars.forEach((a) => check(a, "output"));
}

// ---------------- evaluation ----------------
/** Evaluates a jaxpr by binding each equation on the current trace (so transformations apply). */
export function evalJaxpr(j: Jaxpr, consts: readonly Array[], args: readonly Array[]): Array[] {
  if (consts.length !== j.constvars.length || args.length !== j.invars.length) {
    throw new Error(
      `evalJaxpr: expected ${j.constvars.length} consts and ${j.invars.length} args, got ${consts.length} and ${args.length}`,
    );
  }
  const env = new Map<Var, Array>();
  j.constvars.forEach((v, i) => env.set(v, consts[i]));
  j.invars.forEach((v, i) => env.set(v, args[i]));
  const read = (a: Atom): Array => (a instanceof Literal ? a.value : env.get(a)!);
  for (const e of j.eqns) {
    const outs = bind(e.primitive, e.inputs.map(read), e.params);
    e.outVars.forEach((v, i) => env.set(v, outs[i]));
  }
  return j.outvars.map(read);
}
