/** @file jnp.einsum: subscript parsing (ellipsis, implicit output, repeated labels), diagonals, and pairwise dot_general contractions in a greedy cheapest-first order. */
import { checkOptions } from "../core/check-args.js";
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { type DType, canonicalizeDType } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { arr, isPlainOptions, promoteAll, range, shapeStr } from "./struct-util.js";

type AL = ArrayLike | NestedValue;
export interface EinsumOpts {
  optimize?: string | boolean;
  precision?: unknown;
  preferredElementType?: DType;
}

/** Splits one term ("ij", "...ij", "i...j") into labels; "..." becomes the token "...". */
function tokens(spec: string, term: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < term.length; i++) {
    const c = term[i];
    if (c === ".") {
      if (term.slice(i, i + 3) !== "...")
        throw new Error(`einsum: invalid subscripts "${spec}": a "." must be part of an ellipsis "..."`);
      if (out.includes("..."))
        throw new Error(`einsum: invalid subscripts "${spec}": term "${term}" has more than one ellipsis`);
      out.push("...");
      i += 2;
    } else if (/[a-zA-Z]/.test(c)) out.push(c);
    else
      throw new Error(
        `einsum: invalid character ${JSON.stringify(c)} in subscripts "${spec}" (only letters, ",", "->" and "..." are allowed)`,
      );
  }
  return out;
}

interface Term {
  x: Array;
  labels: string[];
}
const ellLabel = (k: number): string => `@${k}`;

/** Takes the diagonal over two equal-size dims i < j; the result keeps the diagonal at position i. */
function diagonal2(x: Array, i: number, j: number): Array {
  const n = x.shape[i];
  const d = ops.iota("int32", [n, 1], 0);
  const g = ops.gather(x, ops.concatenate([d, d], 1), [i, j], "clip");
  return ops.moveaxis(g, 0, i);
}
function sumOut(t: Term, drop: (l: string) => boolean): Term {
  const axes = t.labels.map((l, i) => (drop(l) ? i : -1)).filter((i) => i >= 0);
  if (!axes.length) return t;
  return { x: ops.reduceSum(t.x, axes), labels: t.labels.filter((l) => !drop(l)) };
}
function broadcastLabel(t: Term, label: string, n: number): Term {
  const i = t.labels.indexOf(label);
  if (i < 0 || t.x.shape[i] === n) return t;
  const shape = [...t.x.shape];
  shape[i] = n;
  return { x: ops.broadcastInDim(t.x, shape, range(t.x.ndim)), labels: t.labels };
}

