/** @file Hierarchical communicator for launches that span processes (one leader per process exchanges over MPI); the addon's mpi* functions are in native/mpi-napi.cc. */
// One collective over a group whose members live on several processes:
//   1. the members of this process meet at a local rendezvous (keyed like the shared-memory one: launch, seq, first
//      rank of the group) and register their buffers; the first local member in group order is the leader;
//   2. the leader exchanges a header (collective kind, reduction, dtype, shape, launch and sequence numbers) with
//      every other process of the group and compares them, so a mismatch fails on every process naming both sides;
//   3. the leader exchanges this process's part with the other leaders (nonblocking point to point, polled against
//      the deadline) and writes every local member's output: all-reduce and reduce-scatter send the local partial
//      reduction and fold the partials in the group's process order (every process folds the same values in the same
//      order, so all get the same bits); all-gather sends the local inputs; all-to-all and collective-permute send
//      each peer process only the chunks its members receive;
//   4. the other local members wait for the leader (deadline + a margin) and return its verdict.
// A device that fails tells the other processes of its launch (an abort message, kAbortTag): their leaders waiting for
// headers of that launch, and this process's ranks waiting in it, fail at once naming the failed device and rank
// instead of at the deadline. Headers an aborted launch left unreceived are recognized (older launch) and skipped.
// Groups entirely within this process take the shared-memory communicator unchanged.

#include "mpi-communicator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "half-float.h"
#include "meeting-registry.h"
#include "mpi-loader.h"
#include "mpi-process-communicator.h"
#include "mpi-shm.h"
#include "reduce-kernels.h"

