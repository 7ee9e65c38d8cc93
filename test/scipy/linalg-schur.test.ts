/** @file jax.scipy.linalg.schur / hessenberg / sqrtm / funm and lax.linalg.schur against SciPy fixtures (test/fixtures/scipy-schur.json, scripts/fixtures/gen-scipy-schur.py): defining identities, structure, eigenvalues, jit, vmap, errors. */
import { test } from "node:test";
import assert from "node:assert/strict";
import "../../src/index.js";
import type { Array } from "../../src/core/array.js";
import { array } from "../../src/numpy/core.js";
import * as ops from "../../src/primitives/ops.js";
import { complexOf } from "../../src/primitives/complex.js";
import * as SL from "../../src/scipy/linalg.js";
import * as laxLinalg from "../../src/lax/linalg.js";
import { grad, jit, vmap } from "../../src/transforms/api.js";
import { loadFixture } from "../helpers/fixtures.js";
import { withX64 } from "../helpers/x64.js";

interface Fx {
  dtype: string;
  shape: number[];
  data?: (number | string)[];
  re?: number[];
  im?: number[];
}
const fx = loadFixture<{
  schur: { name: string; a: Fx; w: Fx }[];
  hessenberg: { name: string; a: Fx; h: Fx; q: Fx }[];
  sqrtm: { name: string; a: Fx; r: Fx }[];
  funm: { name: string; a: Fx; exp: Fx; sin: Fx }[];
  rsf2csf: { name: string; t: Fx; z: Fx; tc: Fx; zc: Fx }[];
}>("scipy-schur.json");

/** A complex matrix as n x n re / im number planes. */
interface M {
  re: number[];
  im: number[];
  shape: number[];
}
const flat = (x: Array): number[] => (x.tolist() as unknown as number[]).flat(Infinity as 1) as number[];
function planes(x: Array): M {
  const c = x.dtype.startsWith("complex");
  const re = flat(c ? ops.real(x) : x);
  return { re, im: c ? flat(ops.imag(x)) : re.map(() => 0), shape: x.shape.slice() };
}
function fromFx(f: Fx, dtype?: string): Array {
  const shaped = (v: number[], d: string): Array => ops.reshape(array(v, { dtype: d as "float64" }), f.shape);
  if (f.re) {
    const real = dtype === "complex64" ? "float32" : "float64";
    return complexOf(shaped(f.re, real), shaped(f.im!, real));
  }
  return shaped(f.data!.map(Number), dtype ?? "float64");
}
const fxPlanes = (f: Fx): M => ({ re: f.re ?? f.data!.map(Number), im: f.im ?? f.data!.map(() => 0), shape: f.shape });
const maxDiff = (a: M, b: M): number => Math.max(0, ...a.re.map((v, i) => Math.hypot(v - b.re[i], a.im[i] - b.im[i])));
const maxAbs = (a: M): number => Math.max(1, ...a.re.map((v, i) => Math.hypot(v, a.im[i])));
/** Z T Z^H for one n x n matrix. */
function zTzH(t: M, z: M, n: number): M {
  const re = new globalThis.Array<number>(n * n).fill(0),
    im = new globalThis.Array<number>(n * n).fill(0);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++)
      for (let k = 0; k < n; k++)
        for (let l = 0; l < n; l++) {
          // z_ik t_kl conj(z_jl)
          const ar = z.re[i * n + k] * t.re[k * n + l] - z.im[i * n + k] * t.im[k * n + l];
          const ai = z.re[i * n + k] * t.im[k * n + l] + z.im[i * n + k] * t.re[k * n + l];
          re[i * n + j] += ar * z.re[j * n + l] + ai * z.im[j * n + l];
          im[i * n + j] += ai * z.re[j * n + l] - ar * z.im[j * n + l];
        }
  return { re, im, shape: [n, n] };
}
const eye = (n: number): M => ({
  re: [...globalThis.Array(n * n).keys()].map((k) => (k % (n + 1) === 0 ? 1 : 0)),
  im: new globalThis.Array<number>(n * n).fill(0),
  shape: [n, n],
});
const slice = (m: M, b: number, n: number): M => ({
  re: m.re.slice(b * n * n, (b + 1) * n * n),
  im: m.im.slice(b * n * n, (b + 1) * n * n),
  shape: [n, n],
});
/** The eigenvalues read off a (quasi-)triangular T: diagonal entries, and a +- i sqrt(-bc) for each standardized block. */
function eigsOfT(t: M, n: number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < n; i++) {
    if (i + 1 < n && t.re[(i + 1) * n + i] !== 0 && t.im[(i + 1) * n + i] === 0 && t.im[i * n + i] === 0) {
      const s = Math.sqrt(-t.re[i * n + i + 1] * t.re[(i + 1) * n + i]);
      out.push([t.re[i * n + i], s], [t.re[i * n + i], -s]);
      i++;
    } else out.push([t.re[i * n + i], t.im[i * n + i]]);
  }
  return out;
}
/** Multiset match of eigenvalues: each expected one paired with the nearest unused actual one. */
function assertEigs(actual: [number, number][], w: M, off: number, n: number, tol: number, msg: string): void {
  const used = new Set<number>();
  for (let k = 0; k < n; k++) {
    const [er, ei] = [w.re[off + k], w.im[off + k]];
    let best = -1,
      bd = Infinity;
    actual.forEach(([r, i], j) => {
      const d = Math.hypot(r - er, i - ei);
      if (!used.has(j) && d < bd) [best, bd] = [j, d];
    });
    used.add(best);
    assert.ok(bd <= tol * Math.max(1, Math.hypot(er, ei)), `${msg}: eigenvalue ${er}+${ei}i off by ${bd}`);
  }
}
/** Checks one n x n Schur pair: A = Z T Z^H, Z unitary, T's structure, its eigenvalues. */
function checkSchur(
  a: M,
  t: M,
  z: M,
  n: number,
  w: M,
  wOff: number,
  complexForm: boolean,
  tol: number,
  msg: string,
  eigTol = 1e-9,
): void {
  assert.ok(maxDiff(zTzH(t, z, n), a) <= tol * maxAbs(a), `${msg}: A = Z T Z^H (${maxDiff(zTzH(t, z, n), a)})`);
  const zhz = zTzH(eye(n), { re: z.re, im: z.im.map((v) => -v), shape: [n, n] }, n); // conj(Z) Z^T = conj(Z Z^H)
  assert.ok(maxDiff(zhz, eye(n)) <= tol, `${msg}: Z unitary`);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < i; j++) {
      const v = Math.hypot(t.re[i * n + j], t.im[i * n + j]);
      if (complexForm || j < i - 1) assert.equal(v, 0, `${msg}: T[${i}][${j}] = ${v} below the (sub)diagonal`);
    }
  if (!complexForm)
    for (let i = 0; i + 1 < n; i++) {
      if (t.re[(i + 1) * n + i] === 0) continue;
      assert.ok(i + 2 >= n || t.re[(i + 2) * n + i + 1] === 0, `${msg}: two consecutive subdiagonal entries at ${i}`);
      assert.equal(t.re[i * n + i], t.re[(i + 1) * n + i + 1], `${msg}: 2x2 block at ${i} has equal diagonals`);
      assert.ok(
        t.re[i * n + i + 1] * t.re[(i + 1) * n + i] < 0,
        `${msg}: 2x2 block at ${i} has opposite-sign off-diagonals`,
      );
    }
  assertEigs(eigsOfT(t, n), w, wOff, n, eigTol, msg);
}

