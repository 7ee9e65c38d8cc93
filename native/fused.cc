/** @file Native fused float32 elementwise kernels: a FusedSpec evaluated block by block with AVX-512 / AVX2 / SSE2 (or portable) vectors on a small thread pool, straight over the caller's buffers. */
// The WebAssembly kernel (src/backends/onnx/wasm-kernel.ts) evaluates the same programs 4 lanes at a time and has to
// copy every chunk into shared memory for its helper threads. Here a program is a list of values (inputs, scalars,
// constants, operations on earlier values); each thread takes 32K-element chunks and evaluates them in 512-element
// blocks, one vectorized loop per operation with the block's values kept in L1 (the numexpr scheme), reading the
// inputs and writing the outputs in place. Results are bit-identical to the WebAssembly kernel's, on every ISA path.

#include "cpu-level.h"

#ifdef JAXTS_X86
#include <immintrin.h>
#endif
#include <node_api.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fused.h"

namespace jaxts_fused {

enum Tag : int32_t { kInput = 0, kScalar = 1, kConst = 2, kOp = 3 };
// operation codes: the order of FUSED_OPS in src/backends/onnx/native-fused.ts
enum Op : int32_t {
  kNeg, kAbs, kSqrt, kRsqrt, kFloor, kCeil, kSign, kExp, kLog, kTanh, kLogistic,
  kAdd, kSub, kMul, kDiv, kMax, kMin, kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kNot, kSelect, kNumOps
};

struct Value {
  int32_t tag, op, a, b, c;
  float value;
};
struct Program {
  std::vector<Value> values;
  std::vector<int32_t> outputs;
  int32_t num_inputs = 0, num_scalars = 0;
};

constexpr int kBlock = 512;
constexpr int64_t kChunk = 64 * kBlock;

// the WebAssembly kernel's fitted coefficients (lowest degree first) and split ln 2
constexpr float cExp[] = {0.4999999403953552f, 0.1666652113199234f, 0.04166838899254799f, 0.008368710055947304f, 0.001381461275741458f};
constexpr float cLog[] = {0.3333390951156616f, -0.2500133812427521f, 0.19963063299655914f, -0.1657758504152298f,
                          0.14914768934249878f, -0.14267486333847046f, 0.08700434863567352f};
constexpr float cTanhP[] = {1.0f, 0.13381025195121765f, 0.003495586570352316f, 2.0609057173714973e-05f, 1.335463029050743e-08f};
constexpr float cTanhQ[] = {1.0f, 0.4671434164047241f, 0.025876976549625397f, 0.00032856324105523527f, 7.776544634907623e-07f};
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;

// the transcendental helpers are large: without this GCC calls them per vector (zmm arguments spilled around each call)
#define FUSED_INLINE inline __attribute__((always_inline))

using EvalFn = void (*)(const Program&, const float* const*, const float*, float* const*, int64_t, int, float*, const float**);

#ifdef JAXTS_X86
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
namespace w16 {
#define FUSED_W 16
#include "fused-kernel.inc"
#undef FUSED_W
}  // namespace w16
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace w8 {
#define FUSED_W 8
#include "fused-kernel.inc"
#undef FUSED_W
}  // namespace w8
#pragma GCC pop_options

namespace w4 {
#define FUSED_W 4
#include "fused-kernel.inc"
#undef FUSED_W
}  // namespace w4
#endif

// no intrinsics: what non-x86 builds run (and JAXTS_CPU=portable on x86, so the tests here cover it)
namespace portable {
#define FUSED_W 4
#define FUSED_PORTABLE 1
#include "fused-kernel.inc"
#undef FUSED_PORTABLE
#undef FUSED_W
}  // namespace portable

struct Isa {
  EvalFn eval;
  const char* name;
};
const Isa& TheIsa() {
  static const Isa isa = [] {
    const jaxts::CpuLevel level = jaxts::TheCpuLevel();
    const char* name = jaxts::CpuLevelName(level);
    switch (level) {
#ifdef JAXTS_X86
      case jaxts::CpuLevel::kAvx512: return Isa{w16::EvalBlock, name};
      case jaxts::CpuLevel::kAvx2: return Isa{w8::EvalBlock, name};
      case jaxts::CpuLevel::kSse2: return Isa{w4::EvalBlock, name};
#endif
      default: return Isa{portable::EvalBlock, name};
    }
  }();
  return isa;
}

struct Job {
  const Program* p;
  const float* const* ins;
  const float* scalars;
  float* const* outs;
  int64_t n;
  std::atomic<int64_t> next{0};
};

// Evaluates chunks of the job until none is left (every thread of a call runs this).
void RunChunks(Job& j) {
  thread_local std::vector<float> scratch;
  thread_local std::vector<const float*> src;
  const size_t nv = j.p->values.size();
  if (scratch.size() < nv * kBlock) scratch.resize(nv * kBlock);
  if (src.size() < nv) src.resize(nv);
  const EvalFn eval = TheIsa().eval;
  for (;;) {
    const int64_t lo = j.next.fetch_add(kChunk);
    if (lo >= j.n) return;
    const int64_t hi = std::min(j.n, lo + kChunk);
    for (int64_t b = lo; b < hi; b += kBlock) eval(*j.p, j.ins, j.scalars, j.outs, b, int(std::min<int64_t>(kBlock, hi - b)), scratch.data(), src.data());
  }
}

// Helper threads (one per extra core) that join calls large enough to share; the calling thread always takes part,
// so a helper that wakes late (or never) only costs parallelism.
class Pool {
 public:
  static Pool& Get() {
    static Pool* pool = new Pool();  // never destroyed: helpers may still be parked at exit
    return *pool;
  }
  bool HasHelpers() const { return !threads_.empty(); }
  /** Runs j on this thread and the helpers; false (nothing done) when another thread's call holds the pool. */
  bool TryRun(Job& j) {
    std::unique_lock<std::mutex> owner(run_mu_, std::try_to_lock);
    if (!owner.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> l(mu_);
      job_ = &j;
      gen_++;
    }
    cv_.notify_all();
    RunChunks(j);
    std::unique_lock<std::mutex> l(mu_);
    job_ = nullptr;  // a helper waking from now on finds no job
    done_.wait(l, [&] { return active_ == 0; });
    return true;
  }

