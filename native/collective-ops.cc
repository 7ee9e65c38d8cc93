/** @file ONNX Runtime custom ops of domain jaxts.collectives: collectives inside a compiled per-device program, through the calling thread's communicator. */
// Every device runs the same ONNX program; an op learns which device it runs on from the thread-local context
// the executor set (native/device-context.h). Its `groups` attribute lists every group of ranks (flattened,
// `group_size` each); the op takes part in the group holding its rank. The ops move leading-axis blocks only:
// the lowering (src/parallel/lower-collectives.ts) transposes and reshapes around them for other axes.
//   AllReduce         x -> y (same shape)             attr reduce: 0 sum, 1 max, 2 min
//   AllGather         x -> y[n, ...x]                 the group's inputs stacked in group order
//   ReduceScatter     x[n, ...] -> y[...]             chunk p (this rank's group position) reduced over the group
//   AllToAll          x[n, ...] -> y[n, ...]          y[q] = member q's x[p]
//   CollectivePermute x -> y (same shape)             attr pairs: (source, destination) group positions; others zeros
//   AxisIndex         () -> int32 scalar              attrs dims (mesh shape), axis: this rank's coordinate
//   AllReduceEpilogue x, operands..., scalars... -> outputs (float32, x's shape): a fused elementwise program
//                     (attrs program, num_inputs, num_scalars as jaxts.Fused's; its input 0 = AllReduce(x), inputs
//                     1.. = the operands, replicated over the group) applied to the all-reduce of x
// Inputs and outputs are one dynamically typed tensor (float32, float64, int32, int64, bool, int8, uint8).

#include "collective-ops.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "communicator.h"
#include "device-context.h"
#include "fused-attrs.h"
#include "fused.h"
#include "ort-api.h"

struct OrtValue;
struct OrtTensorTypeAndShapeInfo;

