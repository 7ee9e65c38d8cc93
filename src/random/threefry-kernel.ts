/** @file Re-export of the threefry2x32 reference kernel (owned by the primitives layer, which implements the threefry2x32 primitive with it). */
export * from "../primitives/threefry-kernel.js";
