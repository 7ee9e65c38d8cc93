/** @file The jaxts package entry: JAX's API (jax.*) plus the numpy, lax, scipy, nn, random and tree namespaces. */
import "./backends/interpreter/interpreter.js";
import "./backends/onnx/onnx-backend.js";
import { loweringSummary } from "./backends/onnx/onnx-backend.js";
import { setLoweringSummary } from "./transforms/api.js";
import "./numpy/methods.js";

export { config } from "./core/config.js";
export { Array } from "./core/array.js";
export type { ArrayLike, Index, Slice } from "./core/array.js";
export type { DType } from "./core/dtype.js";
export { finfo } from "./core/dtype.js";
export { ShapedArray } from "./core/aval.js";
export { ClosedJaxpr, Jaxpr } from "./core/jaxpr.js";
export { UnexpectedTracerError, ConcretizationTypeError } from "./core/trace.js";
export { FloatingPointError, OutOfMemoryError } from "./core/errors.js";
export { type CompileLogSink, setCompileLogSink } from "./core/compile-log.js";
export {
  jvp,
  linearize,
  vjp,
  grad,
  valueAndGrad,
  jacfwd,
  jacrev,
  hessian,
  vmap,
  jit,
  makeJaxpr,
  evalShape,
  ShapeDtypeStruct,
  clearCaches,
} from "./transforms/api.js";
export type { Jitted, Lowered, GradOpts, VmapOpts, JitOpts, VjpOpts } from "./transforms/api.js";
export type { Argnums, DiffArgs, GradOf, Jacobian } from "./transforms/api-types.js";
export type { PyTree, Tangent } from "./core/pytree-types.js";
export { customJvp, customVjp } from "./transforms/custom-derivatives.js";
export { checkpoint, remat, checkpointPolicies, checkpointName } from "./transforms/checkpoint.js";
export * as numpy from "./numpy/public.js";
export * as lax from "./lax/index.js";
export * as scipy from "./scipy/index.js";
export * as nn from "./nn/index.js";
export * as random from "./random/public.js";
export * as optim from "./optim/public.js";
export * as profiler from "./profiler/index.js";
export { save, load, serialize, deserialize, exportOnnx, saveSharded, loadSharded } from "./io/index.js";
export * as tree from "./core/tree-public.js";
export { HOST_DEVICE } from "./core/array-impl.js";
export type { Device } from "./core/array-impl.js";
export { devices, localDevices, deviceCount, localDeviceCount, makeMesh } from "./parallel/mesh.js";
export * as sharding from "./parallel/sharding-namespace.js";
export { shardMap } from "./parallel/shard-map.js";
// jit with shardings: the parallel layer partitions jit calls over a mesh (registers its hook with jit)
import "./parallel/gspmd.js";
import "./parallel/gspmd-eager.js";
export { pmap } from "./parallel/pmap.js";
export { autoShard } from "./parallel/auto-shard.js";
export type {
  AutoShardOpts,
  AutoShardResult,
  AutoShardPlan,
  AutoShardEstimate,
  ArgRole,
} from "./parallel/auto-shard.js";
export { calibrateAutoShard, type CalibrateOpts } from "./parallel/auto-shard-calibrate.js";
export type { MachineModel, CollectiveEstimate } from "./parallel/auto-shard-cost.js";
export { xmap, setMesh } from "./parallel/xmap.js";
export {
  devicePut,
  devicePutSharded,
  devicePutReplicated,
  makeArrayFromCallback,
  addressableData,
} from "./parallel/device-put.js";
export { makeArrayFromProcessLocalData, makeArrayFromSingleDeviceArrays } from "./parallel/global-arrays.js";
export * as debug from "./parallel/debug.js";
export * as distributed from "./parallel/distributed-namespace.js";
export * as multihostUtils from "./parallel/multihost-utils.js";
export { processIndex, processCount } from "./parallel/distributed.js";
export type { ShardMapOpts, SpecTree } from "./parallel/shard-map.js";
export type { PmapOpts } from "./parallel/pmap.js";
/** The device runtime: runtimeDevice(id).memoryStats(), device programs, launch / launchSync, lastLaunchTimeline. */
export * as runtime from "./runtime/index.js";

setLoweringSummary(loweringSummary);

import { allPrimitives as registeredPrimitives } from "./core/primitive.js";
import { guardComplexOperands } from "./primitives/complex.js";
// every primitive without complex rules refuses complex operands clearly (see primitives/complex.ts)
guardComplexOperands(registeredPrimitives());
