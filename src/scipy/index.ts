/** @file The jax.scipy namespace: special functions, statistics distributions, linalg, signal, integrate, optimize. */
export * as special from "./special-public.js";
export * as stats from "./stats.js";
export * as linalg from "./linalg.js";
export * as signal from "./signal.js";
export * as integrate from "./integrate.js";
export * as optimize from "./optimize.js";
