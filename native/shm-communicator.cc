/** @file Shared-memory communicator: device threads of one process meet at a rendezvous and each moves its share of the bytes. */
// Protocol of one collective (n members): every member registers its input and output pointers in the rendezvous
// keyed by (launch, seq, first rank of the group) and waits until all n arrived (phase 1; a rendezvous that fails
// before that, by a timeout or an aborted launch, never moves a byte); each member then does
// its 1/n of the work, reading every peer's input and writing straight into every peer's output (phase 2); a
// second barrier keeps every buffer alive until all are done, and the last member out removes the rendezvous.
// Waits spin briefly (the peers usually arrive within microseconds) and then block on a condition variable, so
// more device threads than cores make progress. Every wait has a deadline; a timeout fails the call with the ranks
// that arrived, and marks the launch aborted so its peers (here and in later collectives) are released too.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <type_traits>

#include "communicator.h"
#include "cpu-level.h"
#include "reduce-kernels.h"
#include "mailbox-collectives.h"
#include "meeting-registry.h"

namespace jaxts {

size_t ElementBytes(int t) {
  switch (t) {
    case kFloat32: case kInt32: case kUint32: return 4;
    case kFloat64: case kInt64: case kUint64: return 8;
    case kFloat16: case kBfloat16: case kInt16: case kUint16: return 2;
    case kUint8: case kInt8: case kBool: return 1;
    default: return 0;
  }
}

const char* CollectiveKindName(int kind) {
  static const char* const names[] = {"AllReduce", "AllGather", "ReduceScatter", "AllToAll", "CollectivePermute", "AxisIndex"};
  return kind >= 0 && kind <= kAxisIndex ? names[kind] : "?";
}

std::string RankList(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

namespace {

struct Member {
  const void* in = nullptr;
  void* out = nullptr;
  size_t count = 0;
  int type = 0, kind = 0, op = 0;
  const CollectiveEpilogue* epi = nullptr;  // AllReduceEpilogue: the member's epilogue (its outputs are written here)
  bool arrived = false;
};

struct Rendezvous {
  std::vector<int> group;
  std::vector<Member> members;
  std::atomic<int> arrived{0}, done{0}, left{0};
  std::atomic<bool> failed{false};
  std::string error;  // set (under mu) before failed becomes true
  std::mutex mu;
  std::condition_variable cv;
};

using World = MeetingRegistry<Rendezvous>;
World& TheWorld() {
  static World* w = new World();  // never destroyed: device threads may outlive static destructors
  return *w;
}

// A rendezvous either completes (all members arrived) or fails before completing, never both: arrivals and
// failures are decided under r.mu, so no member moves bytes into a peer that has already given up.

// Fails the rendezvous unless every member already arrived (then its members complete normally).
void Fail(Rendezvous& r, const std::string& why) { FailMeeting(r, &Rendezvous::arrived, r.members.size(), why); }

// Counts this member in (phase 1); false when the rendezvous already failed.
bool Join(Rendezvous& r) {
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.failed.load()) return false;
  if (r.arrived.fetch_add(1) + 1 == int(r.members.size())) r.cv.notify_all();
  return true;
}

// Waits until counter reaches n, the rendezvous fails (when `failable`) or the deadline passes: spin, then block.
// Returns whether counter reached n.
bool WaitFor(Rendezvous& r, std::atomic<int>& counter, int n, bool failable, std::chrono::steady_clock::time_point deadline) {
  auto done = [&] { return counter.load(std::memory_order_acquire) >= n || (failable && r.failed.load()); };
  for (int i = 0; i < 2000 && !done(); i++)
    if (i > 64) std::this_thread::yield();
  if (!done()) {
    std::unique_lock<std::mutex> lock(r.mu);
    r.cv.wait_until(lock, deadline, done);
  }
  return counter.load(std::memory_order_acquire) >= n;
}

// Destinations at least this large are written with non-temporal (streaming) stores on x86: the bytes go to memory
// without first reading each destination line into the cache (a third less traffic), and they do not evict the
// inputs still to be read. Smaller outputs stay cached for the ops that read them next.
constexpr size_t kStreamBytes = size_t(4) << 20;

// Reduces elements [lo, hi) of every member's input (at element offset in_off) into each destination pointer
// (already offset): acc = in_0, then acc = op(acc, in_q) for q = 1.. in group order (a sum rounds as a left fold, the
// same on every rank), stored to every destination, with this CPU level's kernel (native/reduce-kernels.h); false
// for a reduction the type does not have.
bool ReduceInto(const std::vector<Member>& m, int type, ReduceOp op, size_t in_off, size_t lo, size_t hi, char* const* dsts, size_t nd,
                size_t dst_bytes) {
  const size_t n = m.size(), w = ElementBytes(type);
  const void* small[8];
  std::vector<const void*> many;
  const void** ins = small;
  if (n > 8) { many.resize(n); ins = many.data(); }
  for (size_t q = 0; q < n; q++) ins[q] = static_cast<const char*>(m[q].in) + (in_off + lo) * w;
  return ReduceElements(type, op, ins, n, dsts, nd, hi - lo, dst_bytes >= kStreamBytes);
}

class ShmCommunicator : public Communicator {
 public:
  ShmCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // rendezvous are keyed by (launch, seq, group): calls of one rank from two threads meet their own peers
  bool ConcurrentCalls() const override { return true; }
  // every rank of a launch is a thread of this process: the async ops post to and pull from mailboxes
  bool OneSided() const override { return true; }

  std::string AllReduce(const CollectiveCall& c, const void* in, void* out, size_t count, int type, ReduceOp op) override {
    return Run(c, kAllReduce, int(op), in, out, count, type, {});
  }
  std::string AllReduceEpilogue(const CollectiveCall& c, const void* in, size_t count, ReduceOp op, const CollectiveEpilogue& e) override {
    return Run(c, kAllReduce, int(op), in, nullptr, count, kFloat32, {}, &e);
  }
  std::string AllGather(const CollectiveCall& c, const void* in, void* out, size_t count, int type) override {
    return Run(c, kAllGather, 0, in, out, count, type, {});
  }
  std::string ReduceScatter(const CollectiveCall& c, const void* in, void* out, size_t count, int type, ReduceOp op) override {
    return Run(c, kReduceScatter, int(op), in, out, count, type, {});
  }
  std::string AllToAll(const CollectiveCall& c, const void* in, void* out, size_t count, int type) override {
    return Run(c, kAllToAll, 0, in, out, count, type, {});
  }
  std::string CollectivePermute(const CollectiveCall& c, const void* in, void* out, size_t count, int type,
                                const std::vector<std::pair<int, int>>& pairs) override {
    return Run(c, kPermute, 0, in, out, count, type, pairs);
  }

 private:
  std::string Where(const CollectiveCall& c) const {
    return c.name + " over " + c.axes + " (group of ranks " + RankList(c.group) + ") on rank " + std::to_string(rank_);
  }

  std::string Run(const CollectiveCall& c, int kind, int op, const void* in, void* out, size_t count, int type,
                  const std::vector<std::pair<int, int>>& pairs, const CollectiveEpilogue* epi = nullptr) {
    const int n = int(c.group.size());
    const auto pos_it = std::find(c.group.begin(), c.group.end(), rank_);
    if (pos_it == c.group.end()) return Where(c) + ": this rank is not in the group";
    const int p = int(pos_it - c.group.begin());
    const size_t w = ElementBytes(type);
    if (!w) return Where(c) + ": element type " + std::to_string(type) + " is not supported";
    if (n == 1 && epi) {
      if (count) EvalEpilogue(*epi, static_cast<const float*>(in), 0, count, epi->outs.data());  // the reduction of one input is itself
      return "";
    }
    if (n == 1) return Local(kind, op, in, out, count, type, pairs, c);
    // phase 0: join the rendezvous
    World& world = TheWorld();
    std::shared_ptr<Rendezvous> r;
    {
      std::lock_guard<std::mutex> lock(world.mu);
      const std::string* why = nullptr;
      r = world.OpenLocked(c, &why, [n](Rendezvous& m) { m.members.resize(size_t(n)); });
      if (!r) return Where(c) + ": released because the launch failed: " + *why;
      if (r->group != c.group) {
        Fail(*r, Where(c) + ": peers disagree on the group (" + RankList(r->group) + " vs " + RankList(c.group) + ")");
      } else if (r->members[size_t(p)].arrived) {
        Fail(*r, Where(c) + ": rank arrived twice");
      } else {
        Member& me = r->members[size_t(p)];
        me.in = in;
        me.out = out;
        me.count = count;
        me.type = type;
        me.kind = kind;
        me.op = op;
        me.epi = epi;
        me.arrived = true;
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(c.timeout_ms);
    std::string err;
    bool complete = Join(*r) && WaitFor(*r, r->arrived, n, true, deadline);
    if (!complete) {
      std::vector<int> came, missing;
      {
        std::lock_guard<std::mutex> lock(world.mu);
        for (int q = 0; q < n; q++) (r->members[size_t(q)].arrived ? came : missing).push_back(c.group[size_t(q)]);
      }
      const std::string msg = c.name + " over " + c.axes + " (group of ranks " + RankList(c.group) + ") timed out after " +
                              std::to_string(c.timeout_ms) + " ms: ranks that arrived " + RankList(came) + ", missing " + RankList(missing);
      Fail(*r, msg);  // no-op if the last member arrived meanwhile: then the rendezvous completes after all
      complete = r->arrived.load() >= n;
      if (!complete) {
        {
          std::lock_guard<std::mutex> lock(r->mu);
          err = r->error;
        }
        if (err == msg) Abort(c.launch, msg);  // this member's timeout is the cause: release the launch's other waits
      }
    }
    if (complete) {
      if (c.ready_us) *c.ready_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
      // every member checks the same thing, so all fail together when the peers disagree
      for (int q = 0; q < n && err.empty(); q++) {
        const Member& m = r->members[size_t(q)];
        if (m.kind != kind || m.op != op || m.type != type || m.count != count || !m.epi != !epi ||
            (epi && m.epi->outs.size() != epi->outs.size()))
          err = Where(c) + ": peers disagree: rank " + std::to_string(c.group[size_t(q)]) + " called " + CollectiveKindName(m.kind) +
                " of " + std::to_string(m.count) + " elements of type " + std::to_string(m.type) + ", this rank " + CollectiveKindName(kind) +
                " of " + std::to_string(count) + " elements of type " + std::to_string(type);
      }
      if (err.empty() && !Share(*r, kind, op, p, n, count, type, pairs)) err = Where(c) + ": unsupported reduction for element type " + std::to_string(type);
      // phase 2: nobody leaves while a peer may still read its input or write its output (shares are bounded work)
      r->done.fetch_add(1, std::memory_order_acq_rel);
      {
        std::lock_guard<std::mutex> lock(r->mu);
        if (r->done.load() == n) r->cv.notify_all();
      }
      while (!WaitFor(*r, r->done, n, false, std::chrono::steady_clock::now() + std::chrono::seconds(60))) {
      }
    }
    // the last member out closes the rendezvous (a failed one is closed by Forget when the launch ends)
    if (r->left.fetch_add(1) + 1 == n) world.Remove(KeyOf(c), r.get());
    return err;
  }

  // This member's share of the work (peers' buffers stay valid until the second barrier).
  static bool Share(Rendezvous& r, int kind, int op, int p, int n, size_t count, int type, const std::vector<std::pair<int, int>>& pairs) {
    const size_t w = ElementBytes(type);
    std::vector<Member>& m = r.members;
    if (kind == kAllReduce && m[size_t(p)].epi) return ShareEpilogue(m, ReduceOp(op), p, n, count);
    switch (kind) {
      case kAllReduce: {
        // reduce elements [lo, hi) across every input; write the result into every member's output
        // (shares split at 64-byte boundaries where the count allows, so no two ranks write one cache line)
        const size_t line = 64 / w, lines = (count + line - 1) / line;
        const size_t lo = std::min(count, lines * size_t(p) / size_t(n) * line), hi = std::min(count, lines * size_t(p + 1) / size_t(n) * line);
        if (lo >= hi) return ReduceInto(m, type, ReduceOp(op), 0, 0, 0, nullptr, 0, 0);  // still rejects a bool sum
        char* small[8];
        std::vector<char*> many;
        char** dsts = small;
        if (n > 8) { many.resize(size_t(n)); dsts = many.data(); }
        for (int q = 0; q < n; q++) dsts[q] = static_cast<char*>(m[size_t(q)].out) + lo * w;
        return ReduceInto(m, type, ReduceOp(op), 0, lo, hi, dsts, size_t(n), count * w);
      }
      case kReduceScatter: {
        // this member's own chunk p, reduced across every input
        char* dst = static_cast<char*>(m[size_t(p)].out);
        return ReduceInto(m, type, ReduceOp(op), count * size_t(p), 0, count, &dst, 1, count * w);
      }
      case kAllGather:
        for (int q = 0; q < n; q++) std::memcpy(static_cast<char*>(m[size_t(q)].out) + size_t(p) * count * w, m[size_t(p)].in, count * w);
        return true;
      case kAllToAll:
        for (int q = 0; q < n; q++)
          std::memcpy(static_cast<char*>(m[size_t(q)].out) + size_t(p) * count * w, static_cast<const char*>(m[size_t(p)].in) + size_t(q) * count * w, count * w);
        return true;
      case kPermute: {
        bool receives = false;
        for (const auto& pr : pairs) {
          if (pr.first == p) std::memcpy(m[size_t(pr.second)].out, m[size_t(p)].in, count * w);
          if (pr.second == p) receives = true;
        }
        if (!receives) std::memset(m[size_t(p)].out, 0, count * w);
        return true;
      }
    }
    return false;
  }

  // AllReduceEpilogue's share: elements [lo, hi) (split as AllReduce's) reduced a tile at a time into scratch, the
  // epilogue evaluated once on the tile into this member's outputs, and the results copied into every peer's outputs
  // (the epilogue's operands are replicated, so this member's serve all).
  static bool ShareEpilogue(std::vector<Member>& m, ReduceOp op, int p, int n, size_t count) {
    const size_t line = 16, lines = (count + line - 1) / line;
    const size_t lo = std::min(count, lines * size_t(p) / size_t(n) * line), hi = std::min(count, lines * size_t(p + 1) / size_t(n) * line);
    const CollectiveEpilogue& e = *m[size_t(p)].epi;
    constexpr size_t kTile = 4096;  // 16 KiB of float32: the tile stays in L1 between the reduction and the epilogue
    thread_local std::vector<float> tmp;
    tmp.resize(kTile);
    std::vector<float*> own(e.outs.size());
    for (size_t t = lo; t < hi; t += kTile) {
      const size_t len = std::min(kTile, hi - t);
      char* dst = reinterpret_cast<char*>(tmp.data());
      if (!ReduceInto(m, kFloat32, op, 0, t, t + len, &dst, 1, 0)) return false;
      for (size_t j = 0; j < own.size(); j++) own[j] = e.outs[j] + t;
      EvalEpilogue(e, tmp.data(), t, len, own.data());
      for (int q = 0; q < n; q++)
        if (q != p)
          for (size_t j = 0; j < own.size(); j++) std::memcpy(m[size_t(q)].epi->outs[j] + t, own[j], len * sizeof(float));
    }
    return true;
  }

  // A group of one: no peers to meet.
  static std::string Local(int kind, int op, const void* in, void* out, size_t count, int type,
                           const std::vector<std::pair<int, int>>& pairs, const CollectiveCall& c) {
    const size_t w = ElementBytes(type);
    if ((kind == kAllReduce || kind == kReduceScatter) && (type == kBool || type == kUint8) && op == int(ReduceOp::kSum))
      return c.name + ": unsupported reduction for element type " + std::to_string(type);
    bool receives = kind != kPermute;
    for (const auto& pr : pairs) receives = receives || pr.second == 0;
    if (receives) std::memcpy(out, in, count * w);
    else std::memset(out, 0, count * w);
    return "";
  }

  static void Abort(uint64_t launch, const std::string& why) { ShmWorld::Abort(launch, why); }

  int rank_, size_;
};

}  // namespace

void ShmWorld::Abort(uint64_t launch, const std::string& why) {
  for (auto& r : TheWorld().Abort(launch, why)) Fail(*r, "released because the launch failed: " + why);
  MailboxAbort(launch, why);  // the one-sided async collectives' waits too
}

void ShmWorld::Forget(uint64_t launch) {
  TheWorld().Forget(launch);
  MailboxForget(launch);
}

size_t ShmWorld::OpenRendezvous() {
  return TheWorld().Size() + OpenMailboxes();
}

Communicator* NewShmCommunicator(int rank, int size) { return new ShmCommunicator(rank, size); }

bool ReduceBuffers(const void* const* ins, size_t n, void* out, size_t count, int type, ReduceOp op) {
  std::vector<Member> m(n);
  for (size_t q = 0; q < n; q++) m[q].in = ins[q];
  char* dst = static_cast<char*>(out);
  return ReduceInto(m, type, op, 0, 0, count, &dst, 1, 0);
}

}  // namespace jaxts