test("schur: real and complex output, float64, vs SciPy's eigenvalues; A = Z T Z^H, Z unitary, standardized blocks", () =>
  withX64(() => {
    for (const c of fx.schur) {
      const a = fromFx(c.a),
        n = c.a.shape[c.a.shape.length - 1],
        batch = c.a.shape.length > 2 ? c.a.shape[0] : 1;
      const outputs = c.a.re ? ["real"] : ["real", "complex"];
      for (const output of outputs) {
        const [t, z] = SL.schur(a, output);
        const cplx = output === "complex" || !!c.a.re;
        assert.equal(t.dtype, cplx ? "complex128" : "float64");
        const [ap, tp, zp, wp] = [fxPlanes(c.a), planes(t), planes(z), fxPlanes(c.w)];
        for (let b = 0; b < batch; b++)
          checkSchur(
            slice(ap, b, n),
            slice(tp, b, n),
            slice(zp, b, n),
            n,
            wp,
            b * n,
            cplx,
            1e-13 * n,
            `${c.name} ${output} [${b}]`,
          );
      }
    }
  }));

test("schur: float32 and complex64 reconstruct to float32 accuracy", () => {
  for (const name of ["random7", "complex5"]) {
    const c = fx.schur.find((s) => s.name === name)!;
    const a = fromFx(c.a, c.a.re ? "complex64" : "float32");
    const [t, z] = SL.schur(a);
    assert.equal(t.dtype, a.dtype);
    const n = c.a.shape[0];
    checkSchur(fxPlanes(c.a), planes(t), planes(z), n, fxPlanes(c.w), 0, !!c.a.re, 1e-5 * n, name, 1e-4);
  }
});

