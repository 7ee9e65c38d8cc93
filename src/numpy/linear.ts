/** @file jnp products: matmul, dot, vdot, vecdot, matvec, vecmat, inner, outer, tensordot, einsum, kron. */
import { checkArity, checkOptions } from "../core/check-args.js";
import { Array, type ArrayLike, type NestedValue } from "../core/array.js";
import { type DType, canonicalizeDType, isComplex } from "../core/dtype.js";
import * as ops from "../primitives/ops.js";
import { arr, bcast, broadcastShape, normalizeAxis, parseArgs, promoteAll, range, shapeStr } from "./struct-util.js";

export { einsum } from "./einsum.js";
export type { EinsumOpts } from "./einsum.js";

type AL = ArrayLike | NestedValue;
interface DotOpts {
  precision: unknown;
  preferredElementType: DType;
}
/** Checks the (a, b, { precision, preferredElementType }) call form of the dot family. */
function dotArgs(fn: string, args: IArguments, opts: unknown): void {
  const forms = `${fn}(a, b, { precision, preferredElementType })`;
  checkArity(fn, args, 3, forms);
  checkOptions(fn, opts, ["precision", "preferredElementType"], forms);
}
const pet = (o: Partial<DotOpts>): DType | null =>
  o.preferredElementType ? canonicalizeDType(o.preferredElementType) : null;
function two(fn: string, a: AL, b: AL): [Array, Array] {
  const [x, y] = promoteAll(fn, [arr(fn, a), arr(fn, b)]);
  return [x, y];
}
/** Elementwise product with NumPy broadcasting (the 0-d cases of dot/inner). */
function mulB(x: Array, y: Array, pe: DType | null): Array {
  const s = broadcastShape([x.shape, y.shape]);
  const r = ops.mul(bcast(x, s), bcast(y, s));
  return pe && r.dtype !== pe ? ops.convert(r, pe) : r;
}

