/** @file jnp sorting and searching (sort, argsort, topk, searchsorted, ...). */
export {};