test("schur: jit matches eager; vmap matches a loop of slices; lax.linalg.schur", () =>
  withX64(() => {
    const c = fx.schur.find((s) => s.name === "batch")!;
    const a = fromFx(c.a);
    const [t, z] = SL.schur(a);
    const [tj, zj] = jit((x: Array) => SL.schur(x))(a);
    assert.ok(maxDiff(planes(tj), planes(t)) <= 1e-13 && maxDiff(planes(zj), planes(z)) <= 1e-13, "jit");
    const [tv, zv] = vmap((x: Array) => SL.schur(x, "complex"))(a);
    for (let b = 0; b < 3; b++) {
      const [ts, zs] = SL.schur(ops.reshape(ops.slice(a, [b, 0, 0], [b + 1, 4, 4]), [4, 4]), "complex");
      assert.ok(maxDiff(slice(planes(tv), b, 4), planes(ts)) <= 1e-13, `vmap T[${b}]`);
      assert.ok(maxDiff(slice(planes(zv), b, 4), planes(zs)) <= 1e-13, `vmap Z[${b}]`);
    }
    const [tl, zl] = laxLinalg.schur(a);
    assert.ok(maxDiff(planes(tl), planes(t)) === 0 && maxDiff(planes(zl), planes(z)) === 0, "lax.linalg.schur");
    assert.equal(laxLinalg.schur(a, { computeSchurVectors: false }).length, 1);
  }));

test("hessenberg: H and Q vs SciPy's (LAPACK gehrd convention), H upper Hessenberg, A = Q H Q^H", () =>
  withX64(() => {
    for (const c of fx.hessenberg) {
      const a = fromFx(c.a),
        n = c.a.shape[0];
      const [h, q] = SL.hessenberg(a, true) as [Array, Array];
      const [hp, qp] = [planes(h), planes(q)];
      assert.ok(maxDiff(hp, fxPlanes(c.h)) <= 1e-12 * maxAbs(hp), `${c.name}: H vs scipy`);
      assert.ok(maxDiff(qp, fxPlanes(c.q)) <= 1e-12, `${c.name}: Q vs scipy`);
      for (let i = 2; i < n; i++) for (let j = 0; j < i - 1; j++) assert.equal(hp.re[i * n + j], 0);
      assert.ok(maxDiff(zTzH(hp, qp, n), fxPlanes(c.a)) <= 1e-13 * n * maxAbs(hp), `${c.name}: A = Q H Q^H`);
      const hOnly = SL.hessenberg(a) as Array;
      assert.ok(maxDiff(planes(hOnly), hp) === 0, `${c.name}: calcQ=false gives H`);
    }
  }));

test("sqrtm: vs scipy.linalg.sqrtm (SPD, general, negative eigenvalues -> complex, singular), R @ R = A, jit", () =>
  withX64(() => {
    for (const c of fx.sqrtm) {
      const a = fromFx(c.a);
      const r = SL.sqrtm(a);
      assert.equal(r.dtype, "complex128", c.name);
      const rp = planes(r);
      assert.ok(
        maxDiff(rp, fxPlanes(c.r)) <= 1e-10 * maxAbs(rp),
        `${c.name}: vs scipy (${maxDiff(rp, fxPlanes(c.r))})`,
      );
      const rr = planes(
        ops.dotGeneral(r, r, [
          [[1], [0]],
          [[], []],
        ]),
      );
      assert.ok(maxDiff(rr, fxPlanes(c.a)) <= 1e-12 * maxAbs(fxPlanes(c.a)), `${c.name}: R @ R = A`);
      assert.ok(maxDiff(planes(jit((x: Array) => SL.sqrtm(x))(a)), rp) <= 1e-13, `${c.name}: jit`);
    }
  }));

test("sqrtm and funm batch: leading dims and vmap agree with a loop of slices", () =>
  withX64(() => {
    const a = fromFx(fx.schur.find((x) => x.name === "batch")!.a);
    const whole = planes(SL.sqrtm(a)),
      mapped = planes(vmap((x: Array) => SL.sqrtm(x))(a));
    const fm = planes(vmap((x: Array) => SL.funm(x, ops.exp) as Array)(a));
    for (let b = 0; b < 3; b++) {
      const one = ops.reshape(ops.slice(a, [b, 0, 0], [b + 1, 4, 4]), [4, 4]);
      const r = planes(SL.sqrtm(one));
      assert.ok(maxDiff(slice(whole, b, 4), r) <= 1e-13 && maxDiff(slice(mapped, b, 4), r) <= 1e-13, `sqrtm [${b}]`);
      assert.ok(maxDiff(slice(fm, b, 4), planes(SL.funm(one, ops.exp) as Array)) <= 1e-13, `funm [${b}]`);
    }
  }));

