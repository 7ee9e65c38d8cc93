/** @file Device programs and launches: one native thread per CPU device (native/executor.h) runs its ORT session runs in submission order; launches of one program across devices, with async (Promise) or blocking completion. */
// A device program is one ONNX model with one ORT session per device (each with its own intra-op threads), so one
// program serves every device: the executor sets the thread-local DeviceContext (rank, launch, communicator)
// before calling Run and the collective ops read it. JavaScript only submits and waits; a device never calls into
// JavaScript while it runs. A device that fails aborts its launch in the communicator, which releases its peers.
//
// JS interface (added to the addon's exports):
//   devCreateProgram(model, inNames, inTypes, outNames, outTypes, { numDevices, intraOpNumThreads, graphOptimizationLevel })
//   devLaunch(program, deviceIds, inputs[rank][], inputShapes[rank][], outputs[rank][], outputShapes[rank][],
//             { timeoutMs, failRank, callerRuns }, callback?) -> launch handle; callback(result) runs on the JS thread when done
//             (callerRuns: 1, without a callback, runs rank 0 on the calling thread when its executor is idle, before
//             returning: a blocking launch then wakes one executor fewer and starts rank 0 without a hand-off)
//   devWait(launch) -> result (blocks the calling thread until every device finished)
//   devNotify(launch, callback) -> true: callback() runs once on the JS thread when every device finished (a
//             threadsafe function made for this launch only, released after that call); false: already finished
//   devLiveNotifies() -> completion callbacks made by devNotify and not yet finalized (tests: none leak)
//   devDone(launch) -> whether every device of the launch finished (never blocks)
//   devProgramFromSession(session, inNames, inTypes, outNames, outTypes) -> a one-rank program over a borrowed session
// devLaunch keeps the input and output lists alive with one reference each (not one per buffer): the caller must not
// change those lists (nor their inner per-rank lists) until the launch completed.
//   devOpenRendezvous() -> number of open rendezvous (tests)
//   devSetExecutorSpin(us) -> previous value: how long an idle executor polls its queue before blocking (0: never)
// result: { errors: (string|null)[], start: number[], end: number[], threads: number[], enter, submitted, complete,
// woke, callerRank } (times in microseconds of the steady clock; threads: the native thread each rank ran on; enter:
// devLaunch called, submitted: every rank handed to its executor, complete: the last rank finished, woke: devWait
// returned to JS (0 with a callback); callerRank: the rank the calling thread ran, -1 if none).

#include <node_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "async-collective-ops.h"
#include "bounded-poll.h"
#include "collective-ops.h"
#include "communicator.h"
#include "cpu-level.h"
#include "device-context.h"
#include "executor.h"
#include "gemm-op.h"
#include "mpi-communicator.h"
#include "napi-util.h"
#include "ort-api.h"
#include "ort-globals.h"

struct OrtSession;
struct OrtSessionOptions;
struct OrtValue;