/** jnp.einsum(subscripts, ...operands, {preferredElementType}): NumPy's Einstein summation. */
export function einsum(subscripts: string, ...args: (AL | EinsumOpts)[]): Array;
/** The interleaved form einsum(op0, sublist0, op1, sublist1, ..., [sublistOut], {opts}): sublists of axis numbers 0-51 or "...". */
export function einsum(operand: AL, sublist: Sublist, ...rest: (AL | Sublist | EinsumOpts)[]): Array;
export function einsum(first: AL | string, ...rest: unknown[]): Array {
  const args = [...rest];
  const opts: EinsumOpts = args.length && isPlainOptions(args[args.length - 1]) ? (args.pop() as EinsumOpts) : {};
  checkOptions(
    "einsum",
    opts,
    ["optimize", "precision", "preferredElementType"],
    "einsum(subscripts, ...operands, { optimize, precision, preferredElementType }) or einsum(op0, sublist0, ..., sublistOut?, { ... })",
  );
  if (typeof first === "string") return einsumStr(first, args as AL[], opts);
  const [subscripts, operands] = fromSublists([first, ...args]);
  return einsumStr(subscripts, operands, opts);
}
/** One operand's axis labels in the interleaved form: integers 0-51 (a-z, A-Z) and "..." for an ellipsis. */
export type Sublist = readonly (number | "...")[];
// interleaved operands/sublists -> the equivalent subscripts string
function fromSublists(items: unknown[]): [string, AL[]] {
  const label = (v: unknown, where: string): string => {
    if (v === "...") return "...";
    if (typeof v === "number" && Number.isInteger(v) && v >= 0 && v < 52)
      return String.fromCharCode(v < 26 ? 97 + v : 65 + v - 26);
    throw new TypeError(
      `einsum: ${where} sublist entries must be integers in [0, 52) or "...", got ${JSON.stringify(v)}`,
    );
  };
  const sub = (v: unknown, where: string): string => {
    if (!globalThis.Array.isArray(v))
      throw new TypeError(
        `einsum: in the interleaved form every operand must be followed by a sublist (a list of axis numbers), but ${where} is ${typeof v}`,
      );
    return v.map((x) => label(x, where)).join("");
  };
  const operands: AL[] = [],
    terms: string[] = [];
  let i = 0;
  for (; i + 1 < items.length; i += 2) {
    operands.push(items[i] as AL);
    terms.push(sub(items[i + 1], `operand ${i / 2}'s`));
  }
  const out = i < items.length ? "->" + sub(items[i], "the output") : "";
  return [terms.join(",") + out, operands];
}
function einsumStr(subscripts: string, args: AL[], opts: EinsumOpts): Array {
  const spec = subscripts.replace(/\s+/g, "");
  const arrow = spec.indexOf("->");
  if (arrow >= 0 && spec.indexOf("->", arrow + 1) >= 0)
    throw new Error(`einsum: subscripts "${subscripts}" may contain only one "->"`);
  const lhs = arrow >= 0 ? spec.slice(0, arrow) : spec;
  const rhs = arrow >= 0 ? spec.slice(arrow + 2) : null;
  const terms = lhs.split(",");
  if (terms.length !== args.length)
    throw new Error(
      `einsum: subscripts "${subscripts}" name ${terms.length} operand(s) but ${args.length} operand(s) were given`,
    );
  let xs = promoteAll(
    "einsum",
    (args as AL[]).map((a) => arr("einsum", a)),
  );
  const toks = terms.map((t) => tokens(subscripts, t));
  const shapesText = () => xs.map((x) => shapeStr(x.shape)).join(", ");
  // ellipsis dims are right-aligned across operands and broadcast together
  const ellDims = toks.map((tk, k) => {
    const letters = tk.filter((c) => c !== "...").length;
    const nd = xs[k].ndim;
    if (tk.includes("...")) {
      if (letters > nd)
        throw new Error(
          `einsum: operand ${k} has shape ${shapeStr(xs[k].shape)} (${nd} dimensions) but its subscripts "${terms[k]}" name ${letters} dimensions (operand shapes: ${shapesText()})`,
        );
      return nd - letters;
    }
    if (letters !== nd)
      throw new Error(
        `einsum: operand ${k} has shape ${shapeStr(xs[k].shape)} (${nd} dimensions) but its subscripts "${terms[k]}" name ${letters} dimensions (operand shapes: ${shapesText()})`,
      );
    return 0;
  });
  const E = Math.max(0, ...ellDims);
  const labelsOf = toks.map((tk, k) =>
    tk.flatMap((c) => (c === "..." ? range(ellDims[k]).map((j) => ellLabel(E - ellDims[k] + j)) : [c])),
  );
  // label sizes (size 1 broadcasts, as in NumPy / opt_einsum)
  const size = new Map<string, number>(),
    where = new Map<string, number>();
  labelsOf.forEach((ls, k) =>
    ls.forEach((l, i) => {
      const n = xs[k].shape[i],
        prev = size.get(l);
      if (prev !== undefined && where.get(l) === k && n !== prev) {
        throw new Error(
          `einsum: repeated label '${l}' in operand ${k} ("${terms[k]}") needs equal sizes, got ${prev} and ${n} (shape ${shapeStr(xs[k].shape)})`,
        );
      }
      if (prev === undefined || prev === 1) {
        size.set(l, n);
        where.set(l, k);
      } else if (n !== 1 && n !== prev) {
        const what = l.startsWith("@") ? `broadcast (ellipsis) dimension` : `label '${l}'`;
        throw new Error(
          `einsum: size of ${what} is ${prev} in operand ${where.get(l)} but ${n} in operand ${k} (subscripts "${subscripts}", operand shapes: ${shapesText()})`,
        );
      }
    }),
  );
  // output labels
  let out: string[];
  const ellAll = range(E).map(ellLabel);
  if (rhs === null) {
    const count = new Map<string, number>();
    labelsOf.flat().forEach((l) => count.set(l, (count.get(l) ?? 0) + 1));
    const letters = [...count.keys()].filter((l) => !l.startsWith("@") && count.get(l) === 1).sort();
    out = [...ellAll, ...letters];
  } else {
    const rt = tokens(subscripts, rhs);
    out = rt.flatMap((c) => (c === "..." ? ellAll : [c]));
    const seen = new Set<string>();
    for (const l of out) {
      if (seen.has(l)) throw new Error(`einsum: output subscript '${l}' appears more than once in "${subscripts}"`);
      seen.add(l);
      if (!size.has(l))
        throw new Error(`einsum: output subscript '${l}' in "${subscripts}" does not appear in the input subscripts`);
    }
    if (E > 0 && !rt.includes("...")) {
      throw new Error(
        `einsum: output subscripts "${rhs}" must include "..." because the operands have broadcast (ellipsis) dimensions (subscripts "${subscripts}", operand shapes: ${shapesText()})`,
      );
    }
  }
  // per operand: diagonals for repeated labels, then sum labels used nowhere else
  let ts: Term[] = xs.map((x, k) => ({ x, labels: [...labelsOf[k]] }));
  ts = ts.map((t0, k) => {
    let t = t0;
    for (;;) {
      const i = t.labels.findIndex((l, q) => t.labels.indexOf(l) !== q);
      if (i < 0) break;
      const l = t.labels[i],
        first = t.labels.indexOf(l);
      if (t.x.shape[first] !== t.x.shape[i])
        throw new Error(
          `einsum: repeated label '${l}' in operand ${k} ("${terms[k]}") needs equal sizes, got ${t.x.shape[first]} and ${t.x.shape[i]} (shape ${shapeStr(t.x.shape)})`,
        );
      t = { x: diagonal2(t.x, first, i), labels: t.labels.filter((_, q) => q !== i) };
    }
    const elsewhere = new Set([...out, ...labelsOf.filter((_, q) => q !== k).flat()]);
    return sumOut(t, (l) => !elsewhere.has(l));
  });
  xs = [];
  const pe = opts.preferredElementType ? canonicalizeDType(opts.preferredElementType) : null;
  // contract pairs: each step sums labels needed nowhere else, then one dot_general over the shared labels
  const contractPair = (a0: Term, b0: Term, others: readonly Term[]): Term => {
    const keep = new Set([...out, ...others.flatMap((t) => t.labels)]);
    let a = sumOut(a0, (l) => !keep.has(l) && !b0.labels.includes(l));
    let b = sumOut(b0, (l) => !keep.has(l) && !a.labels.includes(l));
    const shared = a.labels.filter((l) => b.labels.includes(l));
    for (const l of shared) {
      const n = size.get(l)!;
      a = broadcastLabel(a, l, n);
      b = broadcastLabel(b, l, n);
    }
    const batch = shared.filter((l) => keep.has(l)),
      contract = shared.filter((l) => !keep.has(l));
    const idx = (t: Term, ls: string[]) => ls.map((l) => t.labels.indexOf(l));
    const x = ops.dotGeneral(
      a.x,
      b.x,
      [
        [idx(a, contract), idx(b, contract)],
        [idx(a, batch), idx(b, batch)],
      ],
      pe,
    );
    const freeA = a.labels.filter((l) => !shared.includes(l)),
      freeB = b.labels.filter((l) => !shared.includes(l));
    return { x, labels: [...batch, ...freeA, ...freeB] };
  };
  // the order: left to right with optimize false / "none"; otherwise greedily the pair whose contraction takes the
  // fewest multiplications (the product of the sizes of all its labels; ties: the earlier pair), as opt_einsum's
  // greedy path that JAX's default optimize="auto" uses for longer chains favours cheap, shared-label pairs first
  const greedy = opts.optimize !== false && opts.optimize !== "none";
  const work = (p: Term, q: Term) => {
    let w = 1;
    for (const l of new Set([...p.labels, ...q.labels])) w *= size.get(l)!;
    return w;
  };
  let list = ts;
  while (list.length > 1) {
    let [bi, bj, best] = [0, 1, Infinity];
    if (greedy)
      for (let i = 0; i < list.length; i++)
        for (let j = i + 1; j < list.length; j++) {
          const w = work(list[i], list[j]);
          if (w < best) [bi, bj, best] = [i, j, w];
        }
    const others = list.filter((_, k) => k !== bi && k !== bj);
    const c = contractPair(list[bi], list[bj], others);
    list = [...others.slice(0, bi), c, ...others.slice(bi)];
  }
  let acc = list[0];
  acc = sumOut(acc, (l) => !out.includes(l));
  let r = ops.transpose(
    acc.x,
    out.map((l) => acc.labels.indexOf(l)),
  );
  const full = out.map((l) => size.get(l)!);
  if (r.shape.join() !== full.join()) r = ops.broadcastInDim(r, full, range(r.ndim));
  if (pe && r.dtype !== pe) r = ops.convert(r, pe);
  return r;
}
