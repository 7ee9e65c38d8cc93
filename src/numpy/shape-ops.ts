/** @file jnp shape manipulation (reshape, transpose, concatenate, stack, split, pad, ...). */
export {};