namespace jaxts {

DeviceContext*& CurrentDevice() {
  thread_local DeviceContext* ctx = nullptr;
  return ctx;
}

namespace {

using St = OrtStatus*;
using namespace ort;

template <typename F>
F fn(Slot s) { return ort::At<F>(OrtApiTable(), s); }

std::string TakeError(St s) {
  std::string m = fn<const char* (*)(const OrtStatus*)>(kGetErrorMessage)(s);
  fn<void (*)(St)>(kReleaseStatus)(s);
  return m;
}

// How long devWait polls before it blocks: a fraction of a tiny launch. It polls only when the program's previous
// launch says this one ends within that window: polling through a long launch burns the JS thread's CPU for nothing.
constexpr int kWaitSpinUs = 30;

double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// the executors (one thread per device, a queue in submission order): native/executor.{h,cc}

// ------------------------------------------------------------------ programs and launches
struct Program {
  std::vector<OrtSession*> sessions;  // one per rank
  std::vector<std::string> in_names, out_names;
  std::vector<const char*> in_c, out_c;
  std::vector<int> in_types, out_types;
  std::atomic<double> last_us{0};  // devLaunch entered -> last rank done, of the latest completed launch (0: none)
  bool borrowed = false;  // devProgramFromSession: the session belongs to the backend (JS releases it)
  ~Program() {
    if (!borrowed)
      for (OrtSession* s : sessions)
        if (s) fn<void (*)(OrtSession*)>(kReleaseSession)(s);
  }
};

struct Launch {
  uint64_t id = 0;
  std::shared_ptr<Program> program;
  int n = 0;
  std::vector<int> devices;
  std::vector<std::vector<OrtValue*>> ins, outs;
  std::vector<std::string> errors;
  std::vector<bool> failed;
  std::vector<double> start, end;
  std::vector<double> threads;
  int64_t timeout_ms = 30000;
  int fail_rank = -1;  // test hook: this rank fails before running
  int64_t delay_ms = 0;  // test hook: every rank sleeps this long before running (a launch that stays pending)
  bool record = false;  // each rank records its collectives (the profiler asks for it)
  std::vector<std::vector<CollectiveRecord>> colls;
  int caller_rank = -1;  // the rank the launching thread runs itself (-1: none)
  double t_enter = 0, t_submitted = 0, t_complete = 0, t_woke = 0;
  std::atomic<bool> done{false};  // complete, readable without the mutex (devWait spins on it briefly)
  std::shared_ptr<const ProcessMap> procs;  // set when the launch spans processes (its ranks here are a subset)
  std::atomic<int> remaining{0};
  std::mutex mu;
  std::condition_variable cv;
  bool complete = false;
  // JS-thread state
  std::vector<napi_ref> refs;
  napi_threadsafe_function tsfn = nullptr;
  napi_threadsafe_function notify = nullptr;  // devNotify's callback (guarded by mu; taken by the last rank)
  bool collected = false;
  ~Launch() {
    for (auto* vs : {&ins, &outs})
      for (auto& v : *vs)
        for (OrtValue* x : v)
          if (x) fn<void (*)(OrtValue*)>(kReleaseValue)(x);
  }
};

std::atomic<uint64_t> g_next_launch{1};

void RunRank(const std::shared_ptr<Launch>& L, int r) {
  const int grank = L->procs ? L->procs->local_ranks[size_t(r)] : r;  // rank in the (possibly multi-process) launch
  std::unique_ptr<Communicator> comm(L->procs ? NewProcessCommunicator(grank, L->procs) : NewShmCommunicator(r, L->n));
  DeviceContext ctx;
  ctx.rank = grank;
  ctx.size = L->procs ? int(L->procs->rank_process.size()) : L->n;
  ctx.device = L->devices[size_t(r)];
  ctx.launch = L->id;
  ctx.timeout_ms = L->timeout_ms;
  ctx.comm = comm.get();
  if (L->record) ctx.records = &L->colls[size_t(r)];
  CurrentDevice() = &ctx;
  L->threads[size_t(r)] = double(std::hash<std::thread::id>()(std::this_thread::get_id()) & ((uint64_t(1) << 52) - 1));
  L->start[size_t(r)] = NowUs();
  std::string err;
  if (L->delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(L->delay_ms));
  if (r == L->fail_rank) {
    err = "test hook: device failure injected before the program ran";
  } else {
    Program& P = *L->program;
    St s = fn<St (*)(OrtSession*, const void*, const char* const*, const OrtValue* const*, size_t, const char* const*, size_t, OrtValue**)>(kRun)(
        P.sessions[size_t(r)], nullptr, P.in_c.data(), L->ins[size_t(r)].data(), P.in_c.size(), P.out_c.data(), P.out_c.size(),
        L->outs[size_t(r)].data());
    if (s) err = TakeError(s);
  }
  // the rank's tensors only wrap memory JS owns: release them here (off the JS thread, which would otherwise do it in
  // the launch handle's finalizer)
  for (auto* vs : {&L->ins, &L->outs})
    for (OrtValue*& x : (*vs)[size_t(r)])
      if (x) {
        fn<void (*)(OrtValue*)>(kReleaseValue)(x);
        x = nullptr;
      }
  if (err.empty()) err = FinishAsyncCollectives(L->id, grank);  // collectives started and not awaited
  L->end[size_t(r)] = NowUs();
  CurrentDevice() = nullptr;
  if (!err.empty()) {
    L->errors[size_t(r)] = "device " + std::to_string(ctx.device) + " (rank " + std::to_string(ctx.rank) + "): " + err;
    L->failed[size_t(r)] = true;
    ShmWorld::Abort(L->id, L->errors[size_t(r)]);
    comm->DeviceFailed(L->errors[size_t(r)]);  // across processes: the other processes' waits are released too
    FinishAsyncCollectives(L->id, grank);       // its collectives in flight end (released above) before comm goes
  }
  Executor::Finishing();  // before the completion signal: the woken caller finds this stream idle
  if (L->remaining.fetch_sub(1) == 1) {
    ShmWorld::Forget(L->id);
    L->t_complete = NowUs();
    L->program->last_us.store(L->t_complete - L->t_enter, std::memory_order_relaxed);
    napi_threadsafe_function notify = nullptr;
    {
      std::lock_guard<std::mutex> lock(L->mu);
      L->complete = true;
      L->done.store(true, std::memory_order_release);
      std::swap(notify, L->notify);
    }
    L->cv.notify_all();
    if (L->tsfn) napi_call_threadsafe_function(L->tsfn, nullptr, napi_tsfn_blocking);
    if (notify) {
      // queued first, then released: Node runs the queued call before it finalizes the function
      napi_call_threadsafe_function(notify, nullptr, napi_tsfn_blocking);
      napi_release_threadsafe_function(notify, napi_tsfn_release);
    }
  }
}

// ------------------------------------------------------------------ N-API helpers
napi_value Throw(napi_env env, const std::string& msg) {
  napi_throw_error(env, nullptr, ("jaxts-devices: " + msg).c_str());
  return nullptr;
}
napi_value Prop(napi_env env, napi_value obj, const char* key) {
  napi_value v = nullptr;
  napi_valuetype t;
  if (napi_typeof(env, obj, &t) != napi_ok || t != napi_object) return nullptr;
  napi_get_named_property(env, obj, key, &v);
  return v;
}
bool NumProp(napi_env env, napi_value obj, const char* key, int64_t* out) {
  napi_value v = Prop(env, obj, key);
  napi_valuetype t;
  if (!v || napi_typeof(env, v, &t) != napi_ok || t != napi_number) return false;
  return napi_get_value_int64(env, v, out) == napi_ok;
}
uint32_t Length(napi_env env, napi_value arr) {
  uint32_t n = 0;
  napi_get_array_length(env, arr, &n);
  return n;
}
napi_value At(napi_env env, napi_value arr, uint32_t i) {
  napi_value v = nullptr;
  napi_get_element(env, arr, i, &v);
  return v;
}

// "input 3 of rank 1": built only for an error message (a launch wraps many buffers and most never fail)
std::string What(bool output, uint32_t i, int r) {
  return std::string(output ? "output " : "input ") + std::to_string(i) + " of rank " + std::to_string(r);
}

// A tensor of ONNX type `type` over a typed array's memory (no copy); the caller keeps the array alive.
bool Wrap(napi_env env, napi_value data, napi_value shape, int type, bool output, uint32_t i, int r, OrtValue** out) {
  napi_typedarray_type tt;
  size_t len = 0;
  void* ptr = nullptr;
  if (napi_get_typedarray_info(env, data, &tt, &len, &ptr, nullptr, nullptr) != napi_ok) {
    Throw(env, What(output, i, r) + " is not a typed array");
    return false;
  }
  const size_t bytes = TypedArrayBytes(tt, len);
  const uint32_t nd = Length(env, shape);
  int64_t small[8];  // no allocation for the usual rank
  std::vector<int64_t> big(nd > 8 ? nd : 0);
  int64_t* dims = nd > 8 ? big.data() : small;
  size_t count = 1;
  for (uint32_t d = 0; d < nd; d++) {
    napi_get_value_int64(env, At(env, shape, d), &dims[d]);
    count *= size_t(dims[d]);
  }
  if (ElementBytes(type) && count * ElementBytes(type) != bytes) {
    Throw(env, What(output, i, r) + " holds " + std::to_string(bytes) + " bytes but its shape and type need " + std::to_string(count * ElementBytes(type)));
    return false;
  }
  static uint64_t empty_storage = 0;
  St s = fn<St (*)(const void*, void*, size_t, const int64_t*, size_t, int, OrtValue**)>(kCreateTensorWithDataAsOrtValue)(
      OrtCpuMemoryInfo(), ptr ? ptr : &empty_storage, bytes, dims, nd, type, out);
  if (s) {
    Throw(env, What(output, i, r) + ": " + TakeError(s));
    return false;
  }
  return true;
}

void FinalizeProgram(napi_env, void* data, void*) { delete static_cast<std::shared_ptr<Program>*>(data); }
void FinalizeLaunch(napi_env, void* data, void*) { delete static_cast<std::shared_ptr<Launch>*>(data); }

// A program's inputs and outputs from (inNames, inTypes, outNames, outTypes) at args[0..3]; false after throwing,
// naming `fn`.
bool ReadSignature(napi_env env, const napi_value* args, Program* prog, const char* fn) {
  for (int side = 0; side < 2; side++) {
    napi_value names = args[side ? 2 : 0], types = args[side ? 3 : 1];
    const uint32_t n = Length(env, names);
    if (Length(env, types) != n) {
      Throw(env, std::string(fn) + ": one type per name expected");
      return false;
    }
    for (uint32_t i = 0; i < n; i++) {
      std::string s;
      int32_t t = 0;
      if (!GetString(env, At(env, names, i), &s)) {
        Throw(env, std::string(fn) + ": names must be strings");
        return false;
      }
      napi_get_value_int32(env, At(env, types, i), &t);
      (side ? prog->out_names : prog->in_names).push_back(s);
      (side ? prog->out_types : prog->in_types).push_back(t);
    }
  }
  for (auto& s : prog->in_names) prog->in_c.push_back(s.c_str());
  for (auto& s : prog->out_names) prog->out_c.push_back(s.c_str());
  return true;
}

// devCreateProgram(model, inNames, inTypes, outNames, outTypes, options)
napi_value CreateProgram(napi_env env, napi_callback_info info) {
  if (!OrtApiTable()) return Throw(env, "init() was not called");
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc < 6) return Throw(env, "devCreateProgram(model, inNames, inTypes, outNames, outTypes, options) expects six arguments");
  if (!RegisterCollectiveOps(OrtApiTable())) return Throw(env, "the jaxts.collectives custom ops could not be registered");
  if (!RegisterAsyncCollectiveOps(OrtApiTable())) return Throw(env, "the jaxts.async custom ops could not be registered");
  size_t len = 0;
  void* model = nullptr;
  if (!GetUint8Array(env, argv[0], &model, &len)) return Throw(env, "devCreateProgram: model must be a Uint8Array");
  auto prog = std::make_shared<Program>();
  if (!ReadSignature(env, argv + 1, prog.get(), "devCreateProgram")) return nullptr;
  int64_t devices = 1, threads = 1, level = 99;
  NumProp(env, argv[5], "numDevices", &devices);
  NumProp(env, argv[5], "intraOpNumThreads", &threads);
  NumProp(env, argv[5], "graphOptimizationLevel", &level);
  if (devices < 1 || devices > 4096) return Throw(env, "devCreateProgram: numDevices must be in [1, 4096]");
  for (int64_t d = 0; d < devices; d++) {
    OrtSessionOptions* so = nullptr;
    St s = fn<St (*)(OrtSessionOptions**)>(kCreateSessionOptions)(&so);
    if (!s) s = fn<St (*)(OrtSessionOptions*, int)>(kSetIntraOpNumThreads)(so, int(threads < 1 ? 1 : threads));
    if (!s) s = fn<St (*)(OrtSessionOptions*, int)>(kSetInterOpNumThreads)(so, 1);
    if (!s) s = fn<St (*)(OrtSessionOptions*, int)>(kSetSessionGraphOptimizationLevel)(so, int(level));
    // 4 = fatal only: a failing collective is reported to the caller, not logged by ORT once per enclosing node
    if (!s) s = fn<St (*)(OrtSessionOptions*, int)>(kSetSessionLogSeverityLevel)(so, 4);
    // device threads outnumber cores: intra-op workers must sleep, not spin, when idle
    if (!s) s = fn<St (*)(OrtSessionOptions*, const char*, const char*)>(kAddSessionConfigEntry)(so, "session.intra_op.allow_spinning", "0");
    if (!s) s = AddGemmOpDomain(so);
    if (!s) s = AddCollectiveOpDomain(so);
    if (!s) s = AddAsyncCollectiveOpDomain(so);
    OrtSession* sess = nullptr;
    if (!s) s = fn<St (*)(const void*, const void*, size_t, const OrtSessionOptions*, OrtSession**)>(kCreateSessionFromArray)(OrtEnvironment(), model, len, so, &sess);
    if (so) fn<void (*)(OrtSessionOptions*)>(kReleaseSessionOptions)(so);
    if (s) return Throw(env, "devCreateProgram: session for device rank " + std::to_string(d) + ": " + TakeError(s));
    prog->sessions.push_back(sess);
  }
  napi_value handle;
  napi_create_external(env, new std::shared_ptr<Program>(prog), FinalizeProgram, nullptr, &handle);
  return handle;
}

// devProgramFromSession(session, inNames, inTypes, outNames, outTypes) -> a one-rank program over a session the ONNX
// backend created (createSession's handle): single-device async dispatch runs the backend's own session on device 0's
// executor, with no second session. The session is borrowed: JS keeps it alive and unreleased while a launch uses it.
napi_value ProgramFromSessionFn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc < 5) return Throw(env, "devProgramFromSession(session, inNames, inTypes, outNames, outTypes) expects five arguments");
  auto* sess = static_cast<OrtSession*>(BorrowedSession(env, argv[0]));
  if (!sess) return Throw(env, "devProgramFromSession: expected a live session handle");
  auto prog = std::make_shared<Program>();
  prog->borrowed = true;
  if (!ReadSignature(env, argv + 1, prog.get(), "devProgramFromSession")) return nullptr;
  prog->sessions.push_back(sess);
  napi_value handle;
  napi_create_external(env, new std::shared_ptr<Program>(prog), FinalizeProgram, nullptr, &handle);
  return handle;
}

