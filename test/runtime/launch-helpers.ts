/** @file Shared helpers of the device-runtime launch tests: AllReduce programs over ranks and device buffers filled with values. */
import { GraphBuilder, type DType as GDType } from "../../src/backends/onnx/graph-builder.js";
import type { DType } from "../../src/core/dtype.js";
import {
  DeviceBuffer,
  deviceProgram,
  deviceRuntimeUnavailable,
  runtimeDevice,
  type DeviceProgram,
} from "../../src/runtime/index.js";

export const skip = deviceRuntimeUnavailable() ?? false;
export const DOMAIN = "jaxts.collectives";
export const ids = (n: number) => [...Array(n).keys()];

/** An AllReduce node of g over ranks 0..n-1 of mesh axis 'x' (reduce: 0 sum, 1 max, 2 min); its output. */
export function psumNode(g: GraphBuilder, x: string, n: number, reduce = 0): string {
  return g.addNode(
    "AllReduce",
    [x],
    1,
    { groups: ids(n), group_size: n, reduce, label: "psum", axes: "mesh axis 'x'" },
    DOMAIN,
  )[0];
}

/** y = AllReduce(x) over ranks 0..n-1 (x: dtype[len], len null = dynamic), after `work` matmuls of x's outer product. */
export function allReduceProgram(n: number, dtype: DType, len: number | null, reduce = 0, work = 0): DeviceProgram {
  const name = `all_reduce_${n}_${dtype}_${len}_${reduce}_${work}`;
  const g = new GraphBuilder(name);
  const x = g.addInput("x", dtype as GDType, [len]);
  let v = x;
  if (work) {
    // a little compute before the collective: m = x x^T, then m m ... (values unused besides a zero-weight add)
    const col = g.op("Unsqueeze", [x, g.int64s([1])]);
    let m = g.op("MatMul", [col, g.op("Transpose", [col], { perm: [1, 0] })]);
    for (let i = 0; i < work; i++) m = g.op("MatMul", [m, m]);
    v = g.op("Add", [x, g.op("Mul", [g.op("ReduceSum", [m], { keepdims: 0 }), g.scalar("float32", 0)])]);
  }
  const y = psumNode(g, v, n, reduce);
  g.addOutput(g.op("Identity", [y]), dtype as GDType, [len]);
  const model = g.toModelBytes();
  return deviceProgram(
    model,
    {
      name,
      inputNames: ["x"],
      inputDTypes: [dtype],
      outputNames: g.outputNames,
      outputDTypes: [dtype],
      outputShapes: [[len ?? 0]],
    },
    n,
  );
}

export function filled(device: number, dtype: DType, vals: number[], shape: number[] = [vals.length]): DeviceBuffer {
  const b = DeviceBuffer.alloc(runtimeDevice(device), dtype, shape);
  vals.forEach((v, i) => {
    (b.data as unknown as (number | bigint)[])[i] = dtype === "int64" ? BigInt(v) : v;
  });
  return b;
}
