/** @file ONNX protobuf schema (subset of onnx/onnx.proto3, field numbers verbatim) as a protobufjs 7 reflection root, plus typed message shapes and encode/decode helpers. */

import protobuf from "protobufjs";

/** ONNX TensorProto.DataType enum values. */
export const TensorDataType = {
  UNDEFINED: 0,
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  COMPLEX64: 14,
  COMPLEX128: 15,
  BFLOAT16: 16,
} as const;
export type TensorDataTypeValue = (typeof TensorDataType)[keyof typeof TensorDataType];

/** ONNX AttributeProto.AttributeType enum values. */
export const AttributeType = {
  UNDEFINED: 0,
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  GRAPH: 5,
  FLOATS: 6,
  INTS: 7,
  STRINGS: 8,
  TENSORS: 9,
  GRAPHS: 10,
  SPARSE_TENSOR: 11,
  SPARSE_TENSORS: 12,
  TYPE_PROTO: 13,
  TYPE_PROTOS: 14,
} as const;
export type AttributeTypeValue = (typeof AttributeType)[keyof typeof AttributeType];

// ---------------------------------------------------------------------------
// Plain-object message shapes (camelCase, as protobufjs reflection expects).
// int64 fields are JS numbers (safe integers); bulk int64 tensor data should go
// in rawData (little-endian bytes), which is what GraphBuilder does.
// ---------------------------------------------------------------------------

export interface StringStringEntryProto {
  key?: string;
  value?: string;
}

export interface OperatorSetIdProto {
  domain?: string;
  version?: number;
}

export interface TensorShapeDimension {
  dimValue?: number;
  dimParam?: string;
  denotation?: string;
}

export interface TensorShapeProto {
  dim?: TensorShapeDimension[];
}

export interface TypeProtoTensor {
  elemType?: number;
  shape?: TensorShapeProto;
}

export interface TypeProto {
  tensorType?: TypeProtoTensor;
  sequenceType?: { elemType?: TypeProto };
  optionalType?: { elemType?: TypeProto };
  denotation?: string;
}

export interface ValueInfoProto {
  name?: string;
  type?: TypeProto;
  docString?: string;
}

export interface TensorProto {
  dims?: number[];
  dataType?: number;
  floatData?: number[];
  int32Data?: number[];
  stringData?: Uint8Array[];
  int64Data?: number[];
  name?: string;
  docString?: string;
  rawData?: Uint8Array;
  doubleData?: number[];
  uint64Data?: number[];
}

export interface AttributeProto {
  name?: string;
  refAttrName?: string;
  docString?: string;
  type?: number;
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: TensorProto;
  g?: GraphProto;
  tp?: TypeProto;
  floats?: number[];
  ints?: number[];
  strings?: Uint8Array[];
  tensors?: TensorProto[];
  graphs?: GraphProto[];
  typeProtos?: TypeProto[];
}

export interface NodeProto {
  input?: string[];
  output?: string[];
  name?: string;
  opType?: string;
  domain?: string;
  overload?: string;
  attribute?: AttributeProto[];
  docString?: string;
}

export interface GraphProto {
  node?: NodeProto[];
  name?: string;
  initializer?: TensorProto[];
  docString?: string;
  input?: ValueInfoProto[];
  output?: ValueInfoProto[];
  valueInfo?: ValueInfoProto[];
  metadataProps?: StringStringEntryProto[];
}

export interface FunctionProto {
  name?: string;
  input?: string[];
  output?: string[];
  attribute?: string[];
  attributeProto?: AttributeProto[];
  node?: NodeProto[];
  docString?: string;
  opsetImport?: OperatorSetIdProto[];
  domain?: string;
  overload?: string;
  valueInfo?: ValueInfoProto[];
}

export interface ModelProto {
  irVersion?: number;
  opsetImport?: OperatorSetIdProto[];
  producerName?: string;
  producerVersion?: string;
  domain?: string;
  modelVersion?: number;
  docString?: string;
  graph?: GraphProto;
  metadataProps?: StringStringEntryProto[];
  functions?: FunctionProto[];
}