// The result's property names as JS strings, made once per JS thread: napi_set_named_property looks each C string up
// in V8's string table on every call (a third of the result's cost in perf).
enum ResultKey { kErrors, kStart, kEnd, kThreads, kEnter, kSubmitted, kComplete, kWoke, kCallerRank, kNumKeys };
napi_value KeyArray(napi_env env) {
  static const char* const kNames[kNumKeys] = {"errors", "start", "end", "threads", "enter", "submitted", "complete", "woke", "callerRank"};
  thread_local napi_env keys_env = nullptr;  // each JS thread (main, workers) has its own env
  thread_local napi_ref keys = nullptr;      // an array of the names (Node 20 references objects only)
  napi_value arr = nullptr, v = nullptr;
  if (keys_env != env) {
    keys_env = env;
    napi_create_array_with_length(env, kNumKeys, &arr);
    for (int i = 0; i < kNumKeys; i++) {
      napi_create_string_utf8(env, kNames[i], NAPI_AUTO_LENGTH, &v);
      napi_set_element(env, arr, uint32_t(i), v);
    }
    napi_create_reference(env, arr, 1, &keys);  // lives as long as the env (one small array)
  } else {
    napi_get_reference_value(env, keys, &arr);
  }
  return arr;
}

napi_value Result(napi_env env, Launch& L) {
  napi_value obj, errors, start, end, threads, v;
  napi_create_object(env, &obj);
  napi_create_array_with_length(env, size_t(L.n), &errors);
  napi_create_array_with_length(env, size_t(L.n), &start);
  napi_create_array_with_length(env, size_t(L.n), &end);
  napi_create_array_with_length(env, size_t(L.n), &threads);
  for (int r = 0; r < L.n; r++) {
    if (L.failed[size_t(r)]) napi_create_string_utf8(env, L.errors[size_t(r)].c_str(), NAPI_AUTO_LENGTH, &v);
    else napi_get_null(env, &v);
    napi_set_element(env, errors, uint32_t(r), v);
    napi_create_double(env, L.start[size_t(r)], &v);
    napi_set_element(env, start, uint32_t(r), v);
    napi_create_double(env, L.end[size_t(r)], &v);
    napi_set_element(env, end, uint32_t(r), v);
    napi_create_double(env, L.threads[size_t(r)], &v);
    napi_set_element(env, threads, uint32_t(r), v);
  }
  const double stamps[] = {L.t_enter, L.t_submitted, L.t_complete, L.t_woke, double(L.caller_rank)};
  napi_property_descriptor props[kNumKeys] = {};
  const napi_value arrays[] = {errors, start, end, threads};
  const napi_value keys = KeyArray(env);
  for (int k = 0; k < kNumKeys; k++) {
    napi_get_element(env, keys, uint32_t(k), &props[k].name);
    props[k].attributes = napi_property_attributes(napi_writable | napi_enumerable | napi_configurable);
    if (k < kEnter) props[k].value = arrays[k];
    else napi_create_double(env, stamps[k - kEnter], &props[k].value);
  }
  napi_define_properties(env, obj, kNumKeys, props);  // one call for every property
  if (L.record) {
    // collectives[rank]: { kind, name, axes, groupSize, bytes, start, ready, end } per collective, in the order run
    napi_value colls;
    napi_create_array_with_length(env, size_t(L.n), &colls);
    for (int r = 0; r < L.n; r++) {
      const auto& recs = L.colls[size_t(r)];
      napi_value arr;
      napi_create_array_with_length(env, recs.size(), &arr);
      for (size_t i = 0; i < recs.size(); i++) {
        const CollectiveRecord& c = recs[i];
        napi_value o, x;
        napi_create_object(env, &o);
        napi_create_string_utf8(env, CollectiveKindName(c.kind), NAPI_AUTO_LENGTH, &x);
        napi_set_named_property(env, o, "kind", x);
        napi_create_string_utf8(env, c.name.c_str(), NAPI_AUTO_LENGTH, &x);
        napi_set_named_property(env, o, "name", x);
        napi_create_string_utf8(env, c.axes.c_str(), NAPI_AUTO_LENGTH, &x);
        napi_set_named_property(env, o, "axes", x);
        const std::pair<const char*, double> nums[] = {{"groupSize", double(c.group_size)}, {"bytes", c.bytes}, {"start", c.start},
                                                       {"ready", c.ready}, {"end", c.end}, {"wait", c.wait}};
        for (const auto& [key, val] : nums) {
          napi_create_double(env, val, &x);
          napi_set_named_property(env, o, key, x);
        }
        napi_set_element(env, arr, uint32_t(i), o);
      }
      napi_set_element(env, colls, uint32_t(r), arr);
    }
    napi_set_named_property(env, obj, "collectives", colls);
  }
  return obj;
}

