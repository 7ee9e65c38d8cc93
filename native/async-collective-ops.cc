/** @file ONNX Runtime custom ops of domain jaxts.async: collectives started early and awaited late in a per-device program (CollectiveStart / CollectiveDone), one-sided over shared memory or served by a communication thread per device. */
// A program whose collectives were split by src/parallel/overlap-collectives.ts holds, for each collective c:
//   CollectiveStart(x, after: int64)    -> token: int64[1]   takes c's sequence number (program order, on the device
//                                                              thread, so ranks still match), posts or queues c
//   CollectiveDone(x, tokens: int64)    -> y, done: int64[1] waits for c, writes its result into y
//   After(v...: any)                    -> token: int64[1]   ordering only: exists once every v does
// `after` and `tokens` carry only ordering (their values are ignored): the graph pass feeds a Start's token into an
// earlier Done, which forces ORT's sequential executor to start c before the compute that follows that Done, and a
// Done's `done` output into a later Start. The node attribute `id` pairs a Start with its Done; the other
// attributes are those of the synchronous ops (native/collective-ops.cc): kind (0 AllReduce, 1 AllGather,
// 2 ReduceScatter, 3 AllToAll, 4 CollectivePermute), groups, group_size, reduce, pairs, label, axes.
// Two ways to run c:
// - mailbox (the default where the communicator is OneSided: the shared-memory one): Start copies x into its slot
//   of a mailbox and returns without waiting for anyone; Done waits until every member posted and computes its
//   own result from the staged inputs on the device thread (native/mailbox-collectives.cc). No extra thread, no
//   rendezvous: a device that is ahead never waits for a descheduled peer to arrive. All-reduces over
//   kMailboxAllReduceMaxBytes keep the thread (a pull reduces every input whole).
// - communication thread (JAXTS_ASYNC_COLLECTIVES=thread, or a large all-reduce): Start copies x and queues c to
//   the device's communication thread, which runs it through the rank's communicator (the shared-memory one
//   accepts calls from two threads of a rank: its rendezvous are keyed by sequence number). A communicator that
//   does not (MPI) gets the collective run inline by Start. This pays where a core is free for the thread.
// Start copies x either way, so a program that fails while the collective is in flight never leaves a peer reading
// freed memory; the rank's run ends with FinishAsyncCollectives, which waits for its collectives (bounded by the
// collective timeout) and reports a Start whose Done never ran.

#include "async-collective-ops.h"

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "communicator.h"
#include "device-context.h"
#include "mailbox-collectives.h"
#include "ort-api.h"

struct OrtValue;
struct OrtTensorTypeAndShapeInfo;

