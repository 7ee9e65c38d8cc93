/** @file The jax.numpy namespace (jnp). */
export { array, asarray } from "./core.js";
export * from "./elementwise.js";
export * from "./reductions.js";
export * from "./creation.js";
export * from "./shape-ops.js";
export { pad, resize, append, insert, deleteItems as delete, trimZeros } from "./shape-pad.js";
export * from "./indexing.js";
export * from "./sorting.js";
export * from "./linear.js";
export * as linalg from "./linalg-public.js";
export * as fft from "./fft-public.js";
export { angle, complex } from "./complex.js";
export * from "./polynomial.js";
export * from "./statistics.js";
export * from "./functional.js";
