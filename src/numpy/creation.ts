/** @file jnp array creation (zeros, ones, full, arange, linspace, eye, ...). */
export {};
