/** @file Typed ONNX graph builder (nodes, inputs/outputs, initializers, subgraphs) and jaxts dtype <-> ONNX/ORT type mappings; serializes to ModelProto bytes. */

import {
  AttributeType,
  TensorDataType,
  encodeModel,
  type AttributeProto,
  type GraphProto,
  type NodeProto,
  type OperatorSetIdProto,
  type TensorProto,
  type TensorDataTypeValue,
  type TypeProto,
  type ValueInfoProto,
} from "./onnx-proto.js";

// ---------------------------------------------------------------------------
// dtypes
// ---------------------------------------------------------------------------

/** jaxts element types. */
export type DType =
  | "bool"
  | "int8"
  | "uint8"
  | "int16"
  | "uint16"
  | "int32"
  | "uint32"
  | "int64"
  | "uint64"
  | "float16"
  | "bfloat16"
  | "float32"
  | "float64";

export const DTYPES: readonly DType[] = [
  "bool",
  "int8",
  "uint8",
  "int16",
  "uint16",
  "int32",
  "uint32",
  "int64",
  "uint64",
  "float16",
  "bfloat16",
  "float32",
  "float64",
];

/** jaxts dtype -> ONNX TensorProto.DataType. */
export const ONNX_DTYPE: Readonly<Record<DType, TensorDataTypeValue>> = {
  bool: TensorDataType.BOOL,
  int8: TensorDataType.INT8,
  uint8: TensorDataType.UINT8,
  int16: TensorDataType.INT16,
  uint16: TensorDataType.UINT16,
  int32: TensorDataType.INT32,
  uint32: TensorDataType.UINT32,
  int64: TensorDataType.INT64,
  uint64: TensorDataType.UINT64,
  float16: TensorDataType.FLOAT16,
  bfloat16: TensorDataType.BFLOAT16,
  float32: TensorDataType.FLOAT,
  float64: TensorDataType.DOUBLE,
};

const FROM_ONNX = new Map<number, DType>(DTYPES.map((d) => [ONNX_DTYPE[d], d]));

/** ONNX TensorProto.DataType -> jaxts dtype (throws for types jaxts lacks, e.g. STRING). */
export function dtypeFromOnnx(code: number): DType {
  const d = FROM_ONNX.get(code);
  if (d === undefined) throw new Error(`graph-builder: unsupported ONNX data type ${code}`);
  return d;
}

/** onnxruntime JS tensor type strings that jaxts uses (ORT-JS has no bfloat16 tensor type). */
export type OrtTensorType =
  | "bool"
  | "int8"
  | "uint8"
  | "int16"
  | "uint16"
  | "int32"
  | "uint32"
  | "int64"
  | "uint64"
  | "float16"
  | "float32"
  | "float64";

/** jaxts dtype -> ORT-JS tensor type; bfloat16 -> null (no ORT-JS representation; see ort-runtime). */
export const ORT_TYPE: Readonly<Record<DType, OrtTensorType | null>> = {
  bool: "bool",
  int8: "int8",
  uint8: "uint8",
  int16: "int16",
  uint16: "uint16",
  int32: "int32",
  uint32: "uint32",
  int64: "int64",
  uint64: "uint64",
  float16: "float16",
  bfloat16: null,
  float32: "float32",
  float64: "float64",
};

/** ORT-JS tensor type string -> jaxts dtype. */
export function dtypeFromOrt(t: string): DType {
  for (const d of DTYPES) if (ORT_TYPE[d] === t) return d;
  throw new Error(`graph-builder: unsupported ORT tensor type '${t}'`);
}

/** Host storage for a dtype: bool -> Uint8Array (0/1), float16/bfloat16 -> Uint16Array (raw bits), int64 -> BigInt64Array. */
export interface HostArrayMap {
  bool: Uint8Array;
  int8: Int8Array;
  uint8: Uint8Array;
  int16: Int16Array;
  uint16: Uint16Array;
  int32: Int32Array;
  uint32: Uint32Array;
  int64: BigInt64Array;
  uint64: BigUint64Array;
  float16: Uint16Array;
  bfloat16: Uint16Array;
  float32: Float32Array;
  float64: Float64Array;
}
export type HostArray = HostArrayMap[DType];

type HostArrayCtor = { new (n: number): HostArray; readonly BYTES_PER_ELEMENT: number };
const HOST_CTOR: Readonly<Record<DType, HostArrayCtor>> = {
  bool: Uint8Array,
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  float16: Uint16Array,
  bfloat16: Uint16Array,
  float32: Float32Array,
  float64: Float64Array,
};

