/** @file jax.nn: activations, softmax, one-hot, standardize, initializers. */
export * from "./functions.js";
export * as initializers from "./initializers.js";
