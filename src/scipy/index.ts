/** @file The jax.scipy namespace: special functions and statistics distributions. */
export * as special from "./special-public.js";
export * as stats from "./stats.js";
