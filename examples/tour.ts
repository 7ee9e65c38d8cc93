/** @file A short tour of jaxts for newcomers: arrays, a jaxpr, a gradient, vmap, jit and random (what `npm start` runs). */
import * as jax from "../src/index.js";
import { numpy as jnp, random, type Array } from "../src/index.js";

const x = jnp.array(
  [
    [1, 2, 3],
    [4, 5, 6],
  ],
  { dtype: "float32" },
);
console.log("x =", x.toString());
console.log(
  "x.T.shape =",
  x.T.shape,
  " x.sum(0) =",
  x.sum(0).toString(),
  " x.get(':', '1:') =",
  x.get(":", "1:").toString(),
);

// a function of arrays, its jaxpr, its gradient
const f = (w: Array): Array => jnp.sum(jnp.tanh(jnp.multiply(w, w)));
console.log("\nmakeJaxpr(f)(x):\n" + jax.makeJaxpr(f)(x).toString());
console.log("\nf(x) =", f(x).toString());
console.log("grad(f)(x) =", jax.grad(f)(x).toString());

// per-example gradients with vmap, compiled with jit
const perExample = jax.jit(jax.vmap(jax.grad((r: Array) => jnp.sum(jnp.sin(r)))));
console.log("\njit(vmap(grad(sum(sin))))(x) =", perExample(x).toString());

// random numbers bit-exact with JAX
const key = random.PRNGKey(0);
console.log("\nrandom.normal(PRNGKey(0), [3]) =", random.normal(key, [3]).toString());

// a small computation: least squares by gradient descent on y = 2a - b + 0.5
const A = jnp.array(
  [
    [1, 0],
    [0, 1],
    [1, 1],
    [2, -1],
  ],
  { dtype: "float32" },
);
const y = jnp.array([2.5, -0.5, 1.5, 5.5], { dtype: "float32" });
type Params = { w: Array; b: Array };
const loss = (p: Params) => jnp.sum(jnp.square(jnp.subtract(jnp.add(jnp.matmul(A, p.w), p.b), y)));
const step = jax.jit((p: Params): Params => {
  const g = jax.grad(loss)(p);
  return { w: p.w.sub(g.w.mul(0.05)), b: p.b.sub(g.b.mul(0.05)) };
});
let params: Params = { w: jnp.zeros([2]), b: jnp.zeros([]) };
for (let i = 0; i < 300; i++) params = step(params);
console.log("\nfitted w =", params.w.toString(), " b =", params.b.toString(), " loss =", loss(params).toString());
