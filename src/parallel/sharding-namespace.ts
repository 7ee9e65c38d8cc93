/** @file The jax.sharding namespace. */
export { Mesh } from "./mesh.js";
export { PartitionSpec, P, NamedSharding, SingleDeviceSharding } from "./sharding.js";
export type { Sharding, SpecEntry, Index } from "./sharding.js";
export { reshard } from "./sharding-constraint.js";