test("funm: funm(A, exp) vs scipy's expm, funm(A, sin) vs scipy's funm; disp=false gives the error estimate", () =>
  withX64(() => {
    for (const c of fx.funm) {
      const a = fromFx(c.a);
      const e = planes(SL.funm(a, ops.exp) as Array);
      assert.ok(maxDiff(e, fxPlanes(c.exp)) <= 1e-9 * maxAbs(e), `${c.name}: exp (${maxDiff(e, fxPlanes(c.exp))})`);
      const [s, err] = SL.funm(a, ops.sin, false) as [Array, Array];
      assert.ok(maxDiff(planes(s), fxPlanes(c.sin)) <= 1e-9 * maxAbs(planes(s)), `${c.name}: sin`);
      const ev = Number(err.item());
      assert.ok(ev > 0 && ev <= 1, `${c.name}: err estimate ${ev} in (0, 1]`);
    }
  }));

test("rsf2csf: SciPy's real Schur pairs give SciPy's complex pairs; on jaxts's own schur it matches output='complex' structure", () =>
  withX64(() => {
    for (const c of fx.rsf2csf) {
      const [tc, zc] = SL.rsf2csf(fromFx(c.t), fromFx(c.z));
      assert.equal(tc.dtype, "complex128");
      assert.ok(maxDiff(planes(tc), fxPlanes(c.tc)) <= 1e-12 * maxAbs(planes(tc)), `${c.name}: T`);
      assert.ok(maxDiff(planes(zc), fxPlanes(c.zc)) <= 1e-12, `${c.name}: Z`);
      const s = fx.schur.find((x) => x.name === c.name)!;
      const n = s.a.shape[0];
      const [t2, z2] = SL.rsf2csf(...(SL.schur(fromFx(s.a)) as [Array, Array]));
      checkSchur(fxPlanes(s.a), planes(t2), planes(z2), n, fxPlanes(s.w), 0, true, 1e-13 * n, `${c.name}: own pair`);
    }
    const c = fx.schur.find((x) => x.name === "batch")!;
    const [t, z] = SL.schur(fromFx(c.a));
    const [tb, zb] = SL.rsf2csf(t, z);
    const [tv, zv] = vmap((u: Array, v: Array) => SL.rsf2csf(u, v))(t, z);
    assert.ok(maxDiff(planes(tv), planes(tb)) === 0 && maxDiff(planes(zv), planes(zb)) === 0, "vmap = batched");
    for (let b = 0; b < 3; b++)
      checkSchur(
        slice(fxPlanes(c.a), b, 4),
        slice(planes(tb), b, 4),
        slice(planes(zb), b, 4),
        4,
        fxPlanes(c.w),
        4 * b,
        true,
        1e-12,
        `batch [${b}]`,
      );
  }));

test("errors: non-square input, a wrong output string, blocksize, and differentiation name the function", () =>
  withX64(() => {
    const rect = array(
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
      { dtype: "float64" },
    );
    assert.throws(
      () => SL.schur(rect),
      /scipy\.linalg\.schur: expected a \(batch of\) square matrix.*\[2, 3\]|scipy\.linalg\.schur: expected .*2,\s*3/,
    );
    assert.throws(() => SL.hessenberg(rect), /scipy\.linalg\.hessenberg: expected/);
    assert.throws(() => SL.sqrtm(rect), /scipy\.linalg\.sqrtm: expected/);
    const sq = array(
      [
        [1, 2],
        [3, 4],
      ],
      { dtype: "float64" },
    );
    assert.throws(() => SL.schur(sq, "quasi"), /scipy\.linalg\.schur: output must be "real" or "complex", got "quasi"/);
    assert.throws(() => SL.sqrtm(sq, 64), /scipy\.linalg\.sqrtm: only blocksize=1/);
    assert.throws(
      () => SL.funm(array([[[1]]], { dtype: "float64" }), ops.exp),
      /scipy\.linalg\.funm: expected a square matrix \(2-D/,
    );
    assert.throws(
      () => grad((x: Array) => ops.reduceSum(SL.schur(x)[0], [0, 1]))(sq),
      /schur: the Schur \/ Hessenberg decomposition has no derivative/,
    );
    assert.throws(
      () => laxLinalg.schur(array([1, 2], { dtype: "float64" })),
      /schur: requires square matrices \[\.\.\., n, n\], got f64\[2\]|lax\.linalg\.schur/,
    );
  }));
