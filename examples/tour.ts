/** @file A short tour of jaxts for newcomers: arrays, a jaxpr, a gradient, vmap and jit (what `npm start` runs). */
import * as jax from "../src/index.js";
import { numpy as jnp, lax, type Array } from "../src/index.js";

const x = jnp.array([[1, 2, 3], [4, 5, 6]], { dtype: "float32" });
console.log("x =", x.toString());
console.log("x.T.shape =", x.T.shape, " x.dtype =", x.dtype);

// a function of arrays, its jaxpr, its gradient
const f = (w: Array): Array => lax.reduceSum(lax.tanh(lax.mul(w, w)), [0, 1]);
console.log("\nmakeJaxpr(f)(x):\n" + jax.makeJaxpr(f)(x).toString());
console.log("\nf(x) =", f(x).toString());
console.log("grad(f)(x) =", (jax.grad(f)(x) as Array).toString());

// per-example gradients with vmap, compiled with jit
const perExample = jax.jit(jax.vmap(jax.grad((r: Array) => lax.reduceSum(lax.sin(r), [0]))));
console.log("\njit(vmap(grad(sum(sin))))(x) =", perExample(x).toString());

// a small computation: least squares by gradient descent on y = 2a - b + 0.5
const A = jnp.array([[1, 0], [0, 1], [1, 1], [2, -1]], { dtype: "float32" });
const y = jnp.array([2.5, -0.5, 1.5, 5.5], { dtype: "float32" });
const loss = (p: { w: Array; b: Array }) => {
  const pred = lax.add(lax.dotGeneral(A, p.w, [[[1], [0]], [[], []]]), p.b);
  const r = lax.sub(pred, y);
  return lax.reduceSum(lax.mul(r, r), [0]);
};
const step = jax.jit((p: { w: Array; b: Array }) => {
  const g = jax.grad(loss)(p) as { w: Array; b: Array };
  return { w: lax.sub(p.w, lax.mul(g.w, 0.05)), b: lax.sub(p.b, lax.mul(g.b, 0.05)) };
});
let params = { w: jnp.array([0, 0], { dtype: "float32" }), b: jnp.array(0, { dtype: "float32" }) };
for (let i = 0; i < 300; i++) params = step(params);
console.log("\nfitted w =", params.w.toString(), " b =", params.b.toString(), " loss =", loss(params).toString());
