/** @file Native ONNX Runtime runner: runs sessions through ORT's C API with caller-owned output buffers (no copy). */
// Why this exists: onnxruntime-node 1.30 copies every output into a freshly allocated ArrayBuffer, even when
// a preallocated tensor is passed; the first write to fresh pages costs about as much as a 256x256 GEMM here.
// This addon talks to the libonnxruntime.so that onnxruntime-node ships (loaded with dlopen) and binds
// outputs to buffers the caller owns (jaxts's buffer pool), so steady-state jitted calls allocate nothing.
//
// The ORT C API is a table of function pointers (OrtApi) that only ever grows; the slots used here are
// declared by index below, with the signatures the C API documents. Node-API (C) is the JS interface.

#include <dlfcn.h>
#include <malloc.h>
#include <node_api.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace jaxts {
void RegisterFused(napi_env env, napi_value exports);    // native/fused.cc
void RegisterDevices(napi_env env, napi_value exports);  // native/devices.cc
void RegisterMpi(napi_env env, napi_value exports);      // native/mpi-napi.cc
void RegisterArena(napi_env env, napi_value exports);    // native/arena.cc
void RegisterReduceKernels(napi_env env, napi_value exports);  // native/reduce-kernels.cc
void RegisterBlockCopy(napi_env env, napi_value exports);      // native/block-copy.cc
}
#include "cpu-level.h"
#include "gemm-op.h"
#include "napi-util.h"
#include "ort-api.h"
#include "ort-globals.h"

