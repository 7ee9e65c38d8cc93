/** @file Accessors for the ONNX Runtime objects native/ort-addon.cc creates at init (for the device runtime). */
#pragma once

#include <node_api.h>

namespace jaxts {

/** The OrtApi table (nullptr before init). */
const void* const* OrtApiTable();
/** The process-wide OrtEnv* (as void*). */
void* OrtEnvironment();
/** CPU OrtMemoryInfo* for tensors over caller memory (as void*). */
void* OrtCpuMemoryInfo();
/** The ONNX Runtime version string ("" before init). */
const char* OrtVersion();
/**
 * The OrtSession* (as void*) of a session handle createSession returned, or nullptr (not a handle, or released). The
 * caller borrows it: JS keeps the handle alive and does not release it while a run on it is in flight.
 */
void* BorrowedSession(napi_env env, napi_value handle);

}  // namespace jaxts