// Drops the JS references that kept the launch's buffers alive (JS thread, once).
void Collect(napi_env env, Launch& L) {
  if (L.collected) return;
  L.collected = true;
  for (napi_ref r : L.refs) napi_delete_reference(env, r);
  L.refs.clear();
}

void CallJs(napi_env env, napi_value callback, void* context, void*) {
  auto* holder = static_cast<std::shared_ptr<Launch>*>(context);
  Launch& L = **holder;
  if (env) {
    napi_value result = Result(env, L), undefined;
    Collect(env, L);
    napi_get_undefined(env, &undefined);
    napi_call_function(env, undefined, callback, 1, &result, nullptr);
  }
  napi_release_threadsafe_function(L.tsfn, napi_tsfn_release);
}
void FinalizeTsfn(napi_env, void* data, void*) { delete static_cast<std::shared_ptr<Launch>*>(data); }

// devLaunch(program, deviceIds, inputs, inputShapes, outputs, outputShapes, options, callback?)
napi_value LaunchFn(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc < 7) return Throw(env, "devLaunch(program, deviceIds, inputs, inputShapes, outputs, outputShapes, options, callback?) expects at least seven arguments");
  void* p = nullptr;
  if (napi_get_value_external(env, argv[0], &p) != napi_ok || !p) return Throw(env, "devLaunch expects a program handle");
  auto L = std::make_shared<Launch>();
  L->t_enter = NowUs();
  L->program = *static_cast<std::shared_ptr<Program>*>(p);
  const Program& P = *L->program;
  L->n = int(Length(env, argv[1]));
  if (L->n < 1 || size_t(L->n) > P.sessions.size())
    return Throw(env, "devLaunch: " + std::to_string(L->n) + " devices given, the program was created for " + std::to_string(P.sessions.size()));
  if (Length(env, argv[2]) != uint32_t(L->n) || Length(env, argv[4]) != uint32_t(L->n))
    return Throw(env, "devLaunch: one list of inputs and one of outputs per device expected");
  L->id = g_next_launch.fetch_add(1);
  for (int r = 0; r < L->n; r++) {
    int32_t d = 0;
    napi_get_value_int32(env, At(env, argv[1], uint32_t(r)), &d);
    if (d < 0 || d > 4095) return Throw(env, "devLaunch: device id " + std::to_string(d) + " out of range");
    L->devices.push_back(d);
  }
  L->ins.assign(size_t(L->n), std::vector<OrtValue*>(P.in_c.size(), nullptr));
  L->outs.assign(size_t(L->n), std::vector<OrtValue*>(P.out_c.size(), nullptr));
  auto fail = [&]() -> napi_value {
    for (napi_ref r : L->refs) napi_delete_reference(env, r);
    L->refs.clear();
    return nullptr;
  };
  for (int r = 0; r < L->n; r++) {
    napi_value ins = At(env, argv[2], uint32_t(r)), ishapes = At(env, argv[3], uint32_t(r));
    napi_value outs = At(env, argv[4], uint32_t(r)), oshapes = At(env, argv[5], uint32_t(r));
    if (Length(env, ins) != P.in_c.size() || Length(env, outs) != P.out_c.size()) {
      Throw(env, "devLaunch: device rank " + std::to_string(r) + " has " + std::to_string(Length(env, ins)) + " inputs and " +
                     std::to_string(Length(env, outs)) + " outputs; the program takes " + std::to_string(P.in_c.size()) + " and " +
                     std::to_string(P.out_c.size()));
      return fail();
    }
    for (uint32_t i = 0; i < P.in_c.size(); i++)
      if (!Wrap(env, At(env, ins, i), At(env, ishapes, i), P.in_types[i], false, i, r, &L->ins[size_t(r)][i])) return fail();
    for (uint32_t i = 0; i < P.out_c.size(); i++)
      if (!Wrap(env, At(env, outs, i), At(env, oshapes, i), P.out_types[i], true, i, r, &L->outs[size_t(r)][i])) return fail();
  }
  // the buffers' memory must outlive the device runs: one reference to each list holds every array in it
  for (int k : {2, 4}) {
    napi_ref ref;
    napi_create_reference(env, argv[k], 1, &ref);
    L->refs.push_back(ref);
  }
  int64_t t = 30000, fr = -1, caller = 0;
  if (NumProp(env, argv[6], "timeoutMs", &t)) L->timeout_ms = t < 1 ? 1 : t;
  if (NumProp(env, argv[6], "failRank", &fr)) L->fail_rank = int(fr);
  int64_t rec = 0;
  if (NumProp(env, argv[6], "recordCollectives", &rec) && rec) L->record = true;
  L->colls.assign(size_t(L->n), {});
  NumProp(env, argv[6], "callerRuns", &caller);
  int64_t delay = 0;
  if (NumProp(env, argv[6], "delayMs", &delay) && delay > 0) L->delay_ms = std::min<int64_t>(delay, 60000);
  napi_value mp = Prop(env, argv[6], "process");
  napi_valuetype mpt = napi_undefined;
  if (mp) napi_typeof(env, mp, &mpt);
  if (mpt == napi_object) {
    // { launch, self, ranks: global rank of each local rank, rankProcess: process of each global rank }
    auto pm = std::make_shared<ProcessMap>();
    int64_t v = 0;
    if (NumProp(env, mp, "launch", &v)) pm->global_launch = uint64_t(v);
    if (NumProp(env, mp, "self", &v)) pm->self = int(v);
    napi_value ranks = Prop(env, mp, "ranks"), procs = Prop(env, mp, "rankProcess");
    if (!ranks || !procs || Length(env, ranks) != uint32_t(L->n)) {
      fail();
      return Throw(env, "devLaunch: options.process needs ranks (one per device) and rankProcess");
    }
    for (uint32_t i = 0; i < Length(env, procs); i++) {
      int32_t x = 0;
      napi_get_value_int32(env, At(env, procs, i), &x);
      pm->rank_process.push_back(x);
    }
    for (uint32_t i = 0; i < uint32_t(L->n); i++) {
      int32_t x = 0;
      napi_get_value_int32(env, At(env, ranks, i), &x);
      if (x < 0 || size_t(x) >= pm->rank_process.size() || pm->rank_process[size_t(x)] != pm->self) {
        fail();
        return Throw(env, "devLaunch: options.process.ranks[" + std::to_string(i) + "] = " + std::to_string(x) + " is not a rank of this process");
      }
      pm->local_ranks.push_back(x);
    }
    L->procs = pm;
  }
  L->errors.assign(size_t(L->n), "");
  L->failed.assign(size_t(L->n), false);
  L->start.assign(size_t(L->n), 0);
  L->end.assign(size_t(L->n), 0);
  L->threads.assign(size_t(L->n), 0);
  L->remaining = L->n;
  napi_valuetype cbt = napi_undefined;
  if (argc >= 8) napi_typeof(env, argv[7], &cbt);
  if (cbt == napi_function) {
    napi_value name;
    napi_create_string_utf8(env, "jaxts-device-launch", NAPI_AUTO_LENGTH, &name);
    auto* holder = new std::shared_ptr<Launch>(L);
    if (napi_create_threadsafe_function(env, argv[7], nullptr, name, 0, 1, holder, FinalizeTsfn, holder, CallJs, &L->tsfn) != napi_ok) {
      delete holder;
      fail();
      return Throw(env, "devLaunch: cannot create the completion callback");
    }
  }
  // A blocking launch runs rank 0 here when its device's stream is idle: only the JS thread submits, and it is busy
  // until this launch is waited for, so nothing can be queued behind it meanwhile.
  if (caller && !L->tsfn && ExecutorFor(L->devices[0])->Idle()) L->caller_rank = 0;
  for (int r = 0; r < L->n; r++)
    if (r != L->caller_rank) ExecutorFor(L->devices[size_t(r)])->Submit([L, r] { RunRank(L, r); });
  L->t_submitted = NowUs();
  if (L->caller_rank >= 0) RunRank(L, L->caller_rank);
  napi_value handle;
  napi_create_external(env, new std::shared_ptr<Launch>(L), FinalizeLaunch, nullptr, &handle);
  return handle;
}