/** jnp.matmul(a, b, {precision, preferredElementType}): batched matrix product with NumPy's 1-D promotion rules. */
export function matmul(a: AL, b: AL, opts: Partial<DotOpts> = {}): Array {
  dotArgs("matmul", arguments, opts);
  const [x, y] = two("matmul", a, b);
  if (x.ndim === 0 || y.ndim === 0)
    throw new Error(
      `matmul: operands must be at least 1-dimensional (use multiply for scalars); got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  const a1 = x.ndim === 1,
    b1 = y.ndim === 1;
  const xm = a1 ? ops.reshape(x, [1, x.shape[0]]) : x,
    ym = b1 ? ops.reshape(y, [y.shape[0], 1]) : y;
  const k1 = xm.shape[xm.ndim - 1],
    k2 = ym.shape[ym.ndim - 2];
  if (k1 !== k2)
    throw new Error(
      `matmul: contracting dimensions do not match for shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}: a.shape[-1] (${k1}) must equal b.shape[${b1 ? "0" : "-2"}] (${k2})`,
    );
  const batch = broadcastShape([xm.shape.slice(0, -2), ym.shape.slice(0, -2)], "matmul");
  const m = xm.shape[xm.ndim - 2],
    n = ym.shape[ym.ndim - 1],
    nb = batch.length;
  const xb = bcast(xm, [...batch, m, k1]),
    yb = bcast(ym, [...batch, k1, n]);
  let r = ops.dotGeneral(
    xb,
    yb,
    [
      [[nb + 1], [nb]],
      [range(nb), range(nb)],
    ],
    pet(opts),
  );
  if (a1 && b1) r = ops.reshape(r, batch);
  else if (a1) r = ops.reshape(r, [...batch, n]);
  else if (b1) r = ops.reshape(r, [...batch, m]);
  return r;
}
/** jnp.dot(a, b): NumPy dot (scalar product, inner product, matrix product, or sum over a's last and b's second-to-last axis). */
export function dot(a: AL, b: AL, opts: Partial<DotOpts> = {}): Array {
  dotArgs("dot", arguments, opts);
  const [x, y] = two("dot", a, b);
  if (x.ndim === 0 || y.ndim === 0) return mulB(x, y, pet(opts));
  const bc = y.ndim === 1 ? 0 : y.ndim - 2;
  const k1 = x.shape[x.ndim - 1],
    k2 = y.shape[bc];
  if (k1 !== k2)
    throw new Error(
      `dot: shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)} not aligned: ${k1} (dim ${x.ndim - 1}) != ${k2} (dim ${bc})`,
    );
  return ops.dotGeneral(
    x,
    y,
    [
      [[x.ndim - 1], [bc]],
      [[], []],
    ],
    pet(opts),
  );
}
/** jnp.vdot(a, b): dot of the flattened arrays. */
export function vdot(a: AL, b: AL, opts: Partial<DotOpts> = {}): Array {
  dotArgs("vdot", arguments, opts);
  const [x, y] = two("vdot", a, b);
  if (x.size !== y.size)
    throw new Error(
      `vdot: arrays must have the same number of elements, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  // vdot conjugates its first argument (sum conj(a) * b)
  const xc = isComplex(x.dtype) ? ops.conj(x) : x;
  return ops.dotGeneral(
    ops.reshape(xc, [x.size]),
    ops.reshape(y, [y.size]),
    [
      [[0], [0]],
      [[], []],
    ],
    pet(opts),
  );
}
/** jnp.vecdot(x1, x2, axis=-1): vector dot product along an axis, broadcasting the rest. */
export function vecdot(a: AL, b: AL, ...args: unknown[]): Array {
  const o = parseArgs<DotOpts & { axis: number }>("vecdot", args, ["axis"], ["precision", "preferredElementType"]);
  const [x, y] = two("vecdot", a, b);
  const axis = o.axis ?? -1;
  if (x.ndim === 0 || y.ndim === 0)
    throw new Error(
      `vecdot: operands must be at least 1-dimensional, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  const ax = normalizeAxis("vecdot", axis, x.ndim),
    ay = normalizeAxis("vecdot", axis, y.ndim);
  if (x.shape[ax] !== y.shape[ay])
    throw new Error(
      `vecdot: x1 and x2 must have the same size along axis ${axis}, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  // like vdot, vecdot conjugates x1
  const xm = ops.moveaxis(isComplex(x.dtype) ? ops.conj(x) : x, ax, x.ndim - 1),
    ym = ops.moveaxis(y, ay, y.ndim - 1);
  const k = xm.shape[xm.ndim - 1];
  const batch = broadcastShape([xm.shape.slice(0, -1), ym.shape.slice(0, -1)], "vecdot");
  const nb = batch.length;
  return ops.dotGeneral(
    bcast(xm, [...batch, k]),
    bcast(ym, [...batch, k]),
    [
      [[nb], [nb]],
      [range(nb), range(nb)],
    ],
    pet(o),
  );
}
/** jnp.matvec(x1, x2): [..., m, n] @ [..., n] -> [..., m]. */
export function matvec(a: AL, b: AL, opts: Partial<DotOpts> = {}): Array {
  dotArgs("matvec", arguments, opts);
  const [x, y] = two("matvec", a, b);
  if (x.ndim < 2 || y.ndim < 1)
    throw new Error(
      `matvec: expected x1 of rank >= 2 and x2 of rank >= 1, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  return ops.squeeze(matmul(x, ops.reshape(y, [...y.shape, 1]), opts), [Math.max(x.ndim, y.ndim + 1) - 1]);
}
/** jnp.vecmat(x1, x2): [..., n] @ [..., n, m] -> [..., m]. */
export function vecmat(a: AL, b: AL, opts: Partial<DotOpts> = {}): Array {
  dotArgs("vecmat", arguments, opts);
  const [x, y] = two("vecmat", a, b);
  if (x.ndim < 1 || y.ndim < 2)
    throw new Error(
      `vecmat: expected x1 of rank >= 1 and x2 of rank >= 2, got shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)}`,
    );
  const r = matmul(ops.reshape(x, [...x.shape.slice(0, -1), 1, x.shape[x.ndim - 1]]), y, opts);
  return ops.squeeze(r, [r.ndim - 2]);
}
/** jnp.inner(a, b): sum product over the last axes. */
export function inner(a: AL, b: AL, opts: Partial<DotOpts> = {}): Array {
  dotArgs("inner", arguments, opts);
  const [x, y] = two("inner", a, b);
  if (x.ndim === 0 || y.ndim === 0) return mulB(x, y, pet(opts));
  const k1 = x.shape[x.ndim - 1],
    k2 = y.shape[y.ndim - 1];
  if (k1 !== k2)
    throw new Error(
      `inner: shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)} have different last dimensions (${k1} vs ${k2})`,
    );
  return ops.dotGeneral(
    x,
    y,
    [
      [[x.ndim - 1], [y.ndim - 1]],
      [[], []],
    ],
    pet(opts),
  );
}
/** jnp.outer(a, b): outer product of the flattened inputs. */
export function outer(a: AL, b: AL): Array {
  const [x, y] = two("outer", a, b);
  const n = x.size,
    m = y.size;
  return ops.mul(
    ops.broadcastInDim(ops.reshape(x, [n]), [n, m], [0]),
    ops.broadcastInDim(ops.reshape(y, [m]), [n, m], [1]),
  );
}
/** jnp.tensordot(a, b, axes=2): contracts a's last / b's first N axes, or the given axis lists [axesA, axesB]. */
export function tensordot(a: AL, b: AL, ...args: unknown[]): Array {
  const o = parseArgs<DotOpts & { axes: number | [number | number[], number | number[]] }>(
    "tensordot",
    args,
    ["axes"],
    ["precision", "preferredElementType"],
  );
  const [x, y] = two("tensordot", a, b);
  const axes = o.axes ?? 2;
  let ca: number[], cb: number[];
  if (typeof axes === "number") {
    if (!Number.isInteger(axes) || axes < 0 || axes > x.ndim || axes > y.ndim)
      throw new Error(
        `tensordot: axes=${axes} must be a non-negative integer no larger than both ranks (shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)})`,
      );
    ca = range(axes).map((i) => x.ndim - axes + i);
    cb = range(axes);
  } else {
    if (!globalThis.Array.isArray(axes) || axes.length !== 2)
      throw new Error(`tensordot: axes must be an integer or a pair of axis lists, got ${JSON.stringify(axes)}`);
    const la = typeof axes[0] === "number" ? [axes[0]] : axes[0],
      lb = typeof axes[1] === "number" ? [axes[1]] : axes[1];
    if (la.length !== lb.length)
      throw new Error(`tensordot: the two axis lists must have the same length, got ${JSON.stringify(axes)}`);
    ca = la.map((i) => normalizeAxis("tensordot", i, x.ndim));
    cb = lb.map((i) => normalizeAxis("tensordot", i, y.ndim));
  }
  ca.forEach((i, k) => {
    if (x.shape[i] !== y.shape[cb[k]])
      throw new Error(
        `tensordot: shape mismatch for contracted axes: a.shape[${i}] = ${x.shape[i]} but b.shape[${cb[k]}] = ${y.shape[cb[k]]} (shapes ${shapeStr(x.shape)} and ${shapeStr(y.shape)})`,
      );
  });
  return ops.dotGeneral(
    x,
    y,
    [
      [ca, cb],
      [[], []],
    ],
    pet(o),
  );
}
/** jnp.kron(a, b): Kronecker product. */
export function kron(a: AL, b: AL): Array {
  let [x, y] = two("kron", a, b);
  const nd = Math.max(x.ndim, y.ndim);
  x = ops.reshape(x, [...new globalThis.Array<number>(nd - x.ndim).fill(1), ...x.shape]);
  y = ops.reshape(y, [...new globalThis.Array<number>(nd - y.ndim).fill(1), ...y.shape]);
  const big = range(nd).flatMap((i) => [x.shape[i], y.shape[i]]);
  const r = ops.mul(
    ops.broadcastInDim(
      x,
      big,
      range(nd).map((i) => 2 * i),
    ),
    ops.broadcastInDim(
      y,
      big,
      range(nd).map((i) => 2 * i + 1),
    ),
  );
  return ops.reshape(
    r,
    range(nd).map((i) => x.shape[i] * y.shape[i]),
  );
}
