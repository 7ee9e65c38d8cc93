/** @file jax.distributed: initialize, shutdown and isInitialized. */
export { initialize, isInitialized, shutdown, type InitializeOpts } from "./distributed.js";
