/** @file jax.scipy.stats: the distributions jaxts has (norm). */
export * as norm from "./stats-norm-public.js";