namespace jaxts {
namespace {

using St = OrtStatus*;
const void* const* g_api = nullptr;
OrtCustomOpDomain* g_domain = nullptr;

using namespace ort;
template <typename F>
F fn(Slot s) { return ort::At<F>(g_api, s); }

St Error(const std::string& msg) { return fn<St (*)(int, const char*)>(kCreateStatus)(2, msg.c_str()); }  // ORT_INVALID_ARGUMENT

using Kind = CollectiveKind;

struct Kernel {
  Kind kind;
  ReduceOp op = ReduceOp::kSum;
  int64_t group_size = 1;
  std::vector<int64_t> groups, pairs, dims;
  int64_t axis = 0;
  std::string label, axes;  // for errors: what the user called ("psum") and over what ("mesh axis 'x'")
  // AllReduceEpilogue: its program (nullptr and `error` when malformed) and input counts
  bool epilogue = false;
  FusedAttrs fused;
};

int64_t IntAttr(const OrtKernelInfo* info, const char* name, int64_t dflt) { return KernelIntAttr(g_api, info, name, dflt); }

template <Kind K>
St Create(const CustomOp*, const void*, const OrtKernelInfo* info, void** out) {
  auto* k = new Kernel();
  k->kind = K;
  k->op = ReduceOp(IntAttr(info, "reduce", 0));
  k->group_size = IntAttr(info, "group_size", 1);
  k->groups = KernelIntsAttr(g_api, info, "groups");
  k->pairs = KernelIntsAttr(g_api, info, "pairs");
  k->dims = KernelIntsAttr(g_api, info, "dims");
  k->axis = IntAttr(info, "axis", 0);
  k->label = KernelStringAttr(g_api, info, "label", CollectiveKindName(K));
  k->axes = KernelStringAttr(g_api, info, "axes", "its group");
  *out = k;
  return nullptr;
}
St CreateEpilogue(const CustomOp* op, const void* api, const OrtKernelInfo* info, void** out) {
  Create<kAllReduce>(op, api, info, out);
  auto* k = static_cast<Kernel*>(*out);
  k->epilogue = true;
  k->fused.Read(g_api, info);
  return nullptr;
}
void* CreateEpilogueV1(const CustomOp* op, const void* api, const OrtKernelInfo* info) {
  void* k = nullptr;
  CreateEpilogue(op, api, info, &k);
  return k;
}
template <Kind K>
void* CreateV1(const CustomOp* op, const void* api, const OrtKernelInfo* info) {
  void* k = nullptr;
  Create<K>(op, api, info, &k);
  return k;
}
void Destroy(void* k) { delete static_cast<Kernel*>(k); }

using Tensor = KernelTensor;
St Describe(const OrtValue* v, Tensor* t) { return DescribeTensor(g_api, v, t); }

std::string ShapeStr(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); i++) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

St Compute(void* kp, OrtKernelContext* ctx) {
  const Kernel& k = *static_cast<Kernel*>(kp);
  const std::string who = std::string("jaxts.collectives.") + CollectiveKindName(k.kind) + " (" + k.label + " over " + k.axes + ")";
  DeviceContext* dev = CurrentDevice();
  if (!dev || !dev->comm) return Error(who + ": runs only inside a device program launched on the device runtime");
  if (k.kind == kAxisIndex) {
    // coordinate along `axis` of this rank in the row-major mesh `dims`
    if (k.axis < 0 || size_t(k.axis) >= k.dims.size()) return Error(who + ": axis out of range of dims");
    int64_t stride = 1;
    for (size_t i = size_t(k.axis) + 1; i < k.dims.size(); i++) stride *= k.dims[i];
    OrtValue* o = nullptr;
    if (St s = fn<St (*)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**)>(kKernelContextGetOutput)(ctx, 0, nullptr, 0, &o)) return s;
    Tensor t;
    if (St s = Describe(o, &t)) return s;
    *static_cast<int32_t*>(t.data) = int32_t((dev->rank / stride) % k.dims[size_t(k.axis)]);
    return nullptr;
  }
  const OrtValue* in = nullptr;
  if (St s = fn<St (*)(const OrtKernelContext*, size_t, const OrtValue**)>(kKernelContextGetInput)(ctx, 0, &in)) return s;
  Tensor x;
  if (St s = Describe(in, &x)) return s;
  if (!ElementBytes(x.type)) return Error(who + ": element type " + std::to_string(x.type) + " is not supported");
  // AllReduceEpilogue: the operands and scalars after x, the program's outputs of x's shape
  CollectiveEpilogue epi;
  if (k.epilogue) {
    const std::string ew = "jaxts.collectives.AllReduceEpilogue (" + k.label + " over " + k.axes + ")";
    if (!k.fused.prog) return Error(ew + ": malformed program: " + k.fused.error);
    size_t nin = 0;
    fn<St (*)(const OrtKernelContext*, size_t*)>(kKernelContextGetInputCount)(ctx, &nin);
    if (nin != size_t(k.fused.num_inputs + k.fused.num_scalars))
      return Error(ew + ": expected " + std::to_string(k.fused.num_inputs + k.fused.num_scalars) + " inputs, got " + std::to_string(nin));
    if (x.type != kFloat32) return Error(ew + ": input 0 must be float32, got element type " + std::to_string(x.type));
    epi.program = k.fused.prog;
    for (size_t i = 1; i < nin; i++) {
      const OrtValue* v = nullptr;
      if (St s = fn<St (*)(const OrtKernelContext*, size_t, const OrtValue**)>(kKernelContextGetInput)(ctx, i, &v)) return s;
      Tensor t;
      if (St s = Describe(v, &t)) return s;
      const bool scalar = i >= size_t(k.fused.num_inputs);
      if (t.type != kFloat32 || t.count != (scalar ? 1 : x.count))
        return Error(ew + ": input " + std::to_string(i) + " " + ShapeStr(t.dims) + " of element type " + std::to_string(t.type) +
                     " must be float32 with " + (scalar ? std::string("one element") : std::to_string(x.count) + " elements like input 0 " + ShapeStr(x.dims)));
      if (scalar) epi.scalars.push_back(*static_cast<const float*>(t.data));
      else epi.operands.push_back(static_cast<const float*>(t.data));
    }
    for (size_t j = 0; j < FusedOutputCount(k.fused.prog); j++) {
      OrtValue* o = nullptr;
      if (St s = fn<St (*)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**)>(kKernelContextGetOutput)(ctx, j, x.dims.data(), x.dims.size(), &o)) return s;
      Tensor t;
      if (St s = Describe(o, &t)) return s;
      epi.outs.push_back(static_cast<float*>(t.data));
    }
  }
  // this rank's group
  const int64_t n = k.group_size;
  std::vector<int> group;
  for (size_t g = 0; n > 0 && g + size_t(n) <= k.groups.size(); g += size_t(n)) {
    for (int64_t j = 0; j < n; j++)
      if (k.groups[g + size_t(j)] == dev->rank) {
        group.assign(k.groups.begin() + long(g), k.groups.begin() + long(g) + n);
        break;
      }
    if (!group.empty()) break;
  }
  if (group.empty()) return Error(who + ": rank " + std::to_string(dev->rank) + " is in none of its groups");
  std::vector<int64_t> ydims = x.dims;
  size_t chunk = x.count;
  if (k.kind == kAllGather) {
    ydims.insert(ydims.begin(), n);
  } else if (k.kind == kReduceScatter || k.kind == kAllToAll) {
    if (x.dims.empty() || x.dims[0] != n)
      return Error(who + ": input " + ShapeStr(x.dims) + " must have a leading dimension equal to the group size " + std::to_string(n));
    chunk = n ? x.count / size_t(n) : 0;
    if (k.kind == kReduceScatter) ydims.erase(ydims.begin());
  }
  Tensor y;
  if (!k.epilogue) {
    OrtValue* o = nullptr;
    if (St s = fn<St (*)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**)>(kKernelContextGetOutput)(ctx, 0, ydims.data(), ydims.size(), &o)) return s;
    if (St s = Describe(o, &y)) return s;
  }
  CollectiveCall call;
  call.name = k.label;
  call.axes = k.axes;
  call.launch = dev->launch;
  call.seq = dev->seq++;
  call.group = std::move(group);
  call.timeout_ms = dev->timeout_ms;
  const double t0 = dev->records ? SteadyNowUs() : 0;
  double ready = -1;
  if (dev->records) call.ready_us = &ready;
  const int group_size = int(call.group.size());
  call.shape = x.dims;
  static char empty[8];
  const void* src = x.data ? x.data : empty;
  void* dst = y.data ? y.data : empty;
  std::string err;
  switch (k.kind) {
    case kAllReduce:
      err = k.epilogue ? dev->comm->AllReduceEpilogue(call, src, x.count, k.op, epi) : dev->comm->AllReduce(call, src, dst, x.count, x.type, k.op);
      break;
    case kAllGather: err = dev->comm->AllGather(call, src, dst, x.count, x.type); break;
    case kReduceScatter: err = dev->comm->ReduceScatter(call, src, dst, chunk, x.type, k.op); break;
    case kAllToAll: err = dev->comm->AllToAll(call, src, dst, chunk, x.type); break;
    case kPermute: {
      std::vector<std::pair<int, int>> pairs;
      for (size_t i = 0; i + 1 < k.pairs.size(); i += 2) pairs.emplace_back(int(k.pairs[i]), int(k.pairs[i + 1]));
      err = dev->comm->CollectivePermute(call, src, dst, x.count, x.type, pairs);
      break;
    }
    default: err = "unknown collective";
  }
  if (dev->records) {
    CollectiveRecord rec;
    rec.kind = k.kind;
    rec.name = k.label;
    rec.axes = k.axes;
    rec.group_size = group_size;
    rec.bytes = double(x.count * ElementBytes(x.type));
    rec.start = t0;
    rec.end = SteadyNowUs();
    rec.ready = ready < 0 ? t0 : ready;  // a group of one never waits
    dev->records->push_back(std::move(rec));
  }
  if (!err.empty()) return Error("jaxts.collectives." + std::string(k.epilogue ? "AllReduceEpilogue" : CollectiveKindName(k.kind)) + ": " + err);
  return nullptr;
}
void ComputeV1(void* k, OrtKernelContext* ctx) {
  if (St s = Compute(k, ctx)) {
    std::fprintf(stderr, "jaxts.collectives failed: %s\n", fn<const char* (*)(const OrtStatus*)>(kGetErrorMessage)(s));
    fn<void (*)(St)>(kReleaseStatus)(s);
  }
}

