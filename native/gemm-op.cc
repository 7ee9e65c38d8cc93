/** @file ONNX Runtime custom op jaxts.Gemm: Y = alpha * op(A) op(B) + beta * C (ONNX Gemm, float32) on jaxts's SGEMM, split over ORT's intra-op threads. */
// jaxts's graph optimizer swaps large float32 ONNX Gemm nodes for this op in the programs jit runs (never in
// exported models), so compiled programs keep one ORT session and ORT's own thread pool: the op hands its
// row or column blocks to KernelContext_ParallelFor. The OrtCustomOp table and the OrtApi slots used here
// are declared by their documented layout and indices (the C API is append-only).

#include "gemm-op.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fused-attrs.h"
#include "fused.h"
#include "linalg-ops.h"
#include "fft-ops.h"
#include "ort-api.h"
#include "sgemm.h"

struct OrtValue;
struct OrtTensorTypeAndShapeInfo;

namespace jaxts {
namespace {

using St = OrtStatus*;
const void* const* g_api = nullptr;
OrtCustomOpDomain* g_domain = nullptr;
const char* g_kernel = nullptr;

using namespace ort;  // slot indices (native/ort-api.h)

template <typename F>
F fn(Slot s) { return ort::At<F>(g_api, s); }

St Error(const char* op, const std::string& msg) {
  // ORT_INVALID_ARGUMENT = 2
  return fn<St (*)(int, const char*)>(kCreateStatus)(2, (std::string(op) + ": " + msg).c_str());
}

struct Kernel {
  bool transA = false, transB = false;
  float alpha = 1.f, beta = 1.f;
};

int64_t IntAttr(const OrtKernelInfo* info, const char* name, int64_t dflt) { return KernelIntAttr(g_api, info, name, dflt); }
float FloatAttr(const OrtKernelInfo* info, const char* name, float dflt) {
  float v = dflt;
  St s = fn<St (*)(const OrtKernelInfo*, const char*, float*)>(kKernelInfoGetAttributeFloat)(info, name, &v);
  if (s) { fn<void (*)(St)>(kReleaseStatus)(s); return dflt; }
  return v;
}

St CreateKernelV2(const CustomOp*, const void*, const OrtKernelInfo* info, void** out) {
  auto* k = new Kernel();
  k->transA = IntAttr(info, "transA", 0) != 0;
  k->transB = IntAttr(info, "transB", 0) != 0;
  k->alpha = FloatAttr(info, "alpha", 1.f);
  k->beta = FloatAttr(info, "beta", 1.f);
  *out = k;
  return nullptr;
}
void* CreateKernel(const CustomOp* op, const void* api, const OrtKernelInfo* info) {
  void* k = nullptr;
  CreateKernelV2(op, api, info, &k);
  return k;
}
void KernelDestroy(void* k) { delete static_cast<Kernel*>(k); }

// Shape of a tensor value (rank <= 2 here).
// Rank, dims (into d, when given and rank <= max_rank) and element count of a tensor value; false when it has no
// shape or a larger rank.
bool TensorShape(const OrtValue* v, int64_t* d, size_t max_rank, size_t* rank, int64_t* count = nullptr) {
  OrtTensorTypeAndShapeInfo* ti = nullptr;
  if (St s = fn<St (*)(const OrtValue*, OrtTensorTypeAndShapeInfo**)>(kGetTensorTypeAndShape)(v, &ti)) {
    fn<void (*)(St)>(kReleaseStatus)(s);
    return false;
  }
  size_t n = 0, elements = 0;
  fn<St (*)(const OrtTensorTypeAndShapeInfo*, size_t*)>(kGetDimensionsCount)(ti, &n);
  fn<St (*)(const OrtTensorTypeAndShapeInfo*, size_t*)>(kGetTensorShapeElementCount)(ti, &elements);
  const bool ok = n <= max_rank;
  if (ok && n && d) fn<St (*)(const OrtTensorTypeAndShapeInfo*, int64_t*, size_t)>(kGetDimensions)(ti, d, n);
  fn<void (*)(OrtTensorTypeAndShapeInfo*)>(kReleaseTensorTypeAndShapeInfo)(ti);
  *rank = n;
  if (count) *count = int64_t(elements);
  return ok;
}
// Shape of a Gemm operand (rank <= 2).
bool Dims(const OrtValue* v, int64_t* d, size_t* rank) { return TensorShape(v, d, 2, rank); }
float* Data(const OrtValue* v) {
  void* p = nullptr;
  if (St s = fn<St (*)(OrtValue*, void**)>(kGetTensorMutableData)(const_cast<OrtValue*>(v), &p)) {
    fn<void (*)(St)>(kReleaseStatus)(s);
    return nullptr;
  }
  return static_cast<float*>(p);
}

std::string Shape(const int64_t* d, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; i++) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// One parallel job: T tasks, each a contiguous band of rows (split_m) or columns of Y.
struct Job {
  const Sgemm* g;
  int tasks;
  bool split_m;
  int band;  // rows or columns per task (a multiple of the micro-tile)
};
void RunTask(void* p, size_t i) {
  const Job& j = *static_cast<const Job*>(p);
  const int lo = int(i) * j.band;
  if (j.split_m) SgemmBlock(*j.g, lo, std::min(j.g->M, lo + j.band), 0, j.g->N);
  else SgemmBlock(*j.g, 0, j.g->M, lo, std::min(j.g->N, lo + j.band));
}

unsigned Threads() {
  static const unsigned n = [] { unsigned h = std::thread::hardware_concurrency(); return h ? h : 1u; }();
  return n;
}

St KernelComputeV2(void* kp, OrtKernelContext* ctx) {
  const Kernel& k = *static_cast<Kernel*>(kp);
  size_t nin = 0;
  fn<St (*)(const OrtKernelContext*, size_t*)>(kKernelContextGetInputCount)(ctx, &nin);
  const OrtValue* in[3] = {nullptr, nullptr, nullptr};
  for (size_t i = 0; i < nin && i < 3; i++)
    if (St s = fn<St (*)(const OrtKernelContext*, size_t, const OrtValue**)>(kKernelContextGetInput)(ctx, i, &in[i])) return s;
  if (!in[0] || !in[1]) return Error("jaxts.Gemm", "A and B are required");
  int64_t da[2] = {0, 0}, db[2] = {0, 0}, dc[2] = {1, 1};
  size_t ra = 0, rb = 0, rc = 0;
  if (!Dims(in[0], da, &ra) || !Dims(in[1], db, &rb) || ra != 2 || rb != 2)
    return Error("jaxts.Gemm", "A and B must be matrices, got A" + Shape(da, ra) + " B" + Shape(db, rb));
  const int64_t M = k.transA ? da[1] : da[0], K = k.transA ? da[0] : da[1];
  const int64_t KB = k.transB ? db[1] : db[0], N = k.transB ? db[0] : db[1];
  if (K != KB) return Error("jaxts.Gemm", "inner dimensions differ: A" + Shape(da, ra) + (k.transA ? "^T" : "") + " B" + Shape(db, rb) + (k.transB ? "^T" : ""));
  if (M > INT32_MAX / 2 || N > INT32_MAX / 2 || K > INT32_MAX / 2) return Error("jaxts.Gemm", "matrix too large");
  const int64_t ydims[2] = {M, N};
  OrtValue* yv = nullptr;
  if (St s = fn<St (*)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**)>(kKernelContextGetOutput)(ctx, 0, ydims, 2, &yv)) return s;
  if (M == 0 || N == 0) return nullptr;
  float* Y = Data(yv);
  if (!Y) return Error("jaxts.Gemm", "cannot access the output");
  const float* A = Data(in[0]);
  const float* B = Data(in[1]);
  Sgemm g{int(M), int(N), int(K), A, k.transA ? long(M) : long(K), k.transA, B, k.transB ? long(K) : long(N), k.transB,
          k.alpha, Y, long(N), false};
  if (in[2] && k.beta != 0.f) {
    // + beta * C broadcast to [M, N] (unidirectional numpy broadcasting, as ONNX Gemm allows), added in the
    // micro-kernels' epilogue: no separate pass over Y
    if (!Dims(in[2], dc, &rc)) return Error("jaxts.Gemm", "C must have rank <= 2");
    const int64_t cm = rc == 2 ? dc[0] : 1, cn = rc >= 1 ? dc[rc - 1] : 1;
    if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
      return Error("jaxts.Gemm", "C" + Shape(dc, rc) + " does not broadcast to [" + std::to_string(M) + "," + std::to_string(N) + "]");
    g.Cin = Data(in[2]);
    g.cin_rs = cm == 1 ? 0 : long(cn);
    g.cin_cs = cn == 1 ? 0 : 1;
    g.beta = k.beta;
  }
  // Split Y into bands for the intra-op threads. A band re-packs the whole of the other operand, so split
  // the side whose packing is cheaper to repeat (a transposed B or plain A is gathered, not copied). In a
  // session with one intra-op thread ParallelFor runs the bands one after the other on the calling thread.
  const double flops = 2.0 * double(M) * double(N) * double(K);
  const int T = flops < double(1 << 22) ? 1 : int(Threads());
  const int mr = SgemmTileRows(), nr = SgemmTileCols();
  const double repackB = double(K) * double(N) * (k.transB ? 2 : 1), repackA = double(M) * double(K) * (k.transA ? 1 : 2);
  bool split_m = M >= int64_t(T) * mr && (repackB <= repackA || N < int64_t(T) * nr);
  if (T == 1 || (!split_m && N < int64_t(T) * nr)) {
    SgemmBlock(g, 0, g.M, 0, g.N);
    return nullptr;
  }
  const int dim = split_m ? g.M : g.N, tile = split_m ? mr : nr;
  const int band = ((dim + T - 1) / T + tile - 1) / tile * tile;
  Job job{&g, (dim + band - 1) / band, split_m, band};
  return fn<St (*)(const OrtKernelContext*, void (*)(void*, size_t), size_t, size_t, void*)>(kKernelContextParallelFor)(
      ctx, RunTask, size_t(job.tasks), 0, &job);
}
void KernelCompute(void* k, OrtKernelContext* ctx) {
  // only reached if ORT ignores KernelComputeV2; errors cannot be reported from here
  if (St s = KernelComputeV2(k, ctx)) {
    std::fprintf(stderr, "jaxts.Gemm failed\n");
    fn<void (*)(St)>(kReleaseStatus)(s);
  }
}

const char* GetName(const CustomOp*) { return "Gemm"; }
const char* GetEp(const CustomOp*) { return nullptr; }  // CPU execution provider
int FloatType(const CustomOp*, size_t) { return 1; }     // ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
size_t Three(const CustomOp*) { return 3; }
size_t One(const CustomOp*) { return 1; }
int InputCharacteristic(const CustomOp*, size_t i) { return i == 2 ? 1 : 0; }  // C is optional
int Required(const CustomOp*, size_t) { return 0; }
int DefaultMem(const CustomOp*, size_t) { return 0; }  // OrtMemTypeDefault
int OneArity(const CustomOp*) { return 1; }

// ------------------------------------------------------------------ jaxts.Fused: a fused elementwise program in a graph
// Inputs: `num_inputs` float32 tensors of one shape, then `num_scalars` one-element float32 tensors; outputs: float32
// tensors of that shape. Attribute `program`: the encoding of src/backends/onnx/native-fused.ts (native/fused.cc runs it).
struct FusedKernel : FusedAttrs {};

St CreateFusedV2(const CustomOp*, const void*, const OrtKernelInfo* info, void** out) {
  auto* k = new FusedKernel();
  k->Read(g_api, info);
  *out = k;
  return nullptr;
}
void* CreateFused(const CustomOp* op, const void* api, const OrtKernelInfo* info) {
  void* k = nullptr;
  CreateFusedV2(op, api, info, &k);
  return k;
}
void DestroyFused(void* k) { delete static_cast<FusedKernel*>(k); }

struct FusedJob {
  const FusedProgram* prog;
  const float* const* ins;
  const float* scalars;
  float* const* outs;
  int64_t n;
};
void RunFusedTask(void* p, size_t i) {
  const FusedJob& j = *static_cast<const FusedJob*>(p);
  RunFusedChunk(j.prog, j.ins, j.scalars, j.outs, j.n, int64_t(i));
}

St ComputeFusedV2(void* kp, OrtKernelContext* ctx) {
  const FusedKernel& k = *static_cast<FusedKernel*>(kp);
  if (!k.prog) return Error("jaxts.Fused", k.error);
  size_t nin = 0;
  fn<St (*)(const OrtKernelContext*, size_t*)>(kKernelContextGetInputCount)(ctx, &nin);
  if (nin != size_t(k.num_inputs + k.num_scalars))
    return Error("jaxts.Fused", "expected " + std::to_string(k.num_inputs + k.num_scalars) + " inputs, got " + std::to_string(nin));
  std::vector<const float*> ins(k.num_inputs);
  std::vector<float> scalars(k.num_scalars);
  int64_t dims[8] = {0};
  size_t rank = 0;
  int64_t n = 0;
  for (size_t i = 0; i < nin; i++) {
    const OrtValue* v = nullptr;
    if (St s = fn<St (*)(const OrtKernelContext*, size_t, const OrtValue**)>(kKernelContextGetInput)(ctx, i, &v)) return s;
    // input 0's shape is the outputs' shape; the others only need their element counts
    int64_t count = -1;
    size_t r = 0;
    if (!TensorShape(v, i == 0 ? dims : nullptr, 8, &r, &count) && i == 0) return Error("jaxts.Fused", "rank > 8");
    if (i == 0) rank = r;
    if (int(i) < k.num_inputs) {
      if (i == 0) {
        n = count;
      } else if (count != n) {
        return Error("jaxts.Fused", "input " + std::to_string(i) + " has " + std::to_string(count) + " elements, input 0 has " + std::to_string(n));
      }
      ins[i] = Data(v);
    } else {
      if (count != 1) return Error("jaxts.Fused", "scalar input " + std::to_string(i) + " has " + std::to_string(count) + " elements");
      scalars[i - k.num_inputs] = *Data(v);
    }
  }
  const size_t nout = FusedOutputCount(k.prog);
  std::vector<float*> outs(nout);
  for (size_t j = 0; j < nout; j++) {
    OrtValue* o = nullptr;
    if (St s = fn<St (*)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**)>(kKernelContextGetOutput)(ctx, j, dims, rank, &o)) return s;
    outs[j] = n ? Data(o) : nullptr;
  }
  if (n == 0) return nullptr;
  FusedJob job{k.prog, ins.data(), scalars.data(), outs.data(), n};
  const int64_t chunks = (n + FusedChunkElements() - 1) / FusedChunkElements();
  if (chunks == 1) { RunFusedTask(&job, 0); return nullptr; }
  return fn<St (*)(const OrtKernelContext*, void (*)(void*, size_t), size_t, size_t, void*)>(kKernelContextParallelFor)(
      ctx, RunFusedTask, size_t(chunks), 0, &job);
}
void ComputeFused(void* k, OrtKernelContext* ctx) {
  if (St s = ComputeFusedV2(k, ctx)) {
    std::fprintf(stderr, "jaxts.Fused failed\n");
    fn<void (*)(St)>(kReleaseStatus)(s);
  }
}
const char* FusedName(const CustomOp*) { return "Fused"; }
int Variadic(const CustomOp*, size_t) { return 2; }  // INPUT_OUTPUT_VARIADIC: any number of float32 tensors

