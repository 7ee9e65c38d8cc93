/** @file Checkpoint I/O: save/load pytrees in the safetensors format, plus the in-memory serialize/deserialize. */
export { save, load, serialize, deserialize, FORMAT_KEY, TREE_KEY, MAX_TREE_DEPTH } from "./checkpoint.js";
export { saveSharded, loadSharded } from "./sharded-checkpoint.js";
export type { LoadOptions } from "./checkpoint.js";
export { ST_DTYPE as SAFETENSORS_DTYPES, MAX_HEADER_BYTES } from "./safetensors.js";
export { exportOnnx, toOnnx } from "./export-onnx.js";
export type { ExportedModel } from "./export-onnx.js";
