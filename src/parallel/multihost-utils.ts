/** @file jax.experimental.multihost_utils: processAllgather and syncGlobalDevices (MPI across processes). */
export { processAllgather, syncGlobalDevices } from "./distributed.js";
