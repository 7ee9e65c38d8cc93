/** @file Pure-TypeScript inverse error function emulating XLA/StableHLO's chlo.erf_inv decomposition (Giles' polynomials) in float32 and float64, step by step. */

// JAX lowers lax.erf_inv to chlo.erf_inv; StableHLO's ChloLegalizeToStablehlo
// (erfInv32 / erfInv64, identical to XLA's xla/hlo/builder/lib/math.cc ErfInv32 /
// ErfInv64) expands it into elementwise HLO ops. This file replays those ops
// in the same order, rounding every float32 intermediate with Math.fround.
//
// Bit-exactness caveat: the only transcendental steps are log1p and sqrt. sqrt
// is correctly rounded everywhere; log1p is whatever the backend emits (XLA CPU
// and GPU use their own approximations that are usually, but not always,
// correctly rounded). By default we use Math.log1p rounded to the target
// precision; callers can inject a different log1p.

const f = Math.fround;

/** Float32 coefficients for w < 5 (w = -log1p(-x*x), polynomial in w - 2.5), highest degree first. */
export const ERF_INV_F32_W_LT_5: readonly number[] = [
  2.81022636e-8, 3.43273939e-7, -3.5233877e-6, -4.39150654e-6, 0.00021858087, -0.00125372503, -0.00417768164,
  0.246640727, 1.50140941,
].map(f);

/** Float32 coefficients for w >= 5 (polynomial in sqrt(w) - 3), highest degree first. */
export const ERF_INV_F32_W_GE_5: readonly number[] = [
  -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
  1.00167406, 2.83297682,
].map(f);

/** Float64 coefficients for w < 6.25 (polynomial in w - 3.125), 23 terms, highest degree first. */
export const ERF_INV_F64_W_LT_6_25: readonly number[] = [
  -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
  -1.333171662854620906e-16, 2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
  -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
  1.051212273321532285e-9, -4.1126339803469836976e-9, -2.9070369957882005086e-8, 4.2347877827932403518e-7,
  -1.3654692000834678645e-6, -1.3882523362786468719e-5, 0.0001867342080340571352, -0.00074070253416626697512,
  -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356,
];

/** Float64 coefficients for 6.25 <= w < 16 (polynomial in sqrt(w) - 3.25), 19 terms, highest degree first. */
export const ERF_INV_F64_W_LT_16: readonly number[] = [
  2.2137376921775787049e-9, 9.0756561938885390979e-8, -2.7517406297064545428e-7, 1.8239629214389227755e-8,
  1.5027403968909827627e-6, -4.013867526981545969e-6, 2.9234449089955446044e-6, 1.2475304481671778723e-5,
  -4.7318229009055733981e-5, 6.8284851459573175448e-5, 2.4031110387097893999e-5, -0.0003550375203628474796,
  0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066, -0.0037512085075692412107,
  0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635,
];

/** Float64 coefficients for w >= 16 (polynomial in sqrt(w) - 5), 17 terms, highest degree first. */
export const ERF_INV_F64_W_GE_16: readonly number[] = [
  -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-9, -3.7894654401267369937e-9,
  7.6157012080783393804e-9, -1.4960026627149240478e-8, 2.9147953450901080826e-8, -6.7711997758452339498e-8,
  2.2900482228026654717e-7, -9.9298272942317002539e-7, 4.5260625972231537039e-6, -1.9681778105531670567e-5,
  7.5995277030017761139e-5, -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
  4.8499064014085844221,
];

/**
 * Correctly rounded float32 fused multiply-add of float32 values: a*b is exact in float64 (48 bits), the sum's
 * rounding error is recovered exactly (TwoSum), and a float32 tie hit by the float64 sum is broken by that error.
 */
export function fmaF32(a: number, b: number, c: number): number {
  const prod = a * b;
  const s = prod + c;
  const bb = s - prod;
  const err = prod - (s - bb) + (c - bb);
  const r = f(s);
  if (err === 0 || r === s) return r;
  // is s exactly halfway between r and its float32 neighbour toward s?
  const other = f(r + 2 * (s - r));
  if (other !== r && s - r === (other - r) / 2) return err > 0 === other > r ? other : r;
  return r;
}

/** A log1p implementation for one precision: takes and returns a value of that precision. */
export type Log1pFn = (x: number) => number;

/** Default float32 log1p: Math.log1p of the float32 input, rounded to float32. */
export const log1pF32: Log1pFn = (x) => f(Math.log1p(x));

/**
 * erfinv in float32, replaying chlo.erf_inv's f32 expansion:
 *   w = -log1p(x * -x); lt = w < 5
 *   w = lt ? w - 2.5 : sqrt(w) - 3
 *   p = c[0]; for i in 1..8: p = c[i] + p * w     (c chosen per element by lt)
 *   result = |x| == 1 ? x * inf : p * x
 * every operation rounded to float32. The input is rounded to float32 first.
 */
export function erfInvF32(x: number, log1p: Log1pFn = log1pF32): number {
  x = f(x);
  const minusXSquared = f(x * -x);
  let w = -log1p(minusXSquared);
  const lt = w < 5;
  const c = lt ? ERF_INV_F32_W_LT_5 : ERF_INV_F32_W_GE_5;
  w = lt ? f(w - 2.5) : f(f(Math.sqrt(w)) - 3);
  let p = c[0]!;
  // XLA's CPU backend contracts each Horner step into a fused multiply-add (seen: jax.random.normal(PRNGKey(0), (3,)))
  for (let i = 1; i < 9; i++) p = fmaF32(p, w, c[i]!);
  const result = f(p * x);
  return Math.abs(x) === 1 ? x * Infinity : result;
}

/**
 * erfinv in float64, replaying chlo.erf_inv's f64 expansion (three regimes
 * split at w = 6.25 and w = 16, w = -log1p(x * -x)).
 */
export function erfInvF64(x: number, log1p: Log1pFn = Math.log1p): number {
  const minusXSquared = x * -x;
  let w = -log1p(minusXSquared);
  const lt625 = w < 6.25;
  const lt16 = w < 16;
  const coefficient = (i: number): number => {
    let c = ERF_INV_F64_W_LT_6_25[i]!;
    if (i < 19) c = lt625 ? c : ERF_INV_F64_W_LT_16[i]!;
    if (i < 17) c = lt16 ? c : ERF_INV_F64_W_GE_16[i]!;
    return c;
  };
  const sqrtW = Math.sqrt(w);
  w = lt625 ? w - 3.125 : sqrtW - (lt16 ? 3.25 : 5.0);
  let p = coefficient(0);
  for (let i = 1; i < 17; i++) p = coefficient(i) + p * w;
  for (let i = 17; i < 19; i++) if (lt16) p = coefficient(i) + p * w;
  for (let i = 19; i < 23; i++) if (lt625) p = coefficient(i) + p * w;
  const result = p * x;
  return Math.abs(x) === 1 ? x * Infinity : result;
}