// devWait(launch) -> result: blocks until every device of the launch finished
napi_value WaitFn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void* p = nullptr;
  if (argc < 1 || napi_get_value_external(env, argv[0], &p) != napi_ok || !p) return Throw(env, "devWait expects a launch handle");
  Launch& L = **static_cast<std::shared_ptr<Launch>*>(p);
  // the calling thread has nothing else to do: poll briefly (peers often finish within microseconds of each other,
  // and a condition-variable wake-up costs a futex call and a reschedule), then block
  // (only when the program's previous launch says this one ends within the polling window; the first one polls)
  const auto t0 = std::chrono::steady_clock::now();
  const double expected = L.program->last_us.load(std::memory_order_relaxed);
  const bool poll = expected <= 0 || L.t_enter + expected <= NowUs() + kWaitSpinUs;
  const auto until = t0 + std::chrono::microseconds(poll ? kWaitSpinUs : 0);
  for (int i = 0; poll && !L.done.load(std::memory_order_acquire); i++) {
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) break;
    CpuRelax();
  }
  if (!L.done.load(std::memory_order_acquire)) {
    std::unique_lock<std::mutex> lock(L.mu);
    L.cv.wait(lock, [&] { return L.complete; });
  }
  L.t_woke = NowUs();
  if (!L.tsfn) Collect(env, L);  // with a callback, the callback collects
  return Result(env, L);
}

