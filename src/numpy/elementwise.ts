/** @file jnp elementwise math, comparisons, logical and bitwise functions (re-exported from topic files). */
export * from "./elementwise-arith.js";
export * from "./elementwise-compare.js";
export * from "./elementwise-misc.js";
