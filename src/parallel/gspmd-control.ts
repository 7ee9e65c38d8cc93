/**
 * @file The partitioner's control-flow rules: scan, while and cond bodies (and custom_jvp / custom_vjp calls) are
 * partitioned into per-device bodies with their collectives inside; loop carries iterate to a sharding fixed point.
 */
import type { Array } from "../core/array.js";
import { ShapedArray } from "../core/aval.js";
import { traceToJaxpr } from "../core/jaxpr-trace.js";
import { evalJaxpr, type Jaxpr } from "../core/jaxpr.js";
import type { Params, Primitive } from "../core/primitive.js";
import { bind } from "../core/trace.js";
import { closeOver } from "../transforms/control-flow.js";
import type { Dims, Partitioner, SV } from "./gspmd-rules.js";

/** What a body invar is: a value's global shape and sharding (its local block comes from the body's trace). */
type Tmpl = Pick<SV, "shape" | "dims" | "iota" | "comps">;
type Rule = (P: Partitioner, ins: SV[], params: Params, outs: ShapedArray[], prim: Primitive) => SV[] | null;

const sameDims = (a: Dims, b: Dims) =>
  a.length === b.length && a.every((d, i) => d.length === b[i].length && d.every((n, k) => n === b[i][k]));
const tmpl = (v: SV): Tmpl => ({ shape: v.shape, dims: v.dims, iota: v.iota, comps: v.comps });
const sv = (t: Tmpl, x: Array): SV => ({ ...t, x, partial: [] });
const localAval = (P: Partitioner, t: Tmpl, dtype: ShapedArray["dtype"]) =>
  new ShapedArray(P.localShape(t.shape, t.dims), dtype);

const notes = new Set<string>();
/** Debug note (JAXTS_DEBUG_GSPMD=1) when a loop carry loses mesh axes the user put on its initial value. */
function note(key: string, msg: string): void {
  if (notes.has(key) || !process.env.JAXTS_DEBUG_GSPMD) return;
  notes.add(key);
  process.stderr.write(`jaxts gspmd: ${msg}\n`);
}

/**
 * Partitions a body jaxpr (consts as leading invars, no constvars) for invars of the given shardings and returns it
 * closed over as a per-device jaxpr, with the shardings of its outputs. `finish` brings each output to its final
 * sharding (a carry to the loop's, a partial sum reduced) before it leaves the body.
 */
function partitionBody(
  P: Partitioner,
  j: Jaxpr,
  ins: Tmpl[],
  name: string,
  finish: (outs: SV[]) => SV[],
): { jaxpr: Jaxpr; consts: Array[]; outs: SV[] } {
  if (j.constvars.length) throw new Error(`gspmd: the ${name} body has unexpected constvars`);
  let outs: SV[] = [];
  const avals = ins.map((t, k) => localAval(P, t, j.invars[k].aval.dtype));
  const c = closeOver(
    (...xs) => {
      outs = finish(
        P.run(
          j,
          [],
          xs.map((x, k) => sv(ins[k], x)),
        ),
      );
      return outs.map((o) => o.x);
    },
    avals,
    `spmd ${name} body`,
  );
  return { ...c, outs };
}

/**
 * Iterates a loop carry's sharding to a fixed point: start from the initial values' shardings, adopt what the body
 * returns (partial sums reduced), stop when unchanged; if it does not settle in 4 rounds, the body's results are
 * resharded to the initial shardings (always consistent). Returns the carry shardings.
 */