 private:
  Pool() {
    const unsigned hw = std::thread::hardware_concurrency();
    for (unsigned i = 1; i < hw && i < 64; i++) threads_.emplace_back([this] { Work(); });
    for (auto& t : threads_) t.detach();
  }
  void Work() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return gen_ != seen; });
      seen = gen_;
      Job* j = job_;
      if (!j) continue;
      active_++;
      l.unlock();
      RunChunks(*j);
      l.lock();
      if (--active_ == 0) done_.notify_all();
    }
  }
  std::vector<std::thread> threads_;
  std::mutex run_mu_;  // one call at a time uses the helpers (calls from several JS threads run alone)
  std::mutex mu_;
  std::condition_variable cv_, done_;
  Job* job_ = nullptr;
  uint64_t gen_ = 0;
  int active_ = 0;
};

// ------------------------------------------------------------------ N-API
napi_value Throw(napi_env env, const std::string& msg) {
  napi_throw_error(env, nullptr, ("jaxts-fused: " + msg).c_str());
  return nullptr;
}

bool Floats(napi_env env, napi_value v, float** data, size_t* len) {
  napi_typedarray_type t;
  void* p = nullptr;
  napi_value ab;
  size_t off = 0;
  if (napi_get_typedarray_info(env, v, &t, len, &p, &ab, &off) != napi_ok || t != napi_float32_array) return false;
  *data = static_cast<float*>(p);
  return true;
}

void FinalizeProgram(napi_env, void* data, void*) { delete static_cast<Program*>(data); }