namespace {

// ------------------------------------------------------------------ ORT C API, the slots this file uses
struct OrtStatus;
struct OrtEnv;
struct OrtSession;
struct OrtSessionOptions;
struct OrtValue;
struct OrtMemoryInfo;
struct OrtAllocator;
struct OrtRunOptions;
struct OrtTensorTypeAndShapeInfo;
struct OrtTypeInfo;
using St = OrtStatus*;

struct ApiBase {
  const void* (*GetApi)(uint32_t version);
  const char* (*GetVersionString)();
};

using namespace jaxts::ort;  // slot indices (native/ort-api.h)
using jaxts::GetString;  // native/napi-util.h
using jaxts::TypedArrayBytes;
using jaxts::GetUint8Array;

const void* const* g_api = nullptr;  // the OrtApi table
OrtEnv* g_env = nullptr;
OrtMemoryInfo* g_cpu = nullptr;
OrtAllocator* g_alloc = nullptr;
std::mutex g_init_mutex;
std::string g_version;
const char* g_gemm = nullptr;  // jaxts.Gemm custom op kernel, when registered

template <typename F>
F fn(Slot s) { return At<F>(g_api, s); }

// typed accessors for the slots
const char* ErrorMessage(St s) { return fn<const char* (*)(const OrtStatus*)>(kGetErrorMessage)(s); }
void ReleaseStatus(St s) { fn<void (*)(OrtStatus*)>(kReleaseStatus)(s); }

// ------------------------------------------------------------------ N-API helpers
#define NAPI_OK(env, call)                                        \
  do {                                                            \
    if ((call) != napi_ok) {                                      \
      ThrowLast(env, #call);                                      \
      return nullptr;                                             \
    }                                                             \
  } while (0)

void ThrowLast(napi_env env, const char* what) {
  const napi_extended_error_info* info = nullptr;
  napi_get_last_error_info(env, &info);
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (pending) return;
  std::string msg = std::string("jaxts-ort: ") + what + " failed";
  if (info && info->error_message) msg += std::string(": ") + info->error_message;
  napi_throw_error(env, nullptr, msg.c_str());
}

napi_value Throw(napi_env env, const std::string& msg) {
  napi_throw_error(env, nullptr, ("jaxts-ort: " + msg).c_str());
  return nullptr;
}

// Throws the ORT status as a JS error (and releases it); returns true when there was an error.
bool Failed(napi_env env, St s, const char* where) {
  if (!s) return false;
  std::string msg = std::string(where) + ": " + ErrorMessage(s);
  ReleaseStatus(s);
  Throw(env, msg);
  return true;
}

napi_value Undefined(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

napi_value Prop(napi_env env, napi_value obj, const char* key) {
  napi_value v = nullptr;
  napi_get_named_property(env, obj, key, &v);
  return v;
}

bool IsUndefined(napi_env env, napi_value v) {
  napi_valuetype t;
  return !v || napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null;
}

// ------------------------------------------------------------------ init(libraryPath)
// Loads ONNX Runtime; throws (and jaxts falls back to onnxruntime-node's binding) unless it is exactly kOrtVersion.
napi_value Init(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::string path;
  if (argc < 1 || !GetString(env, argv[0], &path)) return Throw(env, "init(libraryPath: string) expects a path");
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (!g_api) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) return Throw(env, std::string("cannot load ") + path + ": " + dlerror());
    using GetBase = const ApiBase* (*)();
    auto get_base = reinterpret_cast<GetBase>(dlsym(lib, "OrtGetApiBase"));
    if (!get_base) return Throw(env, path + " has no OrtGetApiBase");
    const ApiBase* base = get_base();
    // JAXTS_TEST_ORT_VERSION stands in for the runtime's version string (tests of the refusal below)
    const char* test_version = std::getenv("JAXTS_TEST_ORT_VERSION");
    const std::string version = test_version && *test_version ? test_version : base->GetVersionString();
    if (version != kOrtVersion)
      return Throw(env, "built for ONNX Runtime " + std::string(kOrtVersion) + " (its C API slots and custom-op layout), but " + path +
                            " is ONNX Runtime " + version + "; install onnxruntime-node@" + kOrtVersion + " (the version jaxts pins)");
    if (const char* cpu = jaxts::CpuEnvError()) return Throw(env, cpu);
    const void* api = base->GetApi(kOrtApiVersion);
    if (!api) return Throw(env, "ONNX Runtime " + version + " does not offer API version " + std::to_string(kOrtApiVersion));
    g_version = version;
    g_api = static_cast<const void* const*>(api);
    // one process-wide environment (ORT keeps a single OrtEnv and reference counts it); level 3 = error
    St s = fn<St (*)(int, const char*, OrtEnv**)>(kCreateEnv)(3, "jaxts", &g_env);
    if (s) {
      g_api = nullptr;
      if (Failed(env, s, "CreateEnv")) return nullptr;
    }
    // CPU memory info for tensors over caller memory: OrtDeviceAllocator (0), OrtMemTypeDefault (0)
    s = fn<St (*)(int, int, OrtMemoryInfo**)>(kCreateCpuMemoryInfo)(0, 0, &g_cpu);
    if (Failed(env, s, "CreateCpuMemoryInfo")) return nullptr;
    s = fn<St (*)(OrtAllocator**)>(kGetAllocatorWithDefaultOptions)(&g_alloc);
    if (Failed(env, s, "GetAllocatorWithDefaultOptions")) return nullptr;
    g_gemm = jaxts::RegisterGemmOp(g_api, g_version.c_str());
  }
  napi_value v;
  napi_create_string_utf8(env, g_version.c_str(), g_version.size(), &v);
  return v;
}

// ------------------------------------------------------------------ sessions
struct Session {
  OrtSession* ptr = nullptr;
  std::vector<std::string> input_names, output_names;
};

void FinalizeSession(napi_env, void* data, void*) {
  auto* s = static_cast<Session*>(data);
  if (s->ptr) fn<void (*)(OrtSession*)>(kReleaseSession)(s->ptr);
  delete s;
}

Session* GetSession(napi_env env, napi_value v) {
  void* p = nullptr;
  if (napi_get_value_external(env, v, &p) != napi_ok || !p) {
    Throw(env, "expected a session handle");
    return nullptr;
  }
  auto* s = static_cast<Session*>(p);
  if (!s->ptr) {
    Throw(env, "session was released");
    return nullptr;
  }
  return s;
}

bool ApplyOptions(napi_env env, OrtSessionOptions* so, napi_value opts) {
  auto num = [&](const char* key, int64_t* out) {
    napi_value v = Prop(env, opts, key);
    if (IsUndefined(env, v)) return false;
    return napi_get_value_int64(env, v, out) == napi_ok;
  };
  int64_t n;
  St s = nullptr;
  if (num("intraOpNumThreads", &n) && (s = fn<St (*)(OrtSessionOptions*, int)>(kSetIntraOpNumThreads)(so, int(n)))) return !Failed(env, s, "SetIntraOpNumThreads");
  if (num("interOpNumThreads", &n) && (s = fn<St (*)(OrtSessionOptions*, int)>(kSetInterOpNumThreads)(so, int(n)))) return !Failed(env, s, "SetInterOpNumThreads");
  if (num("graphOptimizationLevel", &n) && (s = fn<St (*)(OrtSessionOptions*, int)>(kSetSessionGraphOptimizationLevel)(so, int(n)))) return !Failed(env, s, "SetSessionGraphOptimizationLevel");
  if (num("executionMode", &n) && (s = fn<St (*)(OrtSessionOptions*, int)>(kSetSessionExecutionMode)(so, int(n)))) return !Failed(env, s, "SetSessionExecutionMode");
  if (num("logSeverityLevel", &n) && (s = fn<St (*)(OrtSessionOptions*, int)>(kSetSessionLogSeverityLevel)(so, int(n)))) return !Failed(env, s, "SetSessionLogSeverityLevel");
  if (num("cpuMemArena", &n) && (s = fn<St (*)(OrtSessionOptions*)>(n ? kEnableCpuMemArena : kDisableCpuMemArena)(so))) return !Failed(env, s, "CpuMemArena");
  if (num("memPattern", &n) && (s = fn<St (*)(OrtSessionOptions*)>(n ? kEnableMemPattern : kDisableMemPattern)(so))) return !Failed(env, s, "MemPattern");
  napi_value prefix = Prop(env, opts, "profileFilePrefix");  // per-node timings, written when the session is released
  if (!IsUndefined(env, prefix)) {
    std::string p;
    if (!GetString(env, prefix, &p)) {
      Throw(env, "profileFilePrefix must be a string");
      return false;
    }
    s = fn<St (*)(OrtSessionOptions*, const char*)>(kEnableProfiling)(so, p.c_str());
    if (Failed(env, s, "EnableProfiling")) return false;
  }
  napi_value entries = Prop(env, opts, "configEntries");  // [[key, value], ...]
  if (!IsUndefined(env, entries)) {
    uint32_t len = 0;
    napi_get_array_length(env, entries, &len);
    for (uint32_t i = 0; i < len; i++) {
      napi_value pair, k, v;
      napi_get_element(env, entries, i, &pair);
      napi_get_element(env, pair, 0, &k);
      napi_get_element(env, pair, 1, &v);
      std::string ks, vs;
      if (!GetString(env, k, &ks) || !GetString(env, v, &vs)) {
        Throw(env, "configEntries must be [string, string] pairs");
        return false;
      }
      s = fn<St (*)(OrtSessionOptions*, const char*, const char*)>(kAddSessionConfigEntry)(so, ks.c_str(), vs.c_str());
      if (Failed(env, s, "AddSessionConfigEntry")) return false;
    }
  }
  return true;
}

// Reads one input's or output's element type and shape (-1 for dynamic dims) into a JS object.
napi_value ValueInfo(napi_env env, OrtTypeInfo* ti, const std::string& name) {
  napi_value obj, v;
  napi_create_object(env, &obj);
  napi_create_string_utf8(env, name.c_str(), name.size(), &v);
  napi_set_named_property(env, obj, "name", v);
  const OrtTensorTypeAndShapeInfo* tinfo = nullptr;
  fn<St (*)(const OrtTypeInfo*, const OrtTensorTypeAndShapeInfo**)>(kCastTypeInfoToTensorInfo)(ti, &tinfo);
  int type = 0;
  std::vector<int64_t> dims;
  std::vector<const char*> syms;
  if (tinfo) {
    fn<St (*)(const OrtTensorTypeAndShapeInfo*, int*)>(kGetTensorElementType)(tinfo, &type);
    size_t nd = 0;
    fn<St (*)(const OrtTensorTypeAndShapeInfo*, size_t*)>(kGetDimensionsCount)(tinfo, &nd);
    dims.resize(nd);
    syms.assign(nd, nullptr);
    if (nd) {
      fn<St (*)(const OrtTensorTypeAndShapeInfo*, int64_t*, size_t)>(kGetDimensions)(tinfo, dims.data(), nd);
      fn<St (*)(const OrtTensorTypeAndShapeInfo*, const char**, size_t)>(kGetSymbolicDimensions)(tinfo, syms.data(), nd);
    }
  }
  napi_create_int32(env, type, &v);  // 0: not a tensor
  napi_set_named_property(env, obj, "type", v);
  napi_value shape;
  napi_create_array_with_length(env, dims.size(), &shape);
  for (size_t i = 0; i < dims.size(); i++) {
    // a dynamic dim is its symbolic name when it has one, else -1
    if (dims[i] < 0 && syms[i] && syms[i][0]) napi_create_string_utf8(env, syms[i], NAPI_AUTO_LENGTH, &v);
    else napi_create_double(env, double(dims[i]), &v);
    napi_set_element(env, shape, uint32_t(i), v);
  }
  napi_set_named_property(env, obj, "shape", shape);
  fn<void (*)(OrtTypeInfo*)>(kReleaseTypeInfo)(ti);
  return obj;
}

// createSession(model: Uint8Array, options) -> { handle, inputs: [{name, type, shape}], outputs: [...] }
napi_value CreateSession(napi_env env, napi_callback_info info) {
  if (!g_api) return Throw(env, "init() was not called");
  size_t argc = 2;
  napi_value argv[2];
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  if (argc < 2) return Throw(env, "createSession(model, options) expects two arguments");
  size_t len = 0;
  void* data = nullptr;
  if (!GetUint8Array(env, argv[0], &data, &len)) return Throw(env, "createSession: model must be a Uint8Array");
  OrtSessionOptions* so = nullptr;
  if (Failed(env, fn<St (*)(OrtSessionOptions**)>(kCreateSessionOptions)(&so), "CreateSessionOptions")) return nullptr;
  auto release_so = [&] { fn<void (*)(OrtSessionOptions*)>(kReleaseSessionOptions)(so); };
  if (!ApplyOptions(env, so, argv[1])) {
    release_so();
    return nullptr;
  }
  // every session may contain jaxts.Gemm nodes (the domain is registered once, at init)
  if (St g = reinterpret_cast<St>(jaxts::AddGemmOpDomain(reinterpret_cast<::OrtSessionOptions*>(so)))) {
    release_so();
    Failed(env, g, "AddCustomOpDomain");
    return nullptr;
  }
  auto* sess = new Session();
  St s = fn<St (*)(const OrtEnv*, const void*, size_t, const OrtSessionOptions*, OrtSession**)>(kCreateSessionFromArray)(
      g_env, data, len, so, &sess->ptr);
  release_so();
  if (s) {
    delete sess;
    Failed(env, s, "CreateSessionFromArray");
    return nullptr;
  }
  napi_value result, handle, ins, outs;
  napi_create_object(env, &result);
  napi_create_external(env, sess, FinalizeSession, nullptr, &handle);
  napi_set_named_property(env, result, "handle", handle);
  for (int side = 0; side < 2; side++) {
    size_t count = 0;
    fn<St (*)(const OrtSession*, size_t*)>(side ? kSessionGetOutputCount : kSessionGetInputCount)(sess->ptr, &count);
    napi_value arr;
    napi_create_array_with_length(env, count, &arr);
    for (size_t i = 0; i < count; i++) {
      char* name = nullptr;
      s = fn<St (*)(const OrtSession*, size_t, OrtAllocator*, char**)>(side ? kSessionGetOutputName : kSessionGetInputName)(
          sess->ptr, i, g_alloc, &name);
      if (Failed(env, s, "SessionGetName")) return nullptr;
      std::string n(name);
      fn<St (*)(OrtAllocator*, void*)>(kAllocatorFree)(g_alloc, name);
      (side ? sess->output_names : sess->input_names).push_back(n);
      OrtTypeInfo* ti = nullptr;
      s = fn<St (*)(const OrtSession*, size_t, OrtTypeInfo**)>(side ? kSessionGetOutputTypeInfo : kSessionGetInputTypeInfo)(
          sess->ptr, i, &ti);
      if (Failed(env, s, "SessionGetTypeInfo")) return nullptr;
      napi_set_element(env, arr, uint32_t(i), ValueInfo(env, ti, n));
    }
    (side ? outs : ins) = arr;
  }
  napi_set_named_property(env, result, "inputs", ins);
  napi_set_named_property(env, result, "outputs", outs);
  return result;
}

// release(handle): frees the session now (later use throws)
napi_value Release(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  void* p = nullptr;
  if (argc < 1 || napi_get_value_external(env, argv[0], &p) != napi_ok || !p) return Throw(env, "release expects a session handle");
  auto* s = static_cast<Session*>(p);
  if (s->ptr) fn<void (*)(OrtSession*)>(kReleaseSession)(s->ptr);
  s->ptr = nullptr;
  return Undefined(env);
}

// ------------------------------------------------------------------ run
struct Values {
  std::vector<OrtValue*> v;
  ~Values() {
    for (OrtValue* x : v)
      if (x) fn<void (*)(OrtValue*)>(kReleaseValue)(x);
  }
};

// A tensor over the memory of a typed array (no copy); `shape` is a JS array of numbers.
bool WrapTensor(napi_env env, napi_value data, napi_value shape, int type, const char* what, uint32_t i, OrtValue** out) {
  napi_typedarray_type tt;
  size_t len = 0, off = 0;
  void* ptr = nullptr;
  napi_value ab;
  if (napi_get_typedarray_info(env, data, &tt, &len, &ptr, &ab, &off) != napi_ok) {
    Throw(env, std::string(what) + " " + std::to_string(i) + " is not a typed array");
    return false;
  }
  size_t bytes = 0;
  napi_get_arraybuffer_info(env, ab, nullptr, &bytes);
  size_t byte_len = TypedArrayBytes(tt, len);
  uint32_t nd = 0;
  napi_get_array_length(env, shape, &nd);
  int64_t dims[16];
  if (nd > 16) {
    Throw(env, std::string(what) + " " + std::to_string(i) + " has rank > 16");
    return false;
  }
  for (uint32_t d = 0; d < nd; d++) {
    napi_value x;
    napi_get_element(env, shape, d, &x);
    napi_get_value_int64(env, x, &dims[d]);
  }
  // an empty typed array may have no memory behind it; ORT still wants a non-null pointer
  static uint64_t empty_storage = 0;
  St s = fn<St (*)(const OrtMemoryInfo*, void*, size_t, const int64_t*, size_t, int, OrtValue**)>(kCreateTensorWithDataAsOrtValue)(
      g_cpu, ptr ? ptr : &empty_storage, byte_len, dims, nd, type, out);
  return !Failed(env, s, what);
}

struct Runner {
  Session* session;
  napi_ref session_ref = nullptr;  // keeps the session's handle alive as long as the runner
  std::vector<const char*> in_names, out_names;
  std::vector<int> in_types, out_types;
};

void FinalizeRunner(napi_env env, void* data, void*) {
  auto* r = static_cast<Runner*>(data);
  if (r->session_ref) napi_delete_reference(env, r->session_ref);
  delete r;
}

bool ReadNames(napi_env env, napi_value arr, const std::vector<std::string>& known, std::vector<const char*>* out) {
  uint32_t n = 0;
  napi_get_array_length(env, arr, &n);
  for (uint32_t i = 0; i < n; i++) {
    napi_value v;
    napi_get_element(env, arr, i, &v);
    std::string name;
    GetString(env, v, &name);
    const char* found = nullptr;
    for (const std::string& k : known)
      if (k == name) found = k.c_str();
    if (!found) {
      Throw(env, "the model has no value named '" + name + "'");
      return false;
    }
    out->push_back(found);
  }
  return true;
}

void ReadInts(napi_env env, napi_value arr, std::vector<int>* out) {
  uint32_t n = 0;
  napi_get_array_length(env, arr, &n);
  for (uint32_t i = 0; i < n; i++) {
    napi_value v;
    int32_t x = 0;
    napi_get_element(env, arr, i, &v);
    napi_get_value_int32(env, v, &x);
    out->push_back(x);
  }
}

// runner(session, inputNames, inputTypes, outputNames, outputTypes) -> handle
napi_value MakeRunner(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  if (argc < 5) return Throw(env, "runner(session, inputNames, inputTypes, outputNames, outputTypes) expects five arguments");
  Session* s = GetSession(env, argv[0]);
  if (!s) return nullptr;
  auto* r = new Runner();
  r->session = s;
  if (!ReadNames(env, argv[1], s->input_names, &r->in_names) || !ReadNames(env, argv[3], s->output_names, &r->out_names)) {
    delete r;
    return nullptr;
  }
  ReadInts(env, argv[2], &r->in_types);
  ReadInts(env, argv[4], &r->out_types);
  if (r->in_types.size() != r->in_names.size() || r->out_types.size() != r->out_names.size()) {
    delete r;
    return Throw(env, "runner: one type per name expected");
  }
  napi_create_reference(env, argv[0], 1, &r->session_ref);
  napi_value handle;
  napi_create_external(env, r, FinalizeRunner, nullptr, &handle);
  return handle;
}

// run(runner, inputs: TypedArray[], inputShapes: number[][], outputs: (TypedArray|null)[], outputShapes: (number[]|null)[])
// ORT writes each given output buffer in place (its shape must be the output's exact shape); a null output is
// allocated by ORT and returned as [ArrayBuffer, shape] in the result array (undefined where preallocated).
napi_value Run(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  if (argc < 5) return Throw(env, "run(runner, inputs, inputShapes, outputs, outputShapes) expects five arguments");
  void* p = nullptr;
  if (napi_get_value_external(env, argv[0], &p) != napi_ok || !p) return Throw(env, "run expects a runner handle");
  auto* r = static_cast<Runner*>(p);
  if (!r->session->ptr) return Throw(env, "session was released");
  const uint32_t nin = uint32_t(r->in_names.size()), nout = uint32_t(r->out_names.size());
  Values ins, outs;
  ins.v.assign(nin, nullptr);
  outs.v.assign(nout, nullptr);
  for (uint32_t i = 0; i < nin; i++) {
    napi_value d, sh;
    napi_get_element(env, argv[1], i, &d);
    napi_get_element(env, argv[2], i, &sh);
    if (!WrapTensor(env, d, sh, r->in_types[i], "input", i, &ins.v[i])) return nullptr;
  }
  std::vector<bool> given(nout, false);
  for (uint32_t i = 0; i < nout; i++) {
    napi_value d, sh;
    napi_get_element(env, argv[3], i, &d);
    if (IsUndefined(env, d)) continue;
    napi_get_element(env, argv[4], i, &sh);
    if (!WrapTensor(env, d, sh, r->out_types[i], "output", i, &outs.v[i])) return nullptr;
    given[i] = true;
  }
  St s = fn<St (*)(OrtSession*, const OrtRunOptions*, const char* const*, const OrtValue* const*, size_t, const char* const*,
                   size_t, OrtValue**)>(kRun)(r->session->ptr, nullptr, r->in_names.data(), ins.v.data(), nin, r->out_names.data(),
                                             nout, outs.v.data());
  if (Failed(env, s, "Run")) return nullptr;
  bool all_given = true;
  for (bool g : given) all_given = all_given && g;
  if (all_given) return Undefined(env);
  napi_value result;
  napi_create_array_with_length(env, nout, &result);
  for (uint32_t i = 0; i < nout; i++) {
    if (given[i]) continue;
    OrtTensorTypeAndShapeInfo* ti = nullptr;
    if (Failed(env, fn<St (*)(const OrtValue*, OrtTensorTypeAndShapeInfo**)>(kGetTensorTypeAndShape)(outs.v[i], &ti), "GetTensorTypeAndShape"))
      return nullptr;
    size_t nd = 0, count = 0;
    fn<St (*)(const OrtTensorTypeAndShapeInfo*, size_t*)>(kGetDimensionsCount)(ti, &nd);
    std::vector<int64_t> dims(nd);
    if (nd) fn<St (*)(const OrtTensorTypeAndShapeInfo*, int64_t*, size_t)>(kGetDimensions)(ti, dims.data(), nd);
    fn<St (*)(const OrtTensorTypeAndShapeInfo*, size_t*)>(kGetTensorShapeElementCount)(ti, &count);
    int type = 0;
    fn<St (*)(const OrtTensorTypeAndShapeInfo*, int*)>(kGetTensorElementType)(ti, &type);
    fn<void (*)(OrtTensorTypeAndShapeInfo*)>(kReleaseTensorTypeAndShapeInfo)(ti);
    static const size_t kOnnxWidth[] = {0, 4, 1, 1, 2, 2, 4, 8, 0, 1, 2, 8, 4, 8, 8, 16, 2};
    size_t width = size_t(type) < sizeof(kOnnxWidth) / sizeof(kOnnxWidth[0]) ? kOnnxWidth[type] : 0;
    if (!width) return Throw(env, "output " + std::to_string(i) + " has unsupported element type " + std::to_string(type));
    void* src = nullptr;
    if (count && Failed(env, fn<St (*)(OrtValue*, void**)>(kGetTensorMutableData)(outs.v[i], &src), "GetTensorMutableData")) return nullptr;
    napi_value ab, pair, shape, v;
    void* dst = nullptr;
    NAPI_OK(env, napi_create_arraybuffer(env, count * width, &dst, &ab));
    if (count) std::memcpy(dst, src, count * width);
    napi_create_array_with_length(env, nd, &shape);
    for (size_t d = 0; d < nd; d++) {
      napi_create_double(env, double(dims[d]), &v);
      napi_set_element(env, shape, uint32_t(d), v);
    }
    napi_create_array_with_length(env, 2, &pair);
    napi_set_element(env, pair, 0, ab);
    napi_set_element(env, pair, 1, shape);
    napi_set_element(env, result, i, pair);
  }
  return result;
}

// trimMemory(): hands the C heap's free pages back to the system (glibc keeps freed memory, e.g. a released
// session's, mapped for reuse: without this, releasing sessions lowers no RSS); returns whether any was released
napi_value TrimMemory(napi_env env, napi_callback_info) {
  napi_value v;
  napi_get_boolean(env, malloc_trim(0) != 0, &v);
  return v;
}

// gemmKernel() -> "avx512" | "avx2" | null: the micro-kernel behind the jaxts.Gemm custom op (null: not registered)
napi_value GemmKernel(napi_env env, napi_callback_info) {
  napi_value v;
  if (g_gemm) napi_create_string_utf8(env, g_gemm, NAPI_AUTO_LENGTH, &v);
  else napi_get_null(env, &v);
  return v;
}

// linalgOps() -> boolean: whether sessions can run jaxts.Lu / TriangularSolve / Cholesky / Qr (native/linalg-ops.cc)
napi_value LinalgOps(napi_env env, napi_callback_info) {
  napi_value v;
  napi_get_boolean(env, jaxts::LinalgOpsRegistered(), &v);
  return v;
}

}  // namespace

