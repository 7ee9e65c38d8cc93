/** @file Type tests of the differentiation API: grad/valueAndGrad overloads (argnums, hasAux), vjp, jvp, linearize, jacobians, checkpoint, custom rules. */
import type { Array } from "../../src/core/array.js";
import type { PyTree, Tangent } from "../../src/core/pytree-types.js";
import * as ops from "../../src/primitives/ops.js";
import { grad, hessian, jacfwd, jacrev, jvp, linearize, valueAndGrad, vjp } from "../../src/transforms/api.js";
import { checkpoint } from "../../src/transforms/checkpoint.js";
import { customJvp, customVjp } from "../../src/transforms/custom-derivatives.js";
import { expectAssignable, expectType } from "./expect.js";

declare const x: Array;
declare const n: number;
type Params = { w: Array; b: Array; layers: { k: Array }[] };
declare const params: Params;
const loss = (p: Params, xs: Array, scale: number): Array => ops.mul(ops.reduceSum(ops.mul(p.w, xs), [0]), scale);
const sq = (a: Array): Array => ops.mul(a, a);

// ------------------------------------------------ grad: argnums picks the argument(s), hasAux adds the aux
expectType<Array>()(grad(sq)(x));
expectType<Array>()(grad(sq)(3)); // JS numbers are accepted wherever an argument is differentiated
expectType<Params>()(grad(loss)(params, x, 2));
expectType<Array>()(grad(loss, { argnums: 1 })(params, x, 2));
expectType<Array>()(grad(loss, { argnums: 2 })(params, x, 2)); // a number argument's gradient is an Array
expectType<[Params, Array]>()(grad(loss, { argnums: [0, 1] })(params, x, 2));
expectType<[Array, Params]>()(grad(loss, { argnums: [1, 0] })(params, x, 2));
expectType<Params | Array | Array>()(grad(loss, { argnums: -1 })(params, x, 2)); // negative: any argument's type
const withAux = (p: Params, xs: Array): [Array, { acc: Array; count: number }] => [
  loss(p, xs, 1),
  { acc: xs, count: 1 },
];
expectType<[Params, { acc: Array; count: Array }]>()(grad(withAux, { hasAux: true })(params, x));
expectType<[[Array], { acc: Array; count: Array }]>()(grad(withAux, { argnums: [1], hasAux: true })(params, x));
// @ts-expect-error hasAux requires f to return [output, aux]
grad(sq, { hasAux: true });
// @ts-expect-error argnums must be numbers
grad(loss, { argnums: "0" });
// @ts-expect-error the differentiated function's arguments are checked
grad(loss)(params, "x", 2);
// @ts-expect-error the old type returned A[0] whatever argnums said: the gradient of argnum 1 is not Params
expectAssignable<Params>(grad(loss, { argnums: 1 })(params, x, 2));

// ------------------------------------------------ valueAndGrad
expectType<[Array, Params]>()(valueAndGrad(loss)(params, x, 2));
expectType<[Array, [Params, Array]]>()(valueAndGrad(loss, { argnums: [0, 1] })(params, x, 2));
expectType<[[Array, { acc: Array; count: Array }], Array]>()(
  valueAndGrad(withAux, { argnums: 1, hasAux: true })(params, x),
);
expectType<[Array, Array]>()(valueAndGrad((_a: Array) => n * 2)(x)); // a JS-number output comes back as an Array
// @ts-expect-error hasAux requires f to return [output, aux]
valueAndGrad(loss, { hasAux: true });

// ------------------------------------------------ vjp / jvp / linearize
type Two = { y: Array; z: Array[] };
const two = (a: Array, p: Params): Two => ({ y: ops.add(a, p.w), z: [a] });
const [out, pullback] = vjp(two, x, params);
expectType<Two>()(out);
expectType<[Array, Params]>()(pullback(out));
// @ts-expect-error the cotangent has the output's structure
pullback(x);
// @ts-expect-error primals must match f's parameters
vjp(two, x, x);
expectType<[Array, Array]>()(jvp(sq, [x], [x]));
const jvpOut = jvp(two, [x, params], [x, params]);
expectType<[Two, Two]>()(jvpOut);
// @ts-expect-error primals are passed as one array (tuple) of arguments
jvp(sq, x, x);
const [lo, lin] = linearize(two, x, params);
expectType<Two>()(lo);
expectType<Two>()(lin(x, params));
// @ts-expect-error the linear map takes one tangent per primal
lin(x);

// ------------------------------------------------ jacobians: the output's structure, each leaf the argnums' structure
expectType<Array>()(jacfwd(sq)(x));
expectType<Array>()(jacrev(sq)(x));
expectType<Array>()(hessian(sq)(x));
expectType<Params>()(jacrev(loss)(params, x, 2));
expectType<{ y: [Array, Params]; z: [Array, Params][] }>()(jacfwd(two, { argnums: [0, 1] })(x, params));
expectType<[Array, Array]>()(
  hessian((a: Array, b: Array) => ops.mul(a, b), { argnums: 0 })(x, x) as unknown as [Array, Array],
);
expectType<[[Array, Array], [Array, Array]]>()(
  hessian((a: Array, b: Array) => ops.mul(a, b), { argnums: [0, 1] })(x, x),
);
// @ts-expect-error jacobians take no hasAux (the implementation has none)
jacrev(sq, { hasAux: true });

// ------------------------------------------------ checkpoint and custom rules keep f's signature
const remat = checkpoint(loss);
expectType<(p: Params, xs: Array, scale: number) => Array>()(remat);
const f = customVjp((a: Array, b: Array): Array => ops.mul(a, b));
f.defvjp(
  (a, b) => [ops.mul(a, b), [a, b]],
  ([a, b], ct) => [ops.mul(ct, b), ops.mul(ct, a)],
);
f.defvjp(
  (a, b) => [ops.mul(a, b), [a, b]],
  // @ts-expect-error bwd returns one cotangent per differentiable argument
  ([a], ct) => [ops.mul(ct, a)],
);
const g = customVjp((k: number, a: Array): Array => ops.mul(a, k), { nondiffArgnums: [0] });
g.defvjp(
  (k, a) => [ops.mul(a, k), k],
  (k, ct) => [ops.mul(ct, k)],
);
expectType<Array>()(g(2, x));
const h = customJvp((a: Array): Array => ops.sin(a));
h.defjvp(([a], [t]) => [ops.sin(a), ops.mul(ops.cos(a), t)]);
// @ts-expect-error the rule returns [output, tangent]
h.defjvp(([a]) => ops.sin(a));

// ------------------------------------------------ PyTree and Tangent
expectAssignable<PyTree>({ a: x, b: [x, null, { c: x }] });
// @ts-expect-error a string is not a pytree of Arrays
expectAssignable<PyTree>({ a: "x" });
expectType<{ a: Array; b: [Array, Array] }>()(null as unknown as Tangent<{ a: number; b: [Array, boolean] }>);
expectType<unknown>()(null as unknown as Tangent<unknown>);
