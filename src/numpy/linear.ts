/** @file jnp products: matmul, dot, tensordot, einsum, outer, kron. */
export {};