CustomOp g_fused_op = {
    16,
    CreateFused, FusedName, GetEp, FloatType, One, FloatType, One, ComputeFused, DestroyFused,
    Variadic, Variadic, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreateFusedV2, ComputeFusedV2,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};

CustomOp g_op = {
    16,  // the OrtCustomOp version whose members are filled in (V2 create/compute)
    CreateKernel, GetName, GetEp, FloatType, Three, FloatType, One, KernelCompute, KernelDestroy,
    InputCharacteristic, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreateKernelV2, KernelComputeV2,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

const char* RegisterGemmOp(const void* const* api, const char* version) {
  if (g_domain) return g_kernel;
  int major = 0, minor = 0;
  if (std::sscanf(version, "%d.%d", &major, &minor) != 2 || major < 1 || (major == 1 && minor < 18)) return nullptr;
  const char* kernel = SgemmKernelName();
  const char* off = std::getenv("JAXTS_NATIVE_GEMM");
  const bool gemm = kernel && !(off && std::strcmp(off, "0") == 0);
  g_api = api;
  // Gemm and Fused need a fast SGEMM micro-kernel for this CPU; the float64 linalg ops (native/linalg-ops.cc) are
  // plain C++ and always join the domain
  CustomOp* ops[2 + kMaxLinalgOps + kMaxFftOps];
  size_t n = 0;
  if (gemm) {
    ops[n++] = &g_op;
    ops[n++] = &g_fused_op;
  }
  n += LinalgCustomOps(api, ops + n);
  n += FftCustomOps(api, ops + n);  // native/fft-ops.cc: plain C++, always present
  // the domain lives as long as the process: every session may use it
  if (St s = CreateOpDomain(api, "jaxts", ops, n, &g_domain)) {
    fn<void (*)(St)>(kReleaseStatus)(s);
    g_domain = nullptr;
    return nullptr;
  }
  g_kernel = gemm ? kernel : nullptr;
  return g_kernel;
}

bool LinalgOpsRegistered() { return g_domain != nullptr; }

OrtStatus* AddGemmOpDomain(OrtSessionOptions* options) { return AddOpDomain(g_api, options, g_domain); }

}  // namespace jaxts