// ---------------------------------------------------------------------------
// Reflection descriptor. Each message: field name -> [id, type, rule?].
// Field numbers copied from onnx/onnx.proto3 (onnx main, IR version 14).
// ---------------------------------------------------------------------------

type FieldSpec = readonly [id: number, type: string, rule?: "repeated"];
type MessageSpec = Record<string, FieldSpec>;
interface MessageDescriptor {
  fields: Record<string, { id: number; type: string; rule?: string; options?: Record<string, boolean> }>;
  oneofs?: Record<string, { oneof: string[] }>;
  nested?: Record<string, MessageDescriptor>;
}

const SCALARS = new Set(["float", "double", "int32", "int64", "uint64", "bool"]);

function msg(
  spec: MessageSpec,
  extra: { oneofs?: Record<string, string[]>; nested?: Record<string, MessageDescriptor> } = {},
): MessageDescriptor {
  const fields: MessageDescriptor["fields"] = {};
  for (const [name, [id, type, rule]] of Object.entries(spec)) {
    const f: MessageDescriptor["fields"][string] = { id, type };
    if (rule) {
      f.rule = rule;
      // onnx.proto3 marks only TensorProto's numeric data fields packed; keep that
      // (packed is the proto3 default anyway; parsers accept both encodings).
      if (SCALARS.has(type)) f.options = { packed: true };
    }
    fields[name] = f;
  }
  const d: MessageDescriptor = { fields };
  if (extra.oneofs) {
    d.oneofs = {};
    for (const [k, v] of Object.entries(extra.oneofs)) d.oneofs[k] = { oneof: v };
  }
  if (extra.nested) d.nested = extra.nested;
  return d;
}

const R = "repeated" as const;