/** Bytes per element of a dtype. */
export function itemSize(dtype: DType): number {
  return HOST_CTOR[dtype].BYTES_PER_ELEMENT;
}

/** Allocate zeroed host storage of the right kind. */
export function allocHostArray<D extends DType>(dtype: D, n: number): HostArrayMap[D] {
  return new HOST_CTOR[dtype](n) as HostArrayMap[D];
}

/** Convert plain JS values into host storage (numbers for float16/bfloat16 must already be raw bits). */
export function toHostArray<D extends DType>(
  dtype: D,
  data: HostArray | ArrayLike<number> | ArrayLike<bigint> | ArrayLike<boolean>,
): HostArrayMap[D] {
  const ctor = HOST_CTOR[dtype];
  if (data instanceof ctor) return data as HostArrayMap[D];
  const out = new ctor(data.length);
  const big = dtype === "int64" || dtype === "uint64";
  for (let i = 0; i < data.length; i++) {
    const v = data[i] as number | bigint | boolean;
    if (big) (out as BigInt64Array)[i] = typeof v === "bigint" ? v : BigInt(Number(v));
    else (out as Float64Array)[i] = Number(v);
  }
  return out as HostArrayMap[D];
}

export function shapeSize(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

// ---------------------------------------------------------------------------
// attributes
// ---------------------------------------------------------------------------

/** A tensor literal (attribute value or initializer). */
export interface TensorLiteral {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: HostArray | ArrayLike<number> | ArrayLike<bigint> | ArrayLike<boolean>;
}

export type TaggedAttr =
  | { readonly kind: "int"; readonly value: number }
  | { readonly kind: "float"; readonly value: number }
  | { readonly kind: "string"; readonly value: string }
  | { readonly kind: "ints"; readonly value: readonly number[] }
  | { readonly kind: "floats"; readonly value: readonly number[] }
  | { readonly kind: "strings"; readonly value: readonly string[] }
  | { readonly kind: "tensor"; readonly value: TensorLiteral }
  | { readonly kind: "graph"; readonly value: GraphBuilder }
  | { readonly kind: "graphs"; readonly value: readonly GraphBuilder[] };

/**
 * Attribute value. Plain forms: number/boolean -> INT (FLOAT when the attribute name is a
 * known ONNX float attribute, see FLOAT_ATTRS), string -> STRING, number[] -> INTS (FLOATS
 * for known float-list names), string[] -> STRINGS, GraphBuilder or { graph } -> GRAPH,
 * { tensor } -> TENSOR. Use `attr.*` to force a type; a non-integer number for an
 * attribute not known to be FLOAT throws.
 */
export type AttrValue =
  | number
  | boolean
  | string
  | readonly number[]
  | readonly string[]
  | GraphBuilder
  | TaggedAttr
  | { readonly tensor: TensorLiteral }
  | { readonly graph: GraphBuilder };

/** ONNX attribute names whose type is FLOAT in every standard op that has them. */
export const FLOAT_ATTRS: ReadonlySet<string> = new Set([
  "alpha",
  "beta",
  "gamma",
  "epsilon",
  "bias",
  "lambd",
  "momentum",
  "spatial_scale",
  "extrapolation_value",
  "cubic_coeff_a",
  "value_float",
  "mean",
  "scale",
  "high",
  "low",
  "seed",
]);
/** ONNX attribute names whose type is FLOATS. */
export const FLOATS_ATTRS: ReadonlySet<string> = new Set(["value_floats", "scales", "coefficients"]);

export const attr = {
  int: (value: number): TaggedAttr => ({ kind: "int", value }),
  float: (value: number): TaggedAttr => ({ kind: "float", value }),
  string: (value: string): TaggedAttr => ({ kind: "string", value }),
  ints: (value: readonly number[]): TaggedAttr => ({ kind: "ints", value }),
  floats: (value: readonly number[]): TaggedAttr => ({ kind: "floats", value }),
  strings: (value: readonly string[]): TaggedAttr => ({ kind: "strings", value }),
  tensor: (dtype: DType, shape: readonly number[], data: TensorLiteral["data"]): TaggedAttr => ({
    kind: "tensor",
    value: { dtype, shape, data },
  }),
  graph: (value: GraphBuilder): TaggedAttr => ({ kind: "graph", value }),
  graphs: (value: readonly GraphBuilder[]): TaggedAttr => ({ kind: "graphs", value }),
};

const utf8 = new TextEncoder();

function normalizeAttr(name: string, v: AttrValue): TaggedAttr {
  if (v instanceof GraphBuilder) return { kind: "graph", value: v };
  if (typeof v === "boolean") return { kind: "int", value: v ? 1 : 0 };
  if (typeof v === "number") {
    if (FLOAT_ATTRS.has(name)) return { kind: "float", value: v };
    if (!Number.isInteger(v))
      throw new Error(`graph-builder: attribute '${name}' = ${v} is not an integer; use attr.float()`);
    return { kind: "int", value: v };
  }
  if (typeof v === "string") return { kind: "string", value: v };
  if (Array.isArray(v)) {
    if (v.length > 0 && typeof v[0] === "string") return { kind: "strings", value: v as readonly string[] };
    if (FLOATS_ATTRS.has(name)) return { kind: "floats", value: v as readonly number[] };
    for (const x of v as readonly number[])
      if (!Number.isInteger(x))
        throw new Error(`graph-builder: attribute '${name}' has non-integer ${x}; use attr.floats()`);
    return { kind: "ints", value: v as readonly number[] };
  }
  if ("tensor" in v) return { kind: "tensor", value: v.tensor };
  if ("graph" in v) return { kind: "graph", value: v.graph };
  return v as TaggedAttr;
}

function attrProto(name: string, a: TaggedAttr): AttributeProto {
  switch (a.kind) {
    case "int":
      return { name, type: AttributeType.INT, i: a.value };
    case "float":
      return { name, type: AttributeType.FLOAT, f: a.value };
    case "string":
      return { name, type: AttributeType.STRING, s: utf8.encode(a.value) };
    case "ints":
      return { name, type: AttributeType.INTS, ints: [...a.value] };
    case "floats":
      return { name, type: AttributeType.FLOATS, floats: [...a.value] };
    case "strings":
      return { name, type: AttributeType.STRINGS, strings: a.value.map((s) => utf8.encode(s)) };
    case "tensor":
      return { name, type: AttributeType.TENSOR, t: tensorProto("", a.value.dtype, a.value.shape, a.value.data) };
    case "graph":
      return { name, type: AttributeType.GRAPH, g: a.value.toGraphProto() };
    case "graphs":
      return { name, type: AttributeType.GRAPHS, graphs: a.value.map((g) => g.toGraphProto()) };
  }
}

/** Build a TensorProto (data stored little-endian in raw_data). */
export function tensorProto(
  name: string,
  dtype: DType,
  shape: readonly number[],
  data: TensorLiteral["data"],
): TensorProto {
  const host = toHostArray(dtype, data);
  const n = shapeSize(shape);
  if (host.length !== n)
    throw new Error(`graph-builder: tensor '${name}' has ${host.length} elements, shape [${shape}] needs ${n}`);
  const raw = new Uint8Array(host.byteLength);
  raw.set(new Uint8Array(host.buffer, host.byteOffset, host.byteLength));
  const t: TensorProto = { dims: [...shape], dataType: ONNX_DTYPE[dtype], rawData: raw };
  if (name) t.name = name;
  return t;
}

// ---------------------------------------------------------------------------
// builder
// ---------------------------------------------------------------------------

/** A dimension: fixed size, symbolic name (dim_param), or null (unknown). */
export type Dim = number | string | null;

function valueInfo(name: string, dtype: DType, shape: readonly Dim[] | null | undefined): ValueInfoProto {
  const tensorType: NonNullable<TypeProto["tensorType"]> = { elemType: ONNX_DTYPE[dtype] };
  if (shape)
    tensorType.shape = {
      dim: shape.map((d) => (d === null ? {} : typeof d === "number" ? { dimValue: d } : { dimParam: d })),
    };
  return { name, type: { tensorType } };
}

/** Naming state shared by a builder and all its nested subgraph builders. */
class NameScope {
  readonly used = new Set<string>();
  readonly domains = new Map<string, number>();
  private counters = new Map<string, number>();
  claim(name: string): string {
    this.used.add(name);
    return name;
  }
  fresh(prefix: string): string {
    let k = this.counters.get(prefix) ?? 0;
    let name: string;
    do name = `${prefix}_${k++}`;
    while (this.used.has(name));
    this.counters.set(prefix, k);
    return this.claim(name);
  }
}

/** A node as the builder holds it (graph rewrites in the compiler edit these in place). */
export interface GraphNode {
  opType: string;
  inputs: string[];
  outputs: string[];
  attrs: [string, TaggedAttr][];
  domain: string;
  name: string;
}
type PendingNode = GraphNode;

/** Initializers up to this many elements keep their values readable (constantValue) for graph rewrites. */
const KEEP_CONSTANT_VALUES = 64;

export interface ModelOptions {
  /** Default opset for the "" (ai.onnx) domain. */
  opset?: number;
  /** IR version; defaults to the one matching the opset. */
  irVersion?: number;
  /** Extra opset imports, e.g. { "com.microsoft": 1 }. */
  opsets?: Readonly<Record<string, number>>;
  producerName?: string;
  docString?: string;
}

/** Default opset for jaxts models (see notes/onnx-runtime.md). */
export const DEFAULT_OPSET = 26;

/** IR version matching each opset range (onnx/helper.py VERSION_TABLE). */
export function irVersionForOpset(opset: number): number {
  if (opset >= 25) return 13;
  if (opset >= 24) return 12;
  if (opset >= 23) return 11;
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  if (opset >= 15) return 8;
  return 7;
}

export class GraphBuilder {
  readonly name: string;
  private readonly scope: NameScope;
  private readonly inputs: ValueInfoProto[] = [];
  private readonly outputs: ValueInfoProto[] = [];
  private readonly valueInfos: ValueInfoProto[] = [];
  private readonly initializers: TensorProto[] = [];
  private nodes: PendingNode[] = [];
  private readonly smallConstants = new Map<string, TensorLiteral>();
  /** True for subgraph builders (If/Loop/Scan bodies). */
  readonly isSubgraph: boolean;

  constructor(name: string, parent?: GraphBuilder) {
    this.name = name;
    this.scope = parent ? parent.scope : new NameScope();
    this.isSubgraph = parent !== undefined;
  }

  /** A nested builder for a subgraph attribute; shares the unique-name space with this builder. */
  subgraph(name: string): GraphBuilder {
    return new GraphBuilder(name, this);
  }

  /** A fresh value name `${prefix}_${k}` unused anywhere in this graph family. */
  fresh(prefix = "t"): string {
    return this.scope.fresh(prefix);
  }

  /** Declare a graph input. `shape` null/undefined -> unknown rank. */
  addInput(name: string, dtype: DType, shape?: readonly Dim[] | null): string {
    this.inputs.push(valueInfo(this.scope.claim(name), dtype, shape));
    return name;
  }

  /** Declare a graph output (must be produced by a node, an input or an initializer). */
  addOutput(name: string, dtype: DType, shape?: readonly Dim[] | null): string {
    this.outputs.push(valueInfo(this.scope.claim(name), dtype, shape));
    return name;
  }

  /** Optional type annotation for an intermediate value. */
  addValueInfo(name: string, dtype: DType, shape?: readonly Dim[] | null): void {
    this.valueInfos.push(valueInfo(name, dtype, shape));
  }

  /**
   * Append a node. `outputs` is either explicit names or a count of fresh names
   * (prefixed by the op type). Use "" in `inputs` for omitted optional inputs.
   * Returns the output names.
   */
  addNode(
    opType: string,
    inputs: readonly string[],
    outputs: readonly string[] | number = 1,
    attrs: Readonly<Record<string, AttrValue>> = {},
    domain = "",
  ): string[] {
    const tagged = Object.entries(attrs).map(([k, v]): [string, TaggedAttr] => [k, normalizeAttr(k, v)]);
    const outs =
      typeof outputs === "number"
        ? Array.from({ length: outputs }, () => this.fresh(opType.toLowerCase()))
        : outputs.map((o) => (o === "" ? o : this.scope.claim(o)));
    if (domain !== "" && !this.scope.domains.has(domain)) this.scope.domains.set(domain, 1);
    this.nodes.push({
      opType,
      inputs: [...inputs],
      outputs: outs,
      attrs: tagged,
      domain,
      name: this.scope.fresh(`n_${opType}`),
    });
    return outs;
  }

  /** Import an operator-set domain (e.g. one whose ops a graph rewrite switched nodes to). */
  useDomain(domain: string, version: number): void {
    if (domain !== "") this.scope.domains.set(domain, version);
  }

  /** Single-output convenience form of addNode. */
  op(opType: string, inputs: readonly string[], attrs: Readonly<Record<string, AttrValue>> = {}, domain = ""): string {
    return this.addNode(opType, inputs, 1, attrs, domain)[0]!;
  }

  /** Add a named initializer (constant tensor stored in the graph). */
  addInitializer(name: string, dtype: DType, shape: readonly number[], data: TensorLiteral["data"]): string {
    this.initializers.push(tensorProto(this.scope.claim(name), dtype, shape, data));
    if (data.length <= KEEP_CONSTANT_VALUES) this.smallConstants.set(name, { dtype, shape, data });
    return name;
  }

  // ---- access for graph rewrites (src/compiler/optimize-graph.ts) ----

  /** The nodes in order (mutable: rewrites edit inputs/attributes in place). */
  get nodeList(): GraphNode[] {
    return this.nodes;
  }
  /** Replaces the node list (rewrites that drop or add nodes). */
  setNodes(nodes: GraphNode[]): void {
    this.nodes = nodes;
  }
  /** Names of the graph inputs and outputs. */
  get inputNames(): string[] {
    return this.inputs.map((v) => v.name!);
  }
  get outputNames(): string[] {
    return this.outputs.map((v) => v.name!);
  }
  /** The value of a small initializer (at most 64 elements), else undefined. */
  constantValue(name: string): TensorLiteral | undefined {
    return this.smallConstants.get(name);
  }
  /** Drops initializers no node or output reads (after rewrites). */
  pruneInitializers(used: ReadonlySet<string>): void {
    for (let i = this.initializers.length - 1; i >= 0; i--) {
      const n = this.initializers[i]!.name!;
      if (!used.has(n)) {
        this.initializers.splice(i, 1);
        this.smallConstants.delete(n);
      }
    }
  }

  /**
   * A constant tensor value; returns its name. Top-level graphs default to an
   * initializer, subgraphs to a Constant node (override with `opts.node`).
   */
  constant(
    dtype: DType,
    shape: readonly number[],
    data: TensorLiteral["data"],
    opts: { name?: string; node?: boolean } = {},
  ): string {
    const name = opts.name ?? this.fresh("const");
    if (opts.node ?? this.isSubgraph) {
      this.addNode("Constant", [], [name], { value: attr.tensor(dtype, shape, data) });
      return name;
    }
    return this.addInitializer(name, dtype, shape, data);
  }

  /** Rank-0 constant. float16/bfloat16 values must be given as raw bits. */
  scalar(dtype: DType, value: number | bigint | boolean, opts: { name?: string; node?: boolean } = {}): string {
    return this.constant(dtype, [], [value] as ArrayLike<number> | ArrayLike<bigint> | ArrayLike<boolean>, opts);
  }

  /** 1-D int64 constant (shapes, axes, pads...). */
  int64s(values: readonly number[], opts: { name?: string; node?: boolean } = {}): string {
    return this.constant("int64", [values.length], values, opts);
  }

  get nodeCount(): number {
    return this.nodes.length;
  }

  toGraphProto(): GraphProto {
    const node: NodeProto[] = this.nodes.map((n) => {
      const p: NodeProto = { input: n.inputs, output: n.outputs, name: n.name, opType: n.opType };
      if (n.domain) p.domain = n.domain;
      const attribute = n.attrs.map(([k, v]) => attrProto(k, v));
      if (attribute.length) p.attribute = attribute;
      return p;
    });
    const g: GraphProto = { node, name: this.name, input: this.inputs, output: this.outputs };
    if (this.initializers.length) g.initializer = this.initializers;
    if (this.valueInfos.length) g.valueInfo = this.valueInfos;
    return g;
  }

  /** Serialize as an ONNX model. */
  toModelBytes(opts: ModelOptions = {}): Uint8Array {
    if (this.isSubgraph) throw new Error("graph-builder: toModelBytes called on a subgraph builder");
    const opset = opts.opset ?? DEFAULT_OPSET;
    const opsetImport: OperatorSetIdProto[] = [{ domain: "", version: opset }];
    const extra = new Map(this.scope.domains);
    for (const [d, v] of Object.entries(opts.opsets ?? {})) extra.set(d, v);
    for (const [domain, version] of extra) opsetImport.push({ domain, version });
    return encodeModel({
      irVersion: opts.irVersion ?? irVersionForOpset(opset),
      opsetImport,
      producerName: opts.producerName ?? "jaxts",
      producerVersion: "0.1.0",
      docString: opts.docString,
      graph: this.toGraphProto(),
    });
  }
}