// Parses code = [nv, nout, nv x (tag, x, a, b, c), nout outputs]; nullptr (and *err) when malformed.
Program* Parse(const int32_t* c, size_t len, int32_t ni, int32_t ns, std::string* err) {
  if (len < 2 || c[0] < 0 || c[1] < 0 || len != size_t(2 + 5 * int64_t(c[0]) + c[1])) { *err = "malformed program"; return nullptr; }
  auto* prog = new Program();
  prog->num_inputs = ni;
  prog->num_scalars = ns;
  const int32_t nv = c[0], nout = c[1];
  for (int32_t v = 0; v < nv; v++) {
    const int32_t* r = c + 2 + 5 * v;
    Value x{r[0], 0, -1, -1, -1, 0.f};
    bool ok = true;
    if (r[0] == kInput) { x.a = r[1]; ok = r[1] >= 0 && r[1] < ni; }
    else if (r[0] == kScalar) { x.a = r[1]; ok = r[1] >= 0 && r[1] < ns; }
    else if (r[0] == kConst) std::memcpy(&x.value, &r[1], 4);
    else if (r[0] == kOp) {
      x.op = r[1];
      x.a = r[2];
      x.b = r[3];
      x.c = r[4];
      const int arity = x.op >= kAdd && x.op <= kOr ? 2 : x.op == kSelect ? 3 : 1;
      ok = x.op >= 0 && x.op < kNumOps;
      const int32_t args[3] = {x.a, x.b, x.c};
      for (int k = 0; k < 3 && ok; k++) ok = k < arity ? args[k] >= 0 && args[k] < v : args[k] == -1;
    } else ok = false;
    if (!ok) {
      delete prog;
      *err = "malformed value " + std::to_string(v);
      return nullptr;
    }
    prog->values.push_back(x);
  }
  for (int32_t j = 0; j < nout; j++) {
    const int32_t o = c[2 + 5 * nv + j];
    if (o < 0 || o >= nv) {
      delete prog;
      *err = "malformed output " + std::to_string(j);
      return nullptr;
    }
    prog->outputs.push_back(o);
  }
  return prog;
}

// fusedCompile(code: Int32Array, numInputs, numScalars) -> handle. code = [nv, nout, nv x (tag, x, a, b, c), nout outputs]
napi_value Compile(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  napi_typedarray_type t;
  size_t len = 0, off = 0;
  void* p = nullptr;
  napi_value ab;
  int32_t ni = 0, ns = 0;
  if (argc < 3 || napi_get_typedarray_info(env, argv[0], &t, &len, &p, &ab, &off) != napi_ok || t != napi_int32_array ||
      napi_get_value_int32(env, argv[1], &ni) != napi_ok || napi_get_value_int32(env, argv[2], &ns) != napi_ok)
    return Throw(env, "fusedCompile(code: Int32Array, numInputs, numScalars)");
  std::string err;
  Program* prog = Parse(static_cast<const int32_t*>(p), len, ni, ns, &err);
  if (!prog) return Throw(env, err);
  napi_value handle;
  napi_create_external(env, prog, FinalizeProgram, nullptr, &handle);
  return handle;
}

// fusedRun(handle, inputs: Float32Array[], scalars: Float32Array, outputs: Float32Array[], n)
napi_value Run(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void* hp = nullptr;
  int64_t n = 0;
  if (argc < 5 || napi_get_value_external(env, argv[0], &hp) != napi_ok || !hp || napi_get_value_int64(env, argv[4], &n) != napi_ok || n < 0)
    return Throw(env, "fusedRun(handle, inputs, scalars, outputs, n)");
  const Program& p = *static_cast<Program*>(hp);
  std::vector<const float*> ins(p.num_inputs);
  std::vector<float*> outs(p.outputs.size());
  float* scalars = nullptr;
  size_t len = 0;
  if (!Floats(env, argv[2], &scalars, &len) || len < size_t(p.num_scalars)) return Throw(env, "scalars must be a Float32Array of the program's scalars");
  for (int side = 0; side < 2; side++) {
    napi_value arr = argv[side ? 3 : 1];
    const size_t want = side ? outs.size() : ins.size();
    uint32_t count = 0;
    if (napi_get_array_length(env, arr, &count) != napi_ok || count != want)
      return Throw(env, std::string(side ? "outputs" : "inputs") + ": expected " + std::to_string(want) + " Float32Arrays");
    for (uint32_t i = 0; i < count; i++) {
      napi_value e;
      float* d = nullptr;
      napi_get_element(env, arr, i, &e);
      if (!Floats(env, e, &d, &len) || len < size_t(n))
        return Throw(env, std::string(side ? "output " : "input ") + std::to_string(i) + " must be a Float32Array of at least " + std::to_string(n) + " elements");
      if (side) outs[i] = d; else ins[i] = d;
    }
  }
  Job j;
  j.p = &p;
  j.ins = ins.data();
  j.scalars = scalars;
  j.outs = outs.data();
  j.n = n;
  Pool& pool = Pool::Get();
  if (!(n >= 4 * kChunk && pool.HasHelpers() && pool.TryRun(j))) RunChunks(j);
  return nullptr;
}

