/** @file jax.nn: activations, glu, softmax, one-hot, standardize, dot-product attention, initializers. */
export * from "./functions-public.js";
export * from "./attention.js";
export * as initializers from "./initializers-public.js";
