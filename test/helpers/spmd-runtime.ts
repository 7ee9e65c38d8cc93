/** @file The SPMD runtime a test process started with (JAXTS_SPMD_RUNTIME, else "auto"): what tests that switch it restore. */
import { config } from "../../src/core/config.js";

/** config.spmdRuntime when this module was first imported (before any test switched it). */
export const INITIAL_SPMD_RUNTIME = config.spmdRuntime;