namespace jaxts {
namespace {

using St = OrtStatus*;
using namespace ort;
const void* const* g_api = nullptr;
OrtCustomOpDomain* g_domain = nullptr;

template <typename F>
F fn(Slot s) { return ort::At<F>(g_api, s); }
St Error(const std::string& msg) { return fn<St (*)(int, const char*)>(kCreateStatus)(2, msg.c_str()); }

using Kind = CollectiveKind;

// ------------------------------------------------------------------ communication threads
class CommThread {
 public:
  CommThread() { std::thread([this] { Loop(); }).detach(); }
  void Submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
};
std::mutex g_threads_mu;
std::map<int, CommThread*>* g_threads = new std::map<int, CommThread*>();  // never destroyed (threads are detached)
CommThread* ThreadFor(int device) {
  std::lock_guard<std::mutex> lock(g_threads_mu);
  CommThread*& t = (*g_threads)[device];
  if (!t) t = new CommThread();
  return t;
}

// ------------------------------------------------------------------ collectives in flight
struct Pending {
  Kind kind = kAllReduce;
  ReduceOp op = ReduceOp::kSum;
  CollectiveCall call;
  std::vector<std::pair<int, int>> pairs;
  std::vector<char> in, out;  // owned copies: the program's buffers may go away while peers still read
  size_t in_bytes = 0;
  std::shared_ptr<Mailbox> box;  // set when posted to a mailbox (one-sided): Done pulls from it
  int pos = 0;                   // this rank's position in the mailbox's group
  std::vector<int64_t> ydims;
  int type = 0;
  size_t count = 0, chunk = 0;
  double t_start = 0, ready = -1, t_end = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false, awaited = false;
  std::string err;
};
using Key = std::tuple<uint64_t, int, int64_t>;  // launch, rank, node id
std::mutex g_mu;
std::map<Key, std::shared_ptr<Pending>>* g_pending = new std::map<Key, std::shared_ptr<Pending>>();

void Execute(Communicator* comm, Pending& p) {
  static char empty[8];
  const void* src = p.in.empty() ? empty : p.in.data();
  void* dst = p.out.empty() ? empty : p.out.data();
  std::string err;
  switch (p.kind) {
    case kAllReduce: err = comm->AllReduce(p.call, src, dst, p.count, p.type, p.op); break;
    case kAllGather: err = comm->AllGather(p.call, src, dst, p.count, p.type); break;
    case kReduceScatter: err = comm->ReduceScatter(p.call, src, dst, p.chunk, p.type, p.op); break;
    case kAllToAll: err = comm->AllToAll(p.call, src, dst, p.chunk, p.type); break;
    case kPermute: err = comm->CollectivePermute(p.call, src, dst, p.count, p.type, p.pairs); break;
  }
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.err = err;
    p.t_end = SteadyNowUs();
    p.finished = true;
  }
  p.cv.notify_all();
}

// ------------------------------------------------------------------ kernels
struct Kernel {
  bool start = true;
  Kind kind = kAllReduce;
  ReduceOp op = ReduceOp::kSum;
  int64_t id = 0, group_size = 1;
  std::vector<int64_t> groups, pairs;
  std::string label, axes;
};


template <bool IsStart>
St Create(const CustomOp*, const void*, const OrtKernelInfo* info, void** out) {
  auto* k = new Kernel();
  k->start = IsStart;
  const int64_t kind = KernelIntAttr(g_api, info, "kind", 0);
  k->kind = Kind(kind < 0 || kind > 4 ? 0 : kind);
  k->op = ReduceOp(KernelIntAttr(g_api, info, "reduce", 0));
  k->id = KernelIntAttr(g_api, info, "id", 0);
  k->group_size = KernelIntAttr(g_api, info, "group_size", 1);
  k->groups = KernelIntsAttr(g_api, info, "groups");
  k->pairs = KernelIntsAttr(g_api, info, "pairs");
  k->label = KernelStringAttr(g_api, info, "label", CollectiveKindName(k->kind));
  k->axes = KernelStringAttr(g_api, info, "axes", "its group");
  *out = k;
  return nullptr;
}
template <bool IsStart>
void* CreateV1(const CustomOp* op, const void* api, const OrtKernelInfo* info) {
  void* k = nullptr;
  Create<IsStart>(op, api, info, &k);
  return k;
}
void Destroy(void* k) { delete static_cast<Kernel*>(k); }

using Tensor = KernelTensor;
St Describe(const OrtValue* v, Tensor* t) { return DescribeTensor(g_api, v, t); }
St Output(OrtKernelContext* ctx, size_t i, const std::vector<int64_t>& dims, Tensor* t) {
  OrtValue* o = nullptr;
  if (St s = fn<St (*)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**)>(kKernelContextGetOutput)(ctx, i, dims.data(), dims.size(), &o)) return s;
  return Describe(o, t);
}
std::string ShapeStr(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); i++) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