template <Kind K>
const char* Name(const CustomOp*) { return CollectiveKindName(K); }
const char* Ep(const CustomOp*) { return nullptr; }            // CPU execution provider
int AnyType(const CustomOp*, size_t) { return 0; }             // UNDEFINED: one dynamically typed input, the output follows it
int Int32Type(const CustomOp*, size_t) { return 6; }
size_t One(const CustomOp*) { return 1; }
size_t Zero(const CustomOp*) { return 0; }
int Required(const CustomOp*, size_t) { return 0; }
int DefaultMem(const CustomOp*, size_t) { return 0; }
int OneArity(const CustomOp*) { return 1; }

template <Kind K>
constexpr CustomOp MakeOp() {
  return CustomOp{16, CreateV1<K>, Name<K>, Ep, AnyType, K == kAxisIndex ? Zero : One, K == kAxisIndex ? Int32Type : AnyType, One,
                  ComputeV1, Destroy, Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, Create<K>, Compute,
                  {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}};
}
const char* EpilogueName(const CustomOp*) { return "AllReduceEpilogue"; }
int FloatType(const CustomOp*, size_t) { return 1; }
int Variadic(const CustomOp*, size_t) { return 2; }  // INPUT_OUTPUT_VARIADIC: any number of float32 tensors
CustomOp g_ops[] = {MakeOp<kAllReduce>(), MakeOp<kAllGather>(), MakeOp<kReduceScatter>(), MakeOp<kAllToAll>(), MakeOp<kPermute>(), MakeOp<kAxisIndex>(),
                    CustomOp{16, CreateEpilogueV1, EpilogueName, Ep, FloatType, One, FloatType, One, ComputeV1, Destroy, Variadic, Variadic,
                             DefaultMem, OneArity, OneArity, OneArity, OneArity, CreateEpilogue, Compute,
                             {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}}};

}  // namespace