namespace jaxts {
namespace mpicomm {
namespace {

std::string TypeName(int t) {
  switch (t) {
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kInt32: return "int32";
    case kInt64: return "int64";
    case kBool: return "bool";
    case kInt8: return "int8";
    case kUint8: return "uint8";
    case kInt16: return "int16";
    case kUint16: return "uint16";
    case kUint32: return "uint32";
    case kUint64: return "uint64";
    case kFloat16: return "float16";
    case kBfloat16: return "bfloat16";
    default: return "type " + std::to_string(t);
  }
}
std::string Shape(const int64_t* d, int nd) {
  std::string s = "[";
  for (int i = 0; i < nd; i++) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}
/** Whether the reduction `op` of `type` can run across processes (a bool/uint8 sum is not closed). */
bool AllReducible(int kind, ReduceOp op, int type, size_t) {
  if (kind == kAllGather) return true;
  return !(op == ReduceOp::kSum && (type == kBool || type == kUint8));
}

/**
 * All-reduces of at most this many bytes between processes of one host send their data with the header (one
 * exchange instead of three: header, reduce-scatter, all-gather); $JAXTS_MPI_SHM_SMALL, default 64 KiB, 0: never.
 */
size_t SmallBytes() {
  static const size_t v = [] {
    const char* e = std::getenv("JAXTS_MPI_SHM_SMALL");
    return e ? size_t(std::max(0LL, std::atoll(e))) : size_t(64) << 10;
  }();
  return v;
}

/** Whether the A/B switch $name (on by default) is on: anything but "0". */
bool SwitchOn(const char* name) {
  const char* e = std::getenv(name);
  return !(e && std::string(e) == "0");
}

/**
 * Whether an AllReduceEpilogue whose all-reduce takes the direct same-host exchange evaluates its epilogue inside the
 * exchange's fold (each process on its own share, the peers copy the results) instead of reducing into a temporary
 * and evaluating the whole buffer afterwards; $JAXTS_MPI_SHM_FUSE=0: never (A/B). Must be equal on every process (the
 * header carries it, so a difference fails as a disagreement).
 */
bool FuseOn() {
  static const bool v = SwitchOn("JAXTS_MPI_SHM_FUSE");
  return v;
}

/** What the leaders compare before moving bytes. */
struct Header {
  uint32_t magic = 0x4a58544d;  // "JXTM"
  int32_t kind = 0, op = 0, type = 0, ndim = 0, group_n = 0;
  int32_t epilogue = 0;  // 1: an AllReduceEpilogue fused into the direct exchange (the mailboxes carry its results)
  int64_t dims[8] = {0};
  uint64_t count = 0, seq = 0, launch = 0;
};

// ---------------------------------------------------------------- aborted launches (by global launch number)
constexpr int kAbortTag = 30000;  // above the collectives' [0, 16384) and the host exchanges' [16384, 24576)
struct AbortMsg {
  uint32_t magic = 0x4a58544b;  // "JXTK"
  int32_t process = 0;
  uint64_t launch = 0;
  char why[496] = {0};
};
std::mutex g_abort_mu;
std::map<uint64_t, std::string>* g_aborts = new std::map<uint64_t, std::string>();  // never destroyed

/** Records that `launch` failed (first reason kept). */
void MarkAborted(uint64_t launch, const std::string& why) {
  std::lock_guard<std::mutex> lock(g_abort_mu);
  g_aborts->emplace(launch, why);
}
/** Why `launch` failed here or elsewhere, or "" (reads the abort messages `peers` sent meanwhile). */
std::string AbortOf(uint64_t launch, const std::vector<int>& peers) {
  AbortMsg m;
  for (int q : peers)
    while (mpi::Poll(q, kAbortTag, &m, sizeof m))
      if (m.magic == 0x4a58544b) {
        m.why[sizeof m.why - 1] = 0;
        MarkAborted(m.launch, "process " + std::to_string(m.process) + " failed: " + m.why);
      }
  std::lock_guard<std::mutex> lock(g_abort_mu);
  auto it = g_aborts->find(launch);
  return it == g_aborts->end() ? "" : it->second;
}

std::mutex g_local_mu;
std::map<CollectiveKey, std::shared_ptr<Local>>* g_locals = new std::map<CollectiveKey, std::shared_ptr<Local>>();  // never destroyed

}  // namespace

// $JAXTS_MPI_SHM_DIRECT, read once (mpi-process-communicator.h)
bool DirectOn() {
  static const bool v = SwitchOn("JAXTS_MPI_SHM_DIRECT");
  return v;
}

std::string ProcessCommunicator::AllReduce(const CollectiveCall& c, const void* in, void* out, size_t count, int type, ReduceOp op) {
  if (Within(c)) return shm_->AllReduce(c, in, out, count, type, op);
  if (IsHalfFloat(type)) return Widened(c, kAllReduce, op, in, out, count, count, type);
  return Run(c, kAllReduce, op, in, out, count, type, {});
}
// an epilogue whose all-reduce takes the direct same-host exchange (one output): evaluated in the exchange's fold,
// once per element on the process that reduces it (half the buffer each for 2 processes); otherwise the default
// (reduce into a temporary, then the epilogue over the whole buffer). The choice depends only on what every process
// of the group sees alike (sizes, the segment, the switches); the header carries it.
std::string ProcessCommunicator::AllReduceEpilogue(const CollectiveCall& c, const void* in, size_t count, ReduceOp op, const CollectiveEpilogue& e) {
  if (Within(c)) return shm_->AllReduceEpilogue(c, in, count, op, e);
  const size_t cb = count * sizeof(float);
  const bool small = cb <= SmallBytes() && sizeof(Header) + cb <= mpishm::SliceBytes();
  if (!(FuseOn() && DirectOn() && e.outs.size() == 1 && count > 0 && mpishm::AllSameHost() && !small && cb <= mpishm::MailboxBytes()))
    return Communicator::AllReduceEpilogue(c, in, count, op, e);
  return Run(c, kAllReduce, op, in, e.outs[0], count, kFloat32, {}, &e);
}
std::string ProcessCommunicator::AllGather(const CollectiveCall& c, const void* in, void* out, size_t count, int type) {
  if (Within(c)) return shm_->AllGather(c, in, out, count, type);
  return Run(c, kAllGather, ReduceOp::kSum, in, out, count, type, {});
}
std::string ProcessCommunicator::ReduceScatter(const CollectiveCall& c, const void* in, void* out, size_t count, int type, ReduceOp op) {
  if (Within(c)) return shm_->ReduceScatter(c, in, out, count, type, op);
  if (IsHalfFloat(type)) return Widened(c, kReduceScatter, op, in, out, count * c.group.size(), count, type);
  return Run(c, kReduceScatter, op, in, out, count, type, {});
}
// float16 / bfloat16 across processes: the reduction runs in float32 (each process's partial and the exchange too,
// twice the bytes) and rounds once at the end, as the shared-memory fold and the emulation do
std::string ProcessCommunicator::Widened(const CollectiveCall& c, int kind, ReduceOp op, const void* in, void* out, size_t in_count, size_t out_count, int type) {
  std::vector<float> win(in_count), wout(out_count);
  const uint16_t* s = static_cast<const uint16_t*>(in);
  const bool bf = type == kBfloat16;
  for (size_t i = 0; i < in_count; i++) win[i] = bf ? BfloatToFloat(s[i]) : HalfToFloat(s[i]);
  std::string err = Run(c, kind, op, win.data(), wout.data(), out_count, kFloat32, {});
  uint16_t* d = static_cast<uint16_t*>(out);
  for (size_t i = 0; err.empty() && i < out_count; i++) d[i] = bf ? FloatToBfloat(wout[i]) : FloatToHalf(wout[i]);
  return err;
}
std::string ProcessCommunicator::AllToAll(const CollectiveCall& c, const void* in, void* out, size_t count, int type) {
  if (Within(c)) return shm_->AllToAll(c, in, out, count, type);
  return Run(c, kAllToAll, ReduceOp::kSum, in, out, count, type, {});
}
std::string ProcessCommunicator::CollectivePermute(const CollectiveCall& c, const void* in, void* out, size_t count, int type,
                                                   const std::vector<std::pair<int, int>>& pairs) {
  if (Within(c)) return shm_->CollectivePermute(c, in, out, count, type, pairs);
  return Run(c, kPermute, ReduceOp::kSum, in, out, count, type, pairs);
}
void ProcessCommunicator::DeviceFailed(const std::string& why) {
  const uint64_t gl = pm_->global_launch;
  MarkAborted(gl, why);
  AbortMsg m;
  m.process = pm_->self;
  m.launch = gl;
  std::strncpy(m.why, why.c_str(), sizeof m.why - 1);
  std::vector<bool> told(pm_->rank_process.size() + 1, false);
  for (int q : pm_->rank_process)
    if (q != pm_->self && q >= 0 && size_t(q) < told.size() && !told[size_t(q)]) {
      told[size_t(q)] = true;
      mpi::Post(q, kAbortTag, &m, sizeof m);
    }
  // this process's ranks waiting in a rendezvous of the launch stop waiting
  std::lock_guard<std::mutex> lock(g_local_mu);
  for (auto& [key, lr] : *g_locals)
    if (lr->glaunch == gl) {
      std::lock_guard<std::mutex> l2(lr->mu);
      lr->cv.notify_all();
    }
}

std::string ProcessCommunicator::LocalAbort() const { return AbortOf(pm_->global_launch, {}); }

/** The leader's exchange with other processes: through the same-host shared-memory segment when set up, else MPI. */
std::string ProcessCommunicator::Xchg(const std::vector<mpi::Transfer>& xs, int tag, const CollectiveCall& c, int min_rank, int step, Clock::time_point deadline,
                                      const std::string& what, const std::function<std::string()>& check,
                                      const std::function<void(size_t, size_t, const char*, size_t)>& on_recv, const std::string& desc) {
  // peers on this host through the segment first, then the others over MPI (every process in that order)
  std::vector<mpi::Transfer> near, far;
  std::vector<size_t> near_i;
  for (size_t i = 0; i < xs.size(); i++) {
    if (mpishm::SameHost(xs[i].peer)) {
      near.push_back(xs[i]);
      near_i.push_back(i);
    } else {
      far.push_back(xs[i]);
    }
  }
  if (!near.empty()) {
    // this leader's mailbox: its index among this process's ranks of the launch (one thread each)
    const auto it = std::find(pm_->local_ranks.begin(), pm_->local_ranks.end(), rank_);
    std::function<void(size_t, size_t, const char*, size_t)> recv_near;
    if (on_recv) recv_near = [&](size_t i, size_t off, const char* src, size_t len) { on_recv(near_i[i], off, src, len); };
    const std::string err =
        mpishm::Exchange(near, {pm_->global_launch, c.seq, min_rank, step, desc}, int(it - pm_->local_ranks.begin()), deadline, what, check, recv_near);
    if (!err.empty()) return err;
  }
  if (far.empty()) return "";
  if (on_recv) return what + ": internal error: a streamed receive from another host";  // ShmRing: same host only
  size_t bytes = 0;
  for (const auto& x : far) bytes += (x.no_send ? 0 : x.send_bytes) + x.recv_bytes;
  mpishm::CountMpi(bytes);
  return mpi::Exchange(far, tag, deadline, what, check);
}

std::string ProcessCommunicator::Run(const CollectiveCall& c, int kind, ReduceOp op, const void* in, void* out, size_t count, int type,
                                     const std::vector<std::pair<int, int>>& pairs, const CollectiveEpilogue* epi) {
  const int n = int(c.group.size());
  const auto it = std::find(c.group.begin(), c.group.end(), rank_);
  if (it == c.group.end()) return Where(c) + ": this rank is not in the group";
  const int p = int(it - c.group.begin());
  std::vector<int> local;  // group positions of this process's members
  for (int q = 0; q < n; q++)
    if (Proc(c.group[size_t(q)]) == pm_->self) local.push_back(q);
  const CollectiveKey key = KeyOf(c);
  std::shared_ptr<Local> lr;
  {
    std::lock_guard<std::mutex> lock(g_local_mu);
    auto& slot = (*g_locals)[key];
    if (!slot) {
      slot = std::make_shared<Local>();
      slot->glaunch = pm_->global_launch;
      slot->ins.assign(size_t(n), nullptr);
      slot->outs.assign(size_t(n), nullptr);
      slot->epis.assign(size_t(n), nullptr);
    }
    lr = slot;
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(c.timeout_ms);
  std::string err;
  bool last = false;
  {
    std::unique_lock<std::mutex> lock(lr->mu);
    lr->ins[size_t(p)] = in;
    lr->outs[size_t(p)] = out;
    lr->epis[size_t(p)] = epi;
    lr->arrived++;
    lr->cv.notify_all();
    if (p != local[0]) {
      // a member: the leader writes our output; wait for its verdict (it gives up at the deadline itself)
      std::string aborted;
      const auto released = [&] { return lr->done || !(aborted = LocalAbort()).empty(); };
      if (!lr->cv.wait_until(lock, deadline + std::chrono::seconds(5), released))
        lr->error = Where(c) + ": the process's leader (rank " + std::to_string(c.group[size_t(local[0])]) + ") did not finish in time";
      err = lr->done || aborted.empty() ? lr->error : Where(c) + ": released early: " + aborted;
    } else {
      std::string aborted;
      const auto arrived = [&] { return lr->arrived == int(local.size()) || !(aborted = LocalAbort()).empty(); };
      if (lr->cv.wait_until(lock, deadline, arrived) && lr->arrived < int(local.size())) {
        lr->error = Where(c) + ": released early: " + aborted;
      } else if (lr->arrived < int(local.size())) {
        std::vector<int> came, missing;
        for (int q : local) (lr->ins[size_t(q)] || lr->outs[size_t(q)] ? came : missing).push_back(c.group[size_t(q)]);
        lr->error = c.name + " over " + c.axes + " (group of ranks " + RankList(c.group) + ") timed out after " + std::to_string(c.timeout_ms) +
                    " ms on process " + std::to_string(pm_->self) + ": local ranks that arrived " + RankList(came) + ", missing " + RankList(missing);
      } else {
        lock.unlock();
        std::string e = Lead(c, kind, op, count, type, pairs, local, *lr, deadline);
        lock.lock();
        lr->error = e;
      }
      lr->done = true;
      lr->cv.notify_all();
      err = lr->error;
    }
    last = ++lr->left == int(local.size());
  }
  if (last) {
    // every local member has left (members leave after the leader's verdict): nobody touches the rendezvous again
    std::lock_guard<std::mutex> glock(g_local_mu);
    auto f = g_locals->find(key);
    if (f != g_locals->end() && f->second == lr) g_locals->erase(f);
  }
  return err;
}

// The leader's work: header check, exchange with the other processes' leaders, every local output written.
std::string ProcessCommunicator::Lead(const CollectiveCall& c, int kind, ReduceOp op, size_t count, int type, const std::vector<std::pair<int, int>>& pairs,
                                      const std::vector<int>& local, Local& lr, Clock::time_point deadline) {
  const int n = int(c.group.size());
  const size_t w = ElementBytes(type);
  if (!w) return Where(c) + ": element type " + std::to_string(type) + " is not supported";
  // the processes of the group in order of first appearance, and each one's member positions
  std::vector<int> procs;
  std::map<int, std::vector<int>> members;
  for (int q = 0; q < n; q++) {
    const int pr = Proc(c.group[size_t(q)]);
    if (!members.count(pr)) procs.push_back(pr);
    members[pr].push_back(q);
  }
  std::vector<int> remote;
  for (int pr : procs)
    if (pr != pm_->self) remote.push_back(pr);
  const int min_rank = *std::min_element(c.group.begin(), c.group.end());
  const int tag = int(((pm_->global_launch & 1) << 13) | ((c.seq & 63) << 7) | uint64_t(min_rank & 127));
  // 1. headers
  Header mine;
  mine.kind = kind;
  mine.op = int(op);
  mine.type = type;
  mine.ndim = int(std::min<size_t>(c.shape.size(), 8));
  for (int d = 0; d < mine.ndim; d++) mine.dims[d] = c.shape[size_t(d)];
  mine.group_n = n;
  mine.epilogue = lr.epis[size_t(local[0])] ? 1 : 0;
  mine.count = count;
  mine.seq = c.seq;
  mine.launch = pm_->global_launch;
  std::vector<Header> theirs(remote.size());
  std::vector<mpi::Transfer> xs;
  // a small all-reduce among processes of one host: this process's partial travels with its header (the same
  // choice on every process that called the same collective; with another count the sizes differ but both fit one
  // mailbox slice, so the exchange still ends and the header check below names the mismatch)
  const size_t cb0 = count * w;
  std::map<int, int> hosts0;
  for (int pr : procs) hosts0[mpishm::HostOf(pr)]++;
  const bool small = kind == kAllReduce && hosts0.size() == 1 && mpishm::AllSameHost() && AllReducible(kind, op, type, local.size()) &&
                     cb0 <= SmallBytes() && sizeof(Header) + cb0 <= mpishm::SliceBytes();
  std::vector<char> small_send;
  std::vector<std::vector<char>> small_recv;
  if (small) {
    small_send.resize(sizeof(Header) + cb0);
    std::memcpy(small_send.data(), &mine, sizeof(Header));
    // this process's partial: its members' inputs folded in group order
    std::vector<const void*> mins;
    for (int q : local) mins.push_back(lr.ins[size_t(q)]);
    if (mins.size() == 1) std::memcpy(small_send.data() + sizeof(Header), mins[0], cb0);
    else if (!ReduceBuffers(mins.data(), mins.size(), small_send.data() + sizeof(Header), count, type, op))
      return Where(c) + ": unsupported reduction for element type " + TypeName(type);
    small_recv.assign(remote.size(), std::vector<char>(sizeof(Header) + cb0));
    for (size_t i = 0; i < remote.size(); i++) xs.push_back({remote[i], small_send.data(), small_send.size(), small_recv[i].data(), small_recv[i].size()});
  } else {
    for (size_t i = 0; i < remote.size(); i++) xs.push_back({remote[i], &mine, sizeof(Header), &theirs[i], sizeof(Header)});
  }
  const std::string what = c.name + " over " + c.axes + " (group of ranks " + RankList(c.group) + ") on process " + std::to_string(pm_->self);
  auto describe = [&](const Header& h) {
    return std::string(h.kind >= 0 && h.kind <= kPermute ? CollectiveKindName(h.kind) : "?") + " of " + TypeName(h.type) + Shape(h.dims, h.ndim) +
           (h.epilogue ? " with a fused epilogue" : "");
  };
  // a device failure here or on another process of the launch ends the wait for headers at once
  std::string abort_why;
  const auto aborted = [&] { return abort_why = AbortOf(pm_->global_launch, remote); };
  std::string err = Xchg(xs, tag, c, min_rank, 0, deadline, what + " timed out after " + std::to_string(c.timeout_ms) + " ms waiting for the other processes", aborted,
                         nullptr, describe(mine));
  // shared memory: a peer waiting for this process at another collective (the segment's out-of-step check)
  if (err.rfind(mpishm::kOutOfStep, 0) == 0) err = what + ": " + err;
  for (size_t i = 0; small && i < remote.size(); i++) std::memcpy(&theirs[i], small_recv[i].data(), sizeof(Header));
  // a header an aborted earlier launch left unreceived (same tag): skip it and take the next one (MPI only: the
  // segment's keys carry the launch, so the small path never sees a stale header)
  for (int again = 0; err.empty() && !small && again < 64; again++) {
    std::vector<mpi::Transfer> stale;
    for (size_t i = 0; i < remote.size(); i++)
      if (theirs[i].magic == mine.magic && theirs[i].launch < mine.launch) stale.push_back({remote[i], nullptr, 0, &theirs[i], sizeof(Header), true});
    if (stale.empty()) break;
    err = Xchg(stale, tag, c, min_rank, 0, deadline, what + " timed out after " + std::to_string(c.timeout_ms) + " ms waiting for the other processes", aborted,
               nullptr, describe(mine));
    if (err.rfind(mpishm::kOutOfStep, 0) == 0) err = what + ": " + err;
  }
  // every peer had arrived (its header is here): start -> ready is waiting for the other processes, ready -> end the
  // data exchange (the small path's data came with the header)
  if (err.empty() && c.ready_us) *c.ready_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (!err.empty() && !abort_why.empty()) return what + ": released early: " + abort_why;
  if (!err.empty()) {
    // name the ranks of the silent processes
    for (int pr : remote) err += "; process " + std::to_string(pr) + " runs ranks " + RankList(RanksOf(c, pr));
    return err;
  }
  for (size_t i = 0; i < remote.size(); i++) {
    const Header& h = theirs[i];
    const std::string who = "process " + std::to_string(remote[i]) + " (ranks " + RankList(RanksOf(c, remote[i])) + ")";
    if (h.magic != mine.magic) return what + ": " + who + " sent a malformed header";
    if (h.launch != mine.launch || h.seq != mine.seq)
      return what + ": processes are out of step: " + who + " is at collective #" + std::to_string(h.seq) + " of launch #" + std::to_string(h.launch) +
             ", this process at collective #" + std::to_string(mine.seq) + " of launch #" + std::to_string(mine.launch);
    bool same = h.kind == mine.kind && h.op == mine.op && h.type == mine.type && h.count == mine.count && h.ndim == mine.ndim && h.group_n == mine.group_n &&
                h.epilogue == mine.epilogue;
    for (int d = 0; same && d < h.ndim; d++) same = h.dims[d] == mine.dims[d];
    if (!same)
      return what + ": processes disagree: " + who + " called " + describe(h) + ", this process " + describe(mine);
  }
  // 2. data
  if (small) {
    // every process folds the partials in process order (the same bits everywhere)
    std::vector<const void*> ins;
    for (int pr : procs)
      ins.push_back(pr == pm_->self ? static_cast<const void*>(small_send.data() + sizeof(Header))
                                    : small_recv[size_t(std::find(remote.begin(), remote.end(), pr) - remote.begin())].data() + sizeof(Header));
    char* out0 = static_cast<char*>(lr.outs[size_t(local[0])]);
    if (!ReduceBuffers(ins.data(), ins.size(), out0, count, type, op)) return what + ": unsupported reduction for element type " + TypeName(type);
    for (size_t j = 1; j < local.size(); j++) std::memcpy(lr.outs[size_t(local[j])], out0, cb0);
    return "";
  }
  const size_t cb = count * w;  // bytes of one chunk / one input (AllReduce: the whole input)
  std::vector<std::vector<char>> sends(remote.size()), recvs(remote.size());
  if (kind == kAllReduce || kind == kReduceScatter || kind == kAllGather) {
    if (!AllReducible(kind, op, type, local.size())) return what + ": unsupported reduction for element type " + TypeName(type);
    // the same choice on every process: one host (the segment), some hosts with several processes (two levels), or
    // every process on its own host (the ring over MPI)
    std::map<int, int> per_host;
    for (int pr : procs) per_host[mpishm::HostOf(pr)]++;
    if (per_host.size() == 1) return ShmRing(c, kind, op, count, type, procs, members, local, lr, min_rank, deadline, what);
    if (per_host.size() < procs.size()) return Hier(c, kind, op, count, type, procs, members, local, lr, tag, min_rank, deadline, what);
    return Ring(c, kind, op, count, type, procs, members, local, lr, tag, deadline, what);
  }
  if (kind == kAllToAll) {
    // out of member q, chunk s = in of member s, chunk q
    auto in_chunk = [&](int s, int q) { return static_cast<const char*>(lr.ins[size_t(s)]) + size_t(q) * cb; };
    auto out_chunk = [&](int q, int s) { return static_cast<char*>(lr.outs[size_t(q)]) + size_t(s) * cb; };
    xs.clear();
    for (size_t i = 0; i < remote.size(); i++) {
      const std::vector<int>& ms = members[remote[i]];
      for (int q : ms)
        for (int s : local) sends[i].insert(sends[i].end(), in_chunk(s, q), in_chunk(s, q) + cb);
      recvs[i].resize(local.size() * ms.size() * cb);
      xs.push_back({remote[i], sends[i].data(), sends[i].size(), recvs[i].data(), recvs[i].size()});
    }
    if (!(err = Xchg(xs, tag, c, min_rank, 1, deadline, what + " timed out during the data exchange")).empty()) return err;
    for (int q : local)
      for (int s : local) std::memcpy(out_chunk(q, s), in_chunk(s, q), cb);
    for (size_t i = 0; i < remote.size(); i++) {
      const std::vector<int>& ms = members[remote[i]];
      size_t off = 0;
      for (int q : local)
        for (int s : ms) { std::memcpy(out_chunk(q, s), recvs[i].data() + off, cb); off += cb; }
    }
    return "";
  }
  // kPermute: pairs (source position, destination position), in pair order on both sides
  for (int q : local) {
    bool receives = false;
    for (const auto& pr : pairs) receives = receives || pr.second == q;
    if (!receives) std::memset(lr.outs[size_t(q)], 0, cb);
  }
  xs.clear();
  for (size_t i = 0; i < remote.size(); i++) {
    size_t incoming = 0;
    for (const auto& pr : pairs) {
      const int sp = Proc(c.group[size_t(pr.first)]), dp = Proc(c.group[size_t(pr.second)]);
      if (sp == pm_->self && dp == remote[i]) sends[i].insert(sends[i].end(), static_cast<const char*>(lr.ins[size_t(pr.first)]), static_cast<const char*>(lr.ins[size_t(pr.first)]) + cb);
      if (sp == remote[i] && dp == pm_->self) incoming++;
    }
    recvs[i].resize(incoming * cb);
    xs.push_back({remote[i], sends[i].data(), sends[i].size(), recvs[i].data(), recvs[i].size()});
  }
  if (!(err = Xchg(xs, tag, c, min_rank, 1, deadline, what + " timed out during the data exchange")).empty()) return err;
  std::vector<size_t> off(remote.size(), 0);
  for (const auto& pr : pairs) {
    const int sp = Proc(c.group[size_t(pr.first)]), dp = Proc(c.group[size_t(pr.second)]);
    if (dp != pm_->self) continue;
    if (sp == pm_->self) {
      std::memcpy(lr.outs[size_t(pr.second)], lr.ins[size_t(pr.first)], cb);
    } else {
      const size_t i = size_t(std::find(remote.begin(), remote.end(), sp) - remote.begin());
      std::memcpy(lr.outs[size_t(pr.second)], recvs[i].data() + off[i], cb);
      off[i] += cb;
    }
  }
  return "";
}

}  // namespace mpicomm

Communicator* NewProcessCommunicator(int rank, std::shared_ptr<const ProcessMap> pm) { return new mpicomm::ProcessCommunicator(rank, std::move(pm)); }

}  // namespace jaxts
