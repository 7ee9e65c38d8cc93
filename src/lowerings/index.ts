/**
 * @file The one table of lowerings written as jaxts programs (JAX's `mlir.lower_fun`): primitives without a direct
 * ONNX form (matrix decompositions, iterative special functions) lower by tracing these programs. They use loops
 * from src/transforms, which sits above src/primitives, so they cannot live in the primitives' definitions; every
 * compiler of jaxprs (the ONNX backend, exportOnnx, per-device shardMap programs) calls installProgramLowerings()
 * explicitly, so a lowering never depends on which library modules a user happened to import.
 */
import type { Primitive } from "../core/primitive.js";
import { polygammaP } from "../primitives/elementwise.js";
import { choleskyP, eighP, luP, qrP, svdP, triangularSolveP } from "../primitives/linalg.js";
import { randomGammaGradP } from "../primitives/random.js";
import { type LoweringProgram, setLowering } from "../transforms/lower-fun.js";
import { eighLowering, qrLowering, svdLowering } from "./linalg-decomp.js";
import { choleskyImpl, luImpl, triangularSolveImpl } from "./linalg.js";
import { setNativeLinalgLowering } from "./linalg-native.js";
import { gammaGradLowering, polygammaLowering } from "./special.js";
import { besselI0eP, besselI1eP, betaincP, igammaGradAP, igammaP, igammacP, zetaP } from "../primitives/special.js";
import {
  besselI0eLowering,
  besselI1eLowering,
  betaincLowering,
  igammaGradALowering,
  igammaLowering,
  igammacLowering,
  zetaLowering,
} from "./special-functions.js";

/** One row: a primitive and the program its ONNX lowering inlines. */
export interface ProgramLoweringRow {
  readonly primitive: Primitive;
  /** Source file of the program (for notes and error messages). */
  readonly file: string;
  install(): void;
}

function row<P extends Record<string, unknown>>(
  primitive: Primitive<P>,
  file: string,
  program: LoweringProgram<P>,
): ProgramLoweringRow {
  return { primitive: primitive as unknown as Primitive, file, install: () => setLowering(primitive, program) };
}
/** A row whose lowering is a native runner's custom op where sessions have it, else `program` (src/lowerings/linalg-native.ts). */
function nativeRow<P extends Record<string, unknown>>(
  primitive: Primitive<P>,
  file: string,
  program: LoweringProgram<P>,
): ProgramLoweringRow {
  return {
    primitive: primitive as unknown as Primitive,
    file,
    install: () => setNativeLinalgLowering(primitive, program),
  };
}

/** Every lowering written as a jaxts program (random_gamma's sits in its definition, src/random/gamma.ts). */
export const PROGRAM_LOWERINGS: readonly ProgramLoweringRow[] = [
  nativeRow(choleskyP, "src/lowerings/linalg.ts", choleskyImpl),
  nativeRow(triangularSolveP, "src/lowerings/linalg.ts", triangularSolveImpl),
  nativeRow(luP, "src/lowerings/linalg.ts", luImpl),
  nativeRow(qrP, "src/lowerings/linalg-decomp.ts", qrLowering),
  nativeRow(eighP, "src/lowerings/linalg-decomp.ts", eighLowering),
  nativeRow(svdP, "src/lowerings/linalg-decomp.ts", svdLowering),
  row(polygammaP, "src/lowerings/special.ts", polygammaLowering),
  row(randomGammaGradP, "src/lowerings/special.ts", gammaGradLowering),
  row(igammaP, "src/lowerings/special-functions.ts", igammaLowering),
  row(igammacP, "src/lowerings/special-functions.ts", igammacLowering),
  row(igammaGradAP, "src/lowerings/special-functions.ts", igammaGradALowering),
  row(betaincP, "src/lowerings/special-functions.ts", betaincLowering),
  row(besselI0eP, "src/lowerings/special-functions.ts", besselI0eLowering),
  row(besselI1eP, "src/lowerings/special-functions.ts", besselI1eLowering),
  row(zetaP, "src/lowerings/special-functions.ts", zetaLowering),
];

let installed = false;
/** Installs every row's lowering into its primitive's `lower` slot (once; later calls do nothing). */
export function installProgramLowerings(): void {
  if (installed) return;
  installed = true;
  for (const r of PROGRAM_LOWERINGS) r.install();
}