St StartCompute(const Kernel& k, OrtKernelContext* ctx, DeviceContext* dev, const std::string& who) {
  const OrtValue* in = nullptr;
  if (St s = fn<St (*)(const OrtKernelContext*, size_t, const OrtValue**)>(kKernelContextGetInput)(ctx, 0, &in)) return s;
  Tensor x;
  if (St s = Describe(in, &x)) return s;
  const size_t w = ElementBytes(x.type);
  if (!w) return Error(who + ": element type " + std::to_string(x.type) + " is not supported");
  const int64_t n = k.group_size;
  std::vector<int> group;
  for (size_t g = 0; n > 0 && g + size_t(n) <= k.groups.size() && group.empty(); g += size_t(n))
    for (int64_t j = 0; j < n; j++)
      if (k.groups[g + size_t(j)] == dev->rank) {
        group.assign(k.groups.begin() + long(g), k.groups.begin() + long(g) + n);
        break;
      }
  if (group.empty()) return Error(who + ": rank " + std::to_string(dev->rank) + " is in none of its groups");
  auto p = std::make_shared<Pending>();
  p->kind = k.kind;
  p->op = k.op;
  p->type = x.type;
  p->count = x.count;
  p->chunk = x.count;
  p->ydims = x.dims;
  if (k.kind == kAllGather) {
    p->ydims.insert(p->ydims.begin(), n);
  } else if (k.kind == kReduceScatter || k.kind == kAllToAll) {
    if (x.dims.empty() || x.dims[0] != n)
      return Error(who + ": input " + ShapeStr(x.dims) + " must have a leading dimension equal to the group size " + std::to_string(n));
    p->chunk = x.count / size_t(n);
    if (k.kind == kReduceScatter) p->ydims.erase(p->ydims.begin());
  }
  size_t ycount = 1;
  for (int64_t d : p->ydims) ycount *= size_t(d);
  Communicator* comm = dev->comm;
  p->in_bytes = x.count * w;
  const bool mailbox = comm->OneSided() && MailboxModeEnabled() && !(k.kind == kAllReduce && p->in_bytes > kMailboxAllReduceMaxBytes);
  if (!mailbox) {
    p->in.assign(static_cast<const char*>(x.data), static_cast<const char*>(x.data) + x.count * w);
    p->out.resize(ycount * w);
  }
  for (size_t i = 0; i + 1 < k.pairs.size(); i += 2) p->pairs.emplace_back(int(k.pairs[i]), int(k.pairs[i + 1]));
  p->call.name = k.label;
  p->call.axes = k.axes;
  p->call.launch = dev->launch;
  p->call.seq = dev->seq++;  // taken here, in program order, so every rank numbers its collectives alike
  p->call.group = std::move(group);
  p->call.timeout_ms = dev->timeout_ms;
  p->call.shape = x.dims;
  p->call.ready_us = &p->ready;
  p->t_start = SteadyNowUs();
  {
    std::lock_guard<std::mutex> lock(g_mu);
    const Key key{dev->launch, dev->rank, k.id};
    if (g_pending->count(key)) return Error(who + ": started twice in one run (id " + std::to_string(k.id) + ")");
    g_pending->emplace(key, p);
  }
  Tensor tok;
  if (St s = Output(ctx, 0, {1}, &tok)) return s;
  *static_cast<int64_t*>(tok.data) = 0;
  if (mailbox) {
    // one-sided: post and return (nothing runs in the background; Done pulls)
    p->err = MailboxPost(p->call, dev->rank, k.kind, int(k.op), x.data, x.count, x.type, &p->box, &p->pos);
    p->finished = true;
    return p->err.empty() ? nullptr : Error("jaxts.async.CollectiveStart: " + p->err);
  }
  if (comm->ConcurrentCalls()) ThreadFor(dev->device)->Submit([comm, p] { Execute(comm, *p); });
  else Execute(comm, *p);  // a transport that serves one thread per rank: run now (no overlap, same values)
  return nullptr;
}

