/** @file jnp.linalg: norm, inv, solve, det, slogdet, cholesky, qr, svd, eigh, .... */
export {};