// devNotify's callbacks made and not yet finalized (the finalizer runs on the JS thread once the call was made)
std::atomic<int64_t> g_live_notifies{0};
void FinalizeNotify(napi_env, void*, void*) { g_live_notifies.fetch_sub(1); }
void CallNotify(napi_env env, napi_value callback, void*, void*) {
  if (!env) return;  // the environment is going away
  napi_value undefined;
  napi_get_undefined(env, &undefined);
  napi_call_function(env, undefined, callback, 0, nullptr, nullptr);
}

// devNotify(launch, callback) -> boolean: made only when JS awaits a launch, so a launch nobody awaits (the synchronous
// fast path) pays nothing; the threadsafe function keeps the event loop alive until its one call
napi_value NotifyFn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void* p = nullptr;
  napi_valuetype t = napi_undefined;
  if (argc < 2 || napi_get_value_external(env, argv[0], &p) != napi_ok || !p || napi_typeof(env, argv[1], &t) != napi_ok || t != napi_function)
    return Throw(env, "devNotify(launch, callback) expects a launch handle and a function");
  Launch& L = **static_cast<std::shared_ptr<Launch>*>(p);
  napi_value result;
  if (L.done.load(std::memory_order_acquire)) {
    napi_get_boolean(env, false, &result);
    return result;
  }
  {
    std::lock_guard<std::mutex> lock(L.mu);
    if (L.notify) return Throw(env, "devNotify: the launch already has a completion callback");
  }
  napi_value name;
  napi_create_string_utf8(env, "jaxts-device-ready", NAPI_AUTO_LENGTH, &name);
  napi_threadsafe_function f = nullptr;
  if (napi_create_threadsafe_function(env, argv[1], nullptr, name, 0, 1, nullptr, FinalizeNotify, nullptr, CallNotify, &f) != napi_ok)
    return Throw(env, "devNotify: cannot create the completion callback");
  g_live_notifies.fetch_add(1);
  bool armed = false;
  {
    std::lock_guard<std::mutex> lock(L.mu);
    if (!L.complete) {
      L.notify = f;
      armed = true;
    }
  }
  if (!armed) napi_release_threadsafe_function(f, napi_tsfn_release);  // finished meanwhile: never called
  napi_get_boolean(env, armed, &result);
  return result;
}