St DoneCompute(const Kernel& k, OrtKernelContext* ctx, DeviceContext* dev, const std::string& who) {
  std::shared_ptr<Pending> p;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_pending->find(Key{dev->launch, dev->rank, k.id});
    if (it == g_pending->end()) return Error(who + ": no CollectiveStart with id " + std::to_string(k.id) + " ran before it");
    p = it->second;
    g_pending->erase(it);
  }
  const double t0 = SteadyNowUs();
  {
    std::unique_lock<std::mutex> lock(p->mu);
    p->cv.wait(lock, [&] { return p->finished; });  // bounded: the collective itself times out
    p->awaited = true;
  }
  Tensor y, done;
  const bool pulled = p->box && p->err.empty();
  if (pulled) {
    // one-sided: wait for the peers' posts, then compute this rank's result straight into y
    if (St s = Output(ctx, 0, p->ydims, &y)) return s;
    p->err = MailboxPull(p->call, p->box, p->pos, y.data, y.count, p->pairs, &p->ready);
    p->box.reset();
  }
  const double t1 = SteadyNowUs();
  if (dev->records) {
    CollectiveRecord rec;
    rec.kind = k.kind;
    rec.name = k.label;
    rec.axes = k.axes;
    rec.group_size = int(k.group_size);
    rec.bytes = double(p->in_bytes);
    rec.start = p->t_start;  // CollectiveStart ran
    rec.end = t1;            // CollectiveDone returned (the transfer itself ended by then: p->t_end <= t1)
    rec.ready = p->ready < 0 ? p->t_start : p->ready;  // every peer had arrived (mailbox: the last post)
    rec.wait = t1 - t0;  // the device thread's time in the Done (mailbox: the wait for posts and the pull)
    dev->records->push_back(std::move(rec));
  }
  if (!p->err.empty()) return Error("jaxts.async.CollectiveDone: " + p->err);
  if (!pulled) {  // the communication thread's result
    if (St s = Output(ctx, 0, p->ydims, &y)) return s;
    if (y.count * ElementBytes(y.type) != p->out.size()) return Error(who + ": output size does not match the started collective");
    if (!p->out.empty()) std::memcpy(y.data, p->out.data(), p->out.size());
  }
  if (St s = Output(ctx, 1, {1}, &done)) return s;
  *static_cast<int64_t*>(done.data) = 0;
  return nullptr;
}

St Compute(void* kp, OrtKernelContext* ctx) {
  const Kernel& k = *static_cast<Kernel*>(kp);
  const std::string who = std::string("jaxts.async.") + (k.start ? "CollectiveStart" : "CollectiveDone") + " of " + CollectiveKindName(k.kind) +
                          " (" + k.label + " over " + k.axes + ")";
  DeviceContext* dev = CurrentDevice();
  if (!dev || !dev->comm) return Error(who + ": runs only inside a device program launched on the device runtime");
  return k.start ? StartCompute(k, ctx, dev, who) : DoneCompute(k, ctx, dev, who);
}
void ComputeV1(void* k, OrtKernelContext* ctx) {
  if (St s = Compute(k, ctx)) {
    std::fprintf(stderr, "jaxts.async failed: %s\n", fn<const char* (*)(const OrtStatus*)>(kGetErrorMessage)(s));
    fn<void (*)(St)>(kReleaseStatus)(s);
  }
}

// Start: (x: any, after: int64) -> token: int64. Done: (x: any, tokens: int64) -> (y: x's type, done: int64).
template <bool IsStart>
const char* Name(const CustomOp*) { return IsStart ? "CollectiveStart" : "CollectiveDone"; }
const char* Ep(const CustomOp*) { return nullptr; }
int InType(const CustomOp*, size_t i) { return i == 0 ? 0 : 7; }
template <bool IsStart>
int OutType(const CustomOp*, size_t i) { return IsStart || i == 1 ? 7 : 0; }
size_t Two(const CustomOp*) { return 2; }
size_t One(const CustomOp*) { return 1; }
int Required(const CustomOp*, size_t) { return 0; }
int DefaultMem(const CustomOp*, size_t) { return 0; }
int OneArity(const CustomOp*) { return 1; }

template <bool IsStart>
constexpr CustomOp MakeOp() {
  return CustomOp{16, CreateV1<IsStart>, Name<IsStart>, Ep, InType, Two, OutType<IsStart>, IsStart ? One : Two, ComputeV1, Destroy,
                  Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, Create<IsStart>, Compute,
                  {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}};
}