function carryFixedPoint(
  P: Partitioner,
  init: Tmpl[],
  probe: (carry: Tmpl[]) => SV[],
  what: string,
): { carry: Tmpl[]; settled: boolean } {
  let carry = init;
  for (let round = 0; round < 4; round++) {
    const outs = probe(carry);
    const next = carry.map((c, k) => ({ ...c, dims: outs[k].dims, iota: undefined, comps: undefined }));
    if (next.every((n, k) => sameDims(n.dims, carry[k].dims))) {
      init.forEach((t, k) => {
        const lost = t.dims.flat().filter((a) => !carry[k].dims.flat().includes(a));
        if (lost.length)
          note(
            `${what}:${k}:${lost}`,
            `${what} carry ${k} (global shape [${t.shape}]) sharded over ${JSON.stringify(t.dims)} loses mesh axes ${lost.join(", ")} in the loop (the body returns it as ${JSON.stringify(carry[k].dims)}); it is gathered once before the loop`,
          );
      });
      return { carry, settled: true };
    }
    carry = next;
  }
  note(what, `${what}: the carry sharding does not settle; the body reshards its results to the initial shardings`);
  return { carry: init, settled: false };
}

const resolved = (P: Partitioner, v: SV): SV => (v.partial.length ? P.resolve(v) : v);
/** The carry at a loop's sharding: resolved or resharded to it. */
const toCarry = (P: Partitioner, v: SV, t: Tmpl): SV =>
  sameDims(v.dims, t.dims) && !v.partial.length ? v : P.reshard(v, t.dims);

export const scanRule: Rule = (P, ins, p, outAvals, prim) => {
  const j = p.jaxpr as Jaxpr;
  const nc = p.num_consts as number,
    nk = p.num_carry as number;
  const consts = ins.slice(0, nc).map((v) => resolved(P, v));
  const init = ins.slice(nc, nc + nk).map((v) => resolved(P, v));
  // the scanned dim is whole on every device (each step reads one slice); the others keep their sharding
  const xs = ins
    .slice(nc + nk)
    .map((v) => (v.dims[0].length || v.partial.length ? P.reshard(v, [[], ...v.dims.slice(1)]) : v));
  const xsT: Tmpl[] = xs.map((v) => ({ shape: v.shape.slice(1), dims: v.dims.slice(1) }));
  const body = (carry: Tmpl[], fin: (outs: SV[]) => SV[]) =>
    partitionBody(P, j, [...consts.map(tmpl), ...carry, ...xsT], "scan", fin);
  const { carry } = carryFixedPoint(
    P,
    init.map(tmpl),
    (c) => body(c, (outs) => outs.map((o, k) => (k < nk ? resolved(P, o) : o))).outs,
    "scan",
  );
  // ys keep a partial sum (a stacked partial sum is still one): reduced once after the loop, if at all
  const b = body(carry, (outs) => outs.map((o, k) => (k < nk ? toCarry(P, o, carry[k]) : o)));
  const args = [...consts.map((v) => v.x), ...init.map((v, k) => toCarry(P, v, carry[k]).x), ...xs.map((v) => v.x)];
  const ys = bind(prim, [...b.consts, ...args], {
    ...p,
    jaxpr: b.jaxpr,
    num_consts: b.consts.length + nc,
    linear: [...b.consts, ...args].map(() => false),
  });
  return ys.map((x, k) =>
    k < nk
      ? { x, shape: [...outAvals[k].shape], dims: carry[k].dims, partial: [] }
      : { x, shape: [...outAvals[k].shape], dims: [[], ...b.outs[k].dims], partial: b.outs[k].partial },
  );
};