// devDone(launch) -> boolean: whether every device of the launch finished (never blocks; the single-device async
// dispatch of src/backends/onnx/async-run.ts settles finished runs with it before dispatching more)
napi_value DoneFn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void* p = nullptr;
  if (argc < 1 || napi_get_value_external(env, argv[0], &p) != napi_ok || !p) return Throw(env, "devDone expects a launch handle");
  napi_value result;
  napi_get_boolean(env, (**static_cast<std::shared_ptr<Launch>*>(p)).done.load(std::memory_order_acquire), &result);
  return result;
}

napi_value LiveNotifiesFn(napi_env env, napi_callback_info) {
  napi_value v;
  napi_create_double(env, double(g_live_notifies.load()), &v);
  return v;
}

// devSetExecutorSpin(us) -> the previous value: how long idle executors poll before blocking (0: never)
napi_value SetExecutorSpinFn(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int32_t us = 0;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &us) != napi_ok) return Throw(env, "devSetExecutorSpin expects a number of microseconds");
  napi_value v;
  napi_create_int32(env, ExchangeExecutorSpinUs(std::max(0, std::min(us, 100000))), &v);
  return v;
}

napi_value OpenRendezvousFn(napi_env env, napi_callback_info) {
  napi_value v;
  napi_create_double(env, double(ShmWorld::OpenRendezvous()), &v);
  return v;
}

}  // namespace

// Queues `task` on the device's executor behind the work already there (native/block-copy.cc's copies and fences).
void SubmitToDevice(int device, std::function<void()> task) { ExecutorFor(device)->Submit(std::move(task)); }

void RegisterDevices(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"devCreateProgram", nullptr, CreateProgram, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devLaunch", nullptr, LaunchFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devWait", nullptr, WaitFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devNotify", nullptr, NotifyFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devLiveNotifies", nullptr, LiveNotifiesFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devDone", nullptr, DoneFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devProgramFromSession", nullptr, ProgramFromSessionFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devOpenRendezvous", nullptr, OpenRendezvousFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devSetExecutorSpin", nullptr, SetExecutorSpinFn, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}

}  // namespace jaxts
