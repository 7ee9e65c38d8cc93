/** @file The context mesh (jax.set_mesh / sharding.use_mesh) that shardMap defaults to and xmap's axisResources refer to. */
import type { Mesh } from "./mesh.js";

let currentMesh: Mesh | null = null;
/** jax.set_mesh / sharding.use_mesh: the mesh xmap's axisResources refer to and shardMap's default mesh. */
export function setMesh(mesh: Mesh | null): void {
  currentMesh = mesh;
}
export function getMesh(): Mesh | null {
  return currentMesh;
}