// After(v...: any types, at least one) -> token: int64[1]. Ordering only: the token exists once every input does, so
// a Done (or a tie) reading it runs after the nodes that make them. The graph pass uses it to keep a block of compute
// whose results only leave the program (ZeRO's optimizer update of one layer) where it placed it: ORT's sequential
// executor would otherwise run it with the graph's outputs, after everything else. Reads no input; no state.
const char* AfterName(const CustomOp*) { return "After"; }
int AnyIn(const CustomOp*, size_t) { return 0; }        // UNDEFINED: any element type
int Int64Out(const CustomOp*, size_t) { return 7; }
int VariadicIn(const CustomOp*, size_t) { return 2; }  // INPUT_OUTPUT_VARIADIC
int Heterogeneous(const CustomOp*) { return 0; }       // each input of its own type
St AfterCreate(const CustomOp*, const void*, const OrtKernelInfo*, void** out) {
  *out = nullptr;
  return nullptr;
}
void* AfterCreateV1(const CustomOp*, const void*, const OrtKernelInfo*) { return nullptr; }
void AfterDestroy(void*) {}
St AfterCompute(void*, OrtKernelContext* ctx) {
  Tensor tok;
  if (St s = Output(ctx, 0, {1}, &tok)) return s;
  *static_cast<int64_t*>(tok.data) = 0;
  return nullptr;
}
void AfterComputeV1(void* k, OrtKernelContext* ctx) {
  if (St s = AfterCompute(k, ctx)) {
    std::fprintf(stderr, "jaxts.async.After failed: %s\n", fn<const char* (*)(const OrtStatus*)>(kGetErrorMessage)(s));
    fn<void (*)(St)>(kReleaseStatus)(s);
  }
}
constexpr CustomOp MakeAfterOp() {
  return CustomOp{16, AfterCreateV1, AfterName, Ep, AnyIn, One, Int64Out, One, AfterComputeV1, AfterDestroy,
                  VariadicIn, Required, DefaultMem, OneArity, Heterogeneous, OneArity, OneArity, AfterCreate, AfterCompute,
                  {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}};
}
CustomOp g_ops[] = {MakeOp<true>(), MakeOp<false>(), MakeAfterOp()};

}  // namespace

bool RegisterAsyncCollectiveOps(const void* const* api) {
  if (g_domain) return true;
  g_api = api;
  CustomOp* ops[] = {&g_ops[0], &g_ops[1], &g_ops[2]};
  if (St s = CreateOpDomain(api, "jaxts.async", ops, 3, &g_domain)) {
    std::fprintf(stderr, "jaxts: cannot register the async collective ops: %s\n", fn<const char* (*)(const OrtStatus*)>(kGetErrorMessage)(s));
    fn<void (*)(St)>(kReleaseStatus)(s);
    return false;
  }
  return true;
}

OrtStatus* AddAsyncCollectiveOpDomain(OrtSessionOptions* options) { return AddOpDomain(g_api, options, g_domain); }

std::string FinishAsyncCollectives(uint64_t launch, int rank) {
  std::vector<std::pair<int64_t, std::shared_ptr<Pending>>> left;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto it = g_pending->lower_bound(Key{launch, rank, INT64_MIN}); it != g_pending->end();) {
      if (std::get<0>(it->first) != launch || std::get<1>(it->first) != rank) break;
      left.emplace_back(std::get<2>(it->first), it->second);
      it = g_pending->erase(it);
    }
  }
  std::string err;
  for (auto& [id, p] : left) {
    // the communication thread still uses the rank's communicator: wait for it (bounded by the collective timeout)
    std::unique_lock<std::mutex> lock(p->mu);
    p->cv.wait(lock, [&] { return p->finished; });
    if (err.empty())
      err = "jaxts.async: " + p->call.name + " over " + p->call.axes + " was started (CollectiveStart id " + std::to_string(id) +
            ") but its CollectiveDone never ran" + (p->err.empty() ? "" : ": " + p->err);
  }
  return err;
}

}  // namespace jaxts
