/** @file jnp reductions and statistics (sum, mean, var, argmax, cumsum, ...). */
export {};