export const whileRule: Rule = (P, ins, p, outAvals, prim) => {
  const cj = p.cond_jaxpr as Jaxpr,
    bj = p.body_jaxpr as Jaxpr;
  const cn = p.cond_nconsts as number,
    bn = p.body_nconsts as number;
  const cc = ins.slice(0, cn).map((v) => resolved(P, v)),
    bc = ins.slice(cn, cn + bn).map((v) => resolved(P, v));
  const init = ins.slice(cn + bn).map((v) => resolved(P, v));
  const { carry } = carryFixedPoint(
    P,
    init.map(tmpl),
    (c) => partitionBody(P, bj, [...bc.map(tmpl), ...c], "while", (outs) => outs.map((o) => resolved(P, o))).outs,
    "while_loop",
  );
  const b = partitionBody(P, bj, [...bc.map(tmpl), ...carry], "while", (outs) =>
    outs.map((o, k) => toCarry(P, o, carry[k])),
  );
  // the predicate is replicated (every device takes the same number of steps)
  const c = partitionBody(P, cj, [...cc.map(tmpl), ...carry], "while cond", (outs) => outs.map((o) => P.gatherAll(o)));
  const outs = bind(
    prim,
    [
      ...c.consts,
      ...cc.map((v) => v.x),
      ...b.consts,
      ...bc.map((v) => v.x),
      ...init.map((v, k) => toCarry(P, v, carry[k]).x),
    ],
    {
      ...p,
      cond_jaxpr: c.jaxpr,
      body_jaxpr: b.jaxpr,
      cond_nconsts: c.consts.length + cn,
      body_nconsts: b.consts.length + bn,
    },
  );
  return outs.map((x, k) => ({ x, shape: [...outAvals[k].shape], dims: carry[k].dims, partial: [] }));
};

export const condRule: Rule = (P, [idx, ...ops], p, outAvals, prim) => {
  const branches = p.branches as Jaxpr[];
  const operands = ops.map((v) => resolved(P, v));
  const t = operands.map(tmpl);
  // every branch's results are brought to the first branch's shardings (partial sums reduced inside the branch)
  const first = partitionBody(P, branches[0], t, "cond branch", (outs) => outs.map((o) => resolved(P, o)));
  const dims = first.outs.map((o) => o.dims);
  const parts = branches.map((bj, i) =>
    i === 0
      ? first
      : partitionBody(P, bj, t, "cond branch", (outs) =>
          outs.map((o, k) => toCarry(P, o, { ...tmpl(o), dims: dims[k] })),
        ),
  );
  // branch consts become leading operands shared by all branches (each branch ignores the others')
  const nConsts = parts.map((b) => b.consts.length);
  const allConsts = parts.flatMap((b) => b.consts);
  const padded = parts.map((b, i) => {
    const before = nConsts.slice(0, i).reduce((a, n) => a + n, 0);
    return closeOver(
      (...xs) => {
        const mine = xs.slice(before, before + nConsts[i]);
        const rest = xs.slice(allConsts.length);
        return evalJaxpr(b.jaxpr, [], [...mine, ...rest]);
      },
      [...allConsts.map((c) => c.aval), ...operands.map((v) => v.x.aval)],
      "spmd cond branch",
    ).jaxpr;
  });
  const outs = bind(prim, [P.gatherAll(resolved(P, idx)).x, ...allConsts, ...operands.map((v) => v.x)], {
    ...p,
    branches: padded,
  });
  return outs.map((x, k) => ({ x, shape: [...outAvals[k].shape], dims: dims[k], partial: [] }));
};

/** Global avals of a value list (its global shapes at its local dtypes). */
const globalAvals = (vs: readonly { shape: number[]; x: Array }[]) =>
  vs.map((v) => new ShapedArray(v.shape, v.x.dtype));

/**
 * custom_jvp_call: the primal body is partitioned; the user's jvp rule (a function of global values) is traced at
 * the global shapes and partitioned with the same shardings, so the rule still holds under grad of the jitted call.
 */