const onnxDescriptor = {
  nested: {
    onnx: {
      nested: {
        StringStringEntryProto: msg({ key: [1, "string"], value: [2, "string"] }),
        OperatorSetIdProto: msg({ domain: [1, "string"], version: [2, "int64"] }),
        TensorShapeProto: msg(
          { dim: [1, "Dimension", R] },
          {
            nested: {
              Dimension: msg(
                { dimValue: [1, "int64"], dimParam: [2, "string"], denotation: [3, "string"] },
                { oneofs: { value: ["dimValue", "dimParam"] } },
              ),
            },
          },
        ),
        TypeProto: msg(
          {
            tensorType: [1, "Tensor"],
            sequenceType: [4, "Sequence"],
            mapType: [5, "Map"],
            denotation: [6, "string"],
            optionalType: [9, "Optional"],
            sparseTensorType: [8, "SparseTensor"],
          },
          {
            oneofs: { value: ["tensorType", "sequenceType", "mapType", "optionalType", "sparseTensorType"] },
            nested: {
              Tensor: msg({ elemType: [1, "int32"], shape: [2, "TensorShapeProto"] }),
              Sequence: msg({ elemType: [1, "TypeProto"] }),
              Map: msg({ keyType: [1, "int32"], valueType: [2, "TypeProto"] }),
              Optional: msg({ elemType: [1, "TypeProto"] }),
              SparseTensor: msg({ elemType: [1, "int32"], shape: [2, "TensorShapeProto"] }),
            },
          },
        ),
        ValueInfoProto: msg({
          name: [1, "string"],
          type: [2, "TypeProto"],
          docString: [3, "string"],
          metadataProps: [4, "StringStringEntryProto", R],
        }),
        TensorProto: msg({
          dims: [1, "int64", R],
          dataType: [2, "int32"],
          floatData: [4, "float", R],
          int32Data: [5, "int32", R],
          stringData: [6, "bytes", R],
          int64Data: [7, "int64", R],
          name: [8, "string"],
          rawData: [9, "bytes"],
          doubleData: [10, "double", R],
          uint64Data: [11, "uint64", R],
          docString: [12, "string"],
          externalData: [13, "StringStringEntryProto", R],
          dataLocation: [14, "int32"],
          metadataProps: [16, "StringStringEntryProto", R],
        }),
        SparseTensorProto: msg({ values: [1, "TensorProto"], indices: [2, "TensorProto"], dims: [3, "int64", R] }),
        AttributeProto: msg({
          name: [1, "string"],
          f: [2, "float"],
          i: [3, "int64"],
          s: [4, "bytes"],
          t: [5, "TensorProto"],
          g: [6, "GraphProto"],
          floats: [7, "float", R],
          ints: [8, "int64", R],
          strings: [9, "bytes", R],
          tensors: [10, "TensorProto", R],
          graphs: [11, "GraphProto", R],
          docString: [13, "string"],
          tp: [14, "TypeProto"],
          typeProtos: [15, "TypeProto", R],
          type: [20, "int32"],
          refAttrName: [21, "string"],
          sparseTensor: [22, "SparseTensorProto"],
          sparseTensors: [23, "SparseTensorProto", R],
        }),
        NodeProto: msg({
          input: [1, "string", R],
          output: [2, "string", R],
          name: [3, "string"],
          opType: [4, "string"],
          attribute: [5, "AttributeProto", R],
          docString: [6, "string"],
          domain: [7, "string"],
          overload: [8, "string"],
          metadataProps: [9, "StringStringEntryProto", R],
        }),
        GraphProto: msg({
          node: [1, "NodeProto", R],
          name: [2, "string"],
          initializer: [5, "TensorProto", R],
          docString: [10, "string"],
          input: [11, "ValueInfoProto", R],
          output: [12, "ValueInfoProto", R],
          valueInfo: [13, "ValueInfoProto", R],
          sparseInitializer: [15, "SparseTensorProto", R],
          metadataProps: [16, "StringStringEntryProto", R],
        }),
        FunctionProto: msg({
          name: [1, "string"],
          input: [4, "string", R],
          output: [5, "string", R],
          attribute: [6, "string", R],
          node: [7, "NodeProto", R],
          docString: [8, "string"],
          opsetImport: [9, "OperatorSetIdProto", R],
          domain: [10, "string"],
          attributeProto: [11, "AttributeProto", R],
          valueInfo: [12, "ValueInfoProto", R],
          overload: [13, "string"],
          metadataProps: [14, "StringStringEntryProto", R],
        }),
        ModelProto: msg({
          irVersion: [1, "int64"],
          producerName: [2, "string"],
          producerVersion: [3, "string"],
          domain: [4, "string"],
          modelVersion: [5, "int64"],
          docString: [6, "string"],
          graph: [7, "GraphProto"],
          opsetImport: [8, "OperatorSetIdProto", R],
          metadataProps: [14, "StringStringEntryProto", R],
          functions: [25, "FunctionProto", R],
        }),
      },
    },
  },
};

/** The protobufjs reflection root holding package `onnx`. */
export const onnxRoot: protobuf.Root = protobuf.Root.fromJSON(onnxDescriptor);

export const ModelProtoType: protobuf.Type = onnxRoot.lookupType("onnx.ModelProto");
export const GraphProtoType: protobuf.Type = onnxRoot.lookupType("onnx.GraphProto");
export const NodeProtoType: protobuf.Type = onnxRoot.lookupType("onnx.NodeProto");
export const TensorProtoType: protobuf.Type = onnxRoot.lookupType("onnx.TensorProto");

/** Serialize a ModelProto to its wire bytes. Verifies the message shape first. */
export function encodeModel(model: ModelProto): Uint8Array {
  const err = ModelProtoType.verify(model);
  if (err) throw new Error(`onnx-proto: invalid ModelProto: ${err}`);
  return ModelProtoType.encode(ModelProtoType.fromObject(model)).finish();
}

/** Parse wire bytes into a plain ModelProto object (int64 as numbers, bytes as Uint8Array). */
export function decodeModel(bytes: Uint8Array): ModelProto {
  const m = ModelProtoType.decode(bytes);
  return ModelProtoType.toObject(m, { longs: Number }) as ModelProto;
}
