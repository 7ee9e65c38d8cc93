/** @file jax.nn: activations, softmax, one-hot, standardize, initializers. */
export {};
