/**
 * @file jax.exportOnnx: writes a jitted function as a standalone ONNX model that plain ONNX Runtime (any runtime:
 * browser, mobile, server) loads and runs. Inputs are named arg0..argN (flattened argument leaves, in order) and
 * outputs out0..outM (flattened output leaves); closed-over arrays are embedded as constants.
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { Array } from "../core/array.js";
import { ArrayImpl } from "../core/array-impl.js";
import { type Atom, Jaxpr, Literal, Var } from "../core/jaxpr.js";
import { flatten } from "../core/tree.js";
import { compileJaxpr } from "../compiler/compile.js";
import { lowerFunOptions } from "../transforms/lower-fun.js";
import { installProgramLowerings } from "../lowerings/index.js";
import {
  type ModelProto,
  type NodeProto,
  type ValueInfoProto,
  decodeModel,
  encodeModel,
} from "../backends/onnx/onnx-proto.js";
import { makeJaxpr } from "../transforms/api.js";

export interface ExportedModel {
  /** The serialized ONNX model. */
  bytes: Uint8Array;
  inputNames: string[];
  outputNames: string[];
}

/** Builds the standalone ONNX model of f at the example arguments (their shapes and dtypes, not values). */
export function toOnnx(f: (...args: never[]) => unknown, ...exampleArgs: unknown[]): ExportedModel {
  const cj = makeJaxpr(f)(...exampleArgs);
  const [leaves] = flatten(exampleArgs);
  void leaves;
  // embed closed-over constants as literals so the model needs only the arguments
  const sub = new Map<Var, Atom>();
  cj.jaxpr.constvars.forEach((v, i) => {
    const c = cj.consts[i];
    if (!(c instanceof ArrayImpl))
      throw new TypeError("exportOnnx: the function closes over a traced value; export it outside any transformation");
    sub.set(v, new Literal(c));
  });
  const m = (a: Atom): Atom => (a instanceof Var && sub.has(a) ? sub.get(a)! : a);
  const j = new Jaxpr(
    [],
    cj.jaxpr.invars,
    cj.jaxpr.outvars.map(m),
    cj.jaxpr.eqns.map((e) => ({ ...e, inputs: e.inputs.map(m) })),
  );
  installProgramLowerings();
  lowerFunOptions.exporting = true;
  let prog: ReturnType<typeof compileJaxpr>;
  try {
    prog = compileJaxpr(j, { name: "jaxts_export", portable: true });
  } finally {
    lowerFunOptions.exporting = false;
  }
  const onnxSteps = prog.steps.filter((s) => s.kind === "onnx");
  if (prog.steps.length !== 1 || onnxSteps.length !== 1) {
    const why = prog.notes.length ? prog.notes.join("; ") : `${prog.steps.length} program steps`;
    throw new Error(`exportOnnx: the function does not lower to a single ONNX graph (${why})`);
  }
  const step = onnxSteps[0];
  if (step.kind !== "onnx") throw new Error("exportOnnx: internal error");
  const model: ModelProto = decodeModel(step.model);
  const g = model.graph!;
  const oldInputs = new Map((g.input ?? []).map((vi) => [vi.name!, vi]));
  const slotToInput = new Map(step.inputs.map((slot, k) => [slot, step.inputNames[k]]));
  const newInputs: ValueInfoProto[] = [];
  const prelude: NodeProto[] = [];
  const inputNames: string[] = [];
  j.invars.forEach((v, k) => {
    const name = `arg${k}`;
    inputNames.push(name);
    const slot = prog.inSlots[k];
    const inner = slotToInput.get(slot);
    const vi = inner ? oldInputs.get(inner)! : valueInfo(v, step.model, name);
    newInputs.push({ ...vi, name });
    if (inner) prelude.push({ opType: "Identity", input: [name], output: [inner], name: `export_in_${k}` });
  });
  const outputNames: string[] = [];
  const newOutputs: ValueInfoProto[] = [];
  const post: NodeProto[] = [];
  const outVi = new Map((g.output ?? []).map((vi) => [vi.name!, vi]));
  prog.outs.forEach((o, k) => {
    const name = `out${k}`;
    outputNames.push(name);
    if (typeof o !== "number")
      throw new Error(
        `exportOnnx: output ${k} is a constant (${o.aval.str()}); return values computed from the arguments`,
      );
    const idx = step.outputs.indexOf(o);
    if (idx < 0) throw new Error(`exportOnnx: output ${k} is not produced by the graph`);
    const inner = step.outputNames[idx];
    newOutputs.push({ ...outVi.get(inner)!, name });
    post.push({ opType: "Identity", input: [inner], output: [name], name: `export_out_${k}` });
  });
  g.input = newInputs;
  g.output = newOutputs;
  g.node = [...prelude, ...(g.node ?? []), ...post];
  model.producerName = "jaxts";
  return { bytes: encodeModel(model), inputNames, outputNames };
}

/** An input the graph never reads still gets a declared type (shape and dtype of the argument). */
function valueInfo(v: Var, _model: Uint8Array, name: string): ValueInfoProto {
  const ONNX: Record<string, number> = {
    float32: 1,
    uint8: 2,
    int8: 3,
    uint16: 4,
    int16: 5,
    int32: 6,
    int64: 7,
    bool: 9,
    float16: 10,
    float64: 11,
    uint32: 12,
    uint64: 13,
    bfloat16: 16,
  };
  return {
    name,
    type: { tensorType: { elemType: ONNX[v.aval.dtype], shape: { dim: v.aval.shape.map((d) => ({ dimValue: d })) } } },
  } as ValueInfoProto;
}

/** jax.exportOnnx(path, f, ...exampleArgs): writes the model atomically (temp file + rename). */
export function exportOnnx(path: string, f: (...args: never[]) => unknown, ...exampleArgs: unknown[]): ExportedModel {
  const m = toOnnx(f, ...exampleArgs);
  const tmp = `${path}.tmp-${process.pid}-${Date.now()}`;
  try {
    const fd = openSync(tmp, "w");
    try {
      writeSync(fd, m.bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  return m;
}
export type { Array };
