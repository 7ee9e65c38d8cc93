/** @file jnp elementwise math, comparisons, logical and bitwise functions. */
export {};
