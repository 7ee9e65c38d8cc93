/** @file Re-export of XLA's erf_inv expansion (now owned by the primitives layer, which implements erf_inv with it). */
export * from "../primitives/erf-inv.js";