bool RegisterCollectiveOps(const void* const* api) {
  if (g_domain) return true;
  g_api = api;
  CustomOp* ops[sizeof(g_ops) / sizeof(g_ops[0])];
  for (size_t i = 0; i < sizeof(g_ops) / sizeof(g_ops[0]); i++) ops[i] = &g_ops[i];
  if (St s = CreateOpDomain(api, "jaxts.collectives", ops, sizeof(ops) / sizeof(ops[0]), &g_domain)) {
    std::fprintf(stderr, "jaxts: cannot register the collective ops: %s\n", fn<const char* (*)(const OrtStatus*)>(kGetErrorMessage)(s));
    fn<void (*)(St)>(kReleaseStatus)(s);
    return false;
  }
  return true;
}

OrtStatus* AddCollectiveOpDomain(OrtSessionOptions* options) { return AddOpDomain(g_api, options, g_domain); }

void EvalEpilogue(const CollectiveEpilogue& e, const float* reduced, size_t lo, size_t n, float* const* dsts) {
  std::vector<const float*> ins(1 + e.operands.size());
  ins[0] = reduced;
  for (size_t k = 0; k < e.operands.size(); k++) ins[k + 1] = e.operands[k] + lo;
  const int64_t chunk = FusedChunkElements();
  for (int64_t c = 0; c * chunk < int64_t(n); c++) RunFusedChunk(e.program, ins.data(), e.scalars.data(), dsts, int64_t(n), c);
}

std::string Communicator::AllReduceEpilogue(const CollectiveCall& c, const void* in, size_t count, ReduceOp op, const CollectiveEpilogue& e) {
  std::vector<float> reduced(count ? count : 1);  // never a null buffer, even for no elements
  std::string err = AllReduce(c, in, reduced.data(), count, kFloat32, op);
  if (err.empty() && count) EvalEpilogue(e, reduced.data(), 0, count, e.outs.data());
  return err;
}

}  // namespace jaxts
