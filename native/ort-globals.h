/** @file Accessors for the ONNX Runtime objects native/ort-addon.cc creates at init (for the device runtime). */
#pragma once

namespace jaxts {

/** The OrtApi table (nullptr before init). */
const void* const* OrtApiTable();
/** The process-wide OrtEnv* (as void*). */
void* OrtEnvironment();
/** CPU OrtMemoryInfo* for tensors over caller memory (as void*). */
void* OrtCpuMemoryInfo();
/** The ONNX Runtime version string ("" before init). */
const char* OrtVersion();

}  // namespace jaxts