export const customJvpRule: Rule = (P, ins, p, outAvals, prim) => {
  const nc = p.num_consts as number;
  const args = ins.map((v) => resolved(P, v));
  const body = partitionBody(P, p.call_jaxpr as Jaxpr, args.map(tmpl), "custom_jvp", (outs) =>
    outs.map((o) => resolved(P, o)),
  );
  const outT = body.outs.map(tmpl);
  const prims = args.slice(nc).map(tmpl);
  const rule = p.jvp as (primals: Array[], tangents: Array[]) => [Array[], Array[]];
  const n = prims.length;
  const jvp = (ps: Array[], ts: Array[]): [Array[], Array[]] => {
    const g = traceToJaxpr(
      (...z) => {
        const [po, to] = rule(z.slice(0, n), z.slice(n));
        return [...po, ...to];
      },
      [
        ...globalAvals(prims.map((t, k) => ({ shape: t.shape, x: ps[k] }))),
        ...globalAvals(prims.map((t, k) => ({ shape: t.shape, x: ts[k] }))),
      ],
      "custom_jvp rule",
    );
    const outs = P.run(g.jaxpr, g.consts, [...ps.map((x, k) => sv(prims[k], x)), ...ts.map((x, k) => sv(prims[k], x))]);
    const r = outs.map((o, k) => toCarry(P, o, outT[k % outT.length]).x);
    return [r.slice(0, outT.length), r.slice(outT.length)];
  };
  const ys = bind(prim, [...body.consts, ...args.map((v) => v.x)], {
    ...p,
    call_jaxpr: body.jaxpr,
    jvp,
    num_consts: body.consts.length + nc,
  });
  return ys.map((x, k) => ({ x, shape: [...outAvals[k].shape], dims: outT[k].dims, partial: [] }));
};

/**
 * custom_vjp_call: the primal body, the user's fwd and bwd (traced at global shapes) are partitioned with the
 * operands' shardings; residuals keep the shardings fwd gives them, cotangents arrive sharded like the outputs and
 * leave sharded like the inputs.
 */
export const customVjpRule: Rule = (P, ins, p, outAvals, prim) => {
  const nc = p.num_consts as number;
  const args = ins.map((v) => resolved(P, v));
  const body = partitionBody(P, p.call_jaxpr as Jaxpr, args.map(tmpl), "custom_vjp", (outs) =>
    outs.map((o) => resolved(P, o)),
  );
  const outT = body.outs.map(tmpl);
  const prims = args.slice(nc).map(tmpl);
  const fwd0 = p.fwd as (xs: Array[]) => [Array[], Array[]];
  const bwd0 = p.bwd as (res: Array[], cts: Array[]) => Array[];
  let resT: Tmpl[] = [];
  const fwd = (xs: Array[]): [Array[], Array[]] => {
    let nOut = 0;
    const g = traceToJaxpr(
      (...z) => {
        const [o, r] = fwd0(z);
        nOut = o.length;
        return [...o, ...r];
      },
      globalAvals(prims.map((t, k) => ({ shape: t.shape, x: xs[k] }))),
      "custom_vjp fwd",
    );
    const outs = P.run(
      g.jaxpr,
      g.consts,
      xs.map((x, k) => sv(prims[k], x)),
    );
    const res = outs.slice(nOut).map((o) => resolved(P, o));
    resT = res.map(tmpl);
    return [outs.slice(0, nOut).map((o, k) => toCarry(P, o, outT[k]).x), res.map((r) => r.x)];
  };
  const bwd = (res: Array[], cts: Array[]): Array[] => {
    const g = traceToJaxpr(
      (...z) => bwd0(z.slice(0, res.length), z.slice(res.length)),
      [
        ...globalAvals(resT.map((t, k) => ({ shape: t.shape, x: res[k] }))),
        ...globalAvals(outT.map((t, k) => ({ shape: t.shape, x: cts[k] }))),
      ],
      "custom_vjp bwd",
    );
    const outs = P.run(g.jaxpr, g.consts, [...res.map((x, k) => sv(resT[k], x)), ...cts.map((x, k) => sv(outT[k], x))]);
    return outs.map((o, k) => toCarry(P, o, prims[k]).x);
  };
  const ys = bind(prim, [...body.consts, ...args.map((v) => v.x)], {
    ...p,
    call_jaxpr: body.jaxpr,
    fwd,
    bwd,
    num_consts: body.consts.length + nc,
    out_avals: body.jaxpr.outAvals,
  });
  return ys.map((x, k) => ({ x, shape: [...outAvals[k].shape], dims: outT[k].dims, partial: [] }));
};