// fusedIsa() -> "avx512" | "avx2" | "sse2" | "portable"
napi_value IsaName(napi_env env, napi_callback_info) {
  napi_value v;
  napi_create_string_utf8(env, TheIsa().name, NAPI_AUTO_LENGTH, &v);
  return v;
}

}  // namespace jaxts_fused

namespace jaxts {
FusedProgram* ParseFused(const int32_t* code, size_t len, int num_inputs, int num_scalars, std::string* err) {
  return reinterpret_cast<FusedProgram*>(jaxts_fused::Parse(code, len, num_inputs, num_scalars, err));
}
void FreeFused(FusedProgram* p) { delete reinterpret_cast<jaxts_fused::Program*>(p); }
size_t FusedOutputCount(const FusedProgram* p) { return reinterpret_cast<const jaxts_fused::Program*>(p)->outputs.size(); }
int64_t FusedChunkElements() { return jaxts_fused::kChunk; }
void RunFusedChunk(const FusedProgram* p, const float* const* ins, const float* scalars, float* const* outs, int64_t n, int64_t chunk) {
  jaxts_fused::Job j;
  j.p = reinterpret_cast<const jaxts_fused::Program*>(p);
  j.ins = ins;
  j.scalars = scalars;
  j.outs = outs;
  j.n = std::min(n, (chunk + 1) * jaxts_fused::kChunk);
  j.next.store(chunk * jaxts_fused::kChunk);
  // exactly one chunk: the first fetch_add takes [chunk*kChunk, ...), the next one is past j.n
  jaxts_fused::RunChunks(j);
}

bool MatchScaledUpdate(const FusedProgram* fp, FusedScaledUpdate* m) {
  using namespace jaxts_fused;
  const Program& p = *reinterpret_cast<const Program*>(fp);
  if (p.outputs.size() != 1) return false;
  const auto& vs = p.values;
  const Value& r = vs[size_t(p.outputs[0])];
  if (r.tag != kOp || (r.op != kSub && r.op != kAdd)) return false;
  const auto is_w = [&](int v) { return vs[size_t(v)].tag == kInput && vs[size_t(v)].a > 0; };
  // the multiply x * s (or s * x); which operand of r it is
  int mul = -1, w = -1;
  if (is_w(r.a)) mul = r.b, w = r.a;
  else if (r.op == kAdd && is_w(r.b)) mul = r.a, w = r.b;
  if (mul < 0 || vs[size_t(mul)].tag != kOp || vs[size_t(mul)].op != kMul) return false;
  const Value& x = vs[size_t(mul)];
  const auto is_x = [&](int v) { return vs[size_t(v)].tag == kInput && vs[size_t(v)].a == 0; };
  const auto is_s = [&](int v) { return vs[size_t(v)].tag == kScalar || vs[size_t(v)].tag == kConst; };
  int s = -1;
  if (is_x(x.a) && is_s(x.b)) s = x.b, m->s_first = false;
  else if (is_s(x.a) && is_x(x.b)) s = x.a, m->s_first = true;
  else return false;
  m->w_input = vs[size_t(w)].a;
  m->scalar = vs[size_t(s)].tag == kScalar ? vs[size_t(s)].a : -1;
  m->value = vs[size_t(s)].value;
  m->sub = r.op == kSub;
  m->w_first = w == r.a;
  return true;
}

void RegisterFused(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"fusedCompile", nullptr, jaxts_fused::Compile, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"fusedRun", nullptr, jaxts_fused::Run, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"fusedIsa", nullptr, jaxts_fused::IsaName, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}
}  // namespace jaxts
