/** @file jax.lax.linalg: the linear-algebra primitives' wrappers. */
import "./lower-linalg.js";
import "./lower-linalg-decomp.js";
export { cholesky, triangularSolve, lu, qr, eigh, svd } from "../primitives/linalg.js";
export type { TriangularSolveOpts } from "../primitives/linalg.js";