// the device runtime (native/devices.cc) creates its sessions against the same table and environment
const void* const* jaxts::OrtApiTable() { return g_api; }
void* jaxts::OrtEnvironment() { return g_env; }
void* jaxts::OrtCpuMemoryInfo() { return g_cpu; }
const char* jaxts::OrtVersion() { return g_version.c_str(); }
void* jaxts::BorrowedSession(napi_env env, napi_value handle) {
  void* p = nullptr;
  if (napi_get_value_external(env, handle, &p) != napi_ok || !p) return nullptr;
  return static_cast<Session*>(p)->ptr;
}

NAPI_MODULE_INIT() {
  const napi_property_descriptor props[] = {
      {"init", nullptr, Init, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"createSession", nullptr, CreateSession, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"release", nullptr, Release, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"runner", nullptr, MakeRunner, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"run", nullptr, Run, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"trimMemory", nullptr, TrimMemory, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"gemmKernel", nullptr, GemmKernel, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"linalgOps", nullptr, LinalgOps, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  jaxts::RegisterFused(env, exports);
  jaxts::RegisterDevices(env, exports);
  jaxts::RegisterMpi(env, exports);
  jaxts::RegisterArena(env, exports);
  jaxts::RegisterReduceKernels(env, exports);
  jaxts::RegisterBlockCopy(env, exports);
  return exports;
}
