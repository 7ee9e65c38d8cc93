/**
 * @file The lax-level wrappers (see bind-ops.ts) with the core primitive definitions loaded, so any importer can bind
 * them; the definitions import bind-ops.ts, never this module, which keeps the import graph acyclic.
 */
import "./elementwise.js";
import "./structural.js";
import "./reductions.js";
import "./indexing.js";
import "./complex.js";
import "./fft.js";
import "./eig.js";
import "./complex-lower.js";
export * from "./bind-ops.js";
export { real, imag, conj, complexOf } from "./complex.js";
export { fft, type FftType } from "./fft.js";
export { eig } from "./eig.js";
export {
  besselI0eOp as besselI0e,
  besselI1eOp as besselI1e,
  betaincOp as betainc,
  igammaGradAOp as igammaGradA,
  igammaOp as igamma,
  igammacOp as igammac,
  zetaOp as zeta,
} from "./special.js";
