/** @file The multi-process communicator's all-reduce, reduce-scatter and all-gather between processes: the ring over MPI, the two-level (per host, then between hosts) exchange and the same-host shared-memory exchange; the rendezvous and header check that lead here are in native/mpi-communicator.cc. */
// Every segment of the result is reduced on one process and copied to the others, so all processes hold the same
// bits; see each function's comment for its fold order.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "fused.h"
#include "mpi-process-communicator.h"
#include "mpi-shm.h"
#include "mpi-stream-kernels.h"
#include "reduce-kernels.h"

namespace jaxts {
namespace mpicomm {
namespace {


// dst[i] = op(dst[i], src[i]); integer sums wrap (two's complement); max/min propagate NaN
template <typename T>
void Fold(T* dst, const T* src, size_t n, ReduceOp op) {
  for (size_t i = 0; i < n; i++) {
    T a = dst[i], b = src[i];
    if (op == ReduceOp::kSum) {
      if constexpr (std::is_integral<T>::value) dst[i] = T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
      else dst[i] = a + b;
    } else if (op == ReduceOp::kMax) {
      dst[i] = a != a ? a : (b != b ? b : (b > a ? b : a));
    } else {
      dst[i] = a != a ? a : (b != b ? b : (b < a ? b : a));
    }
  }
}
bool FoldBytes(void* dst, const void* src, size_t n, int type, ReduceOp op) {
  switch (type) {
    case kFloat32: Fold(static_cast<float*>(dst), static_cast<const float*>(src), n, op); return true;
    case kFloat64: Fold(static_cast<double*>(dst), static_cast<const double*>(src), n, op); return true;
    case kInt32: Fold(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n, op); return true;
    case kInt64: Fold(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n, op); return true;
    case kInt8: Fold(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), n, op); return true;
    case kInt16: Fold(static_cast<int16_t*>(dst), static_cast<const int16_t*>(src), n, op); return true;
    case kUint16: Fold(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, op); return true;
    case kUint32: Fold(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), n, op); return true;
    case kUint64: Fold(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), n, op); return true;
    case kBool: case kUint8:
      if (op == ReduceOp::kSum) return false;  // a bool sum is not closed; the lowering converts first
      Fold(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n, op);
      return true;
    default: return false;
  }
}

// dst[i] = op(a[i], b[i]); dst may be a or b
bool FoldInto(void* dst, const void* a, const void* b, size_t n, int type, ReduceOp op) {
  const size_t w = ElementBytes(type);
  if (dst != a) {
    if (dst == b) {
      // op is commutative (sum, max, min) up to which NaN is kept: fold a into dst
      return FoldBytes(dst, a, n, type, op);
    }
    std::memcpy(dst, a, n * w);
  }
  return FoldBytes(dst, b, n, type, op);
}
/** Bytes per pipelined piece of a ring step ($JAXTS_MPI_PIECE_BYTES, default 1 MiB). */
size_t PieceBytes() {
  static const size_t v = [] {
    const char* e = std::getenv("JAXTS_MPI_PIECE_BYTES");
    const long long b = e ? std::atoll(e) : 0;
    return b > 0 ? size_t(b) : size_t(1) << 20;
  }();
  return v;
}

/** $JAXTS_MPI_SHM_ONEPASS=0: evaluate a fused epilogue of that form with the generic evaluator (A/B). */
bool OnePassOn() {
  static const bool v = [] {
    const char* e = std::getenv("JAXTS_MPI_SHM_ONEPASS");
    return !(e && std::string(e) == "0");
  }();
  return v;
}

}  // namespace

// Byte ranges of the whole buffer per segment j of a ring over `procs` (Ring and ShmRing): all-reduce, an even split
// of the count elements (segment j = elements [count j / P, count (j+1) / P), empty ones left out); otherwise the
// chunks (count elements each) of process j's members, in member order.
ProcessCommunicator::Segments ProcessCommunicator::RingSegments(int kind, size_t count, size_t w, const std::vector<int>& procs, std::map<int, std::vector<int>>& members) {
  const size_t P = procs.size(), cb = count * w;
  Segments seg(P);
  for (size_t j = 0; j < P; j++) {
    if (kind == kAllReduce) {
      const size_t lo = count * j / P, hi = count * (j + 1) / P;
      if (hi > lo) seg[j].push_back({lo * w, (hi - lo) * w});
    } else {
      for (int q : members[procs[j]]) seg[j].push_back({size_t(q) * cb, cb});
    }
  }
  return seg;
}

// The ring over the group's processes (in group order) that all-reduce, reduce-scatter and all-gather use. The bytes
// are cut in P segments, segment j = what process j's members own (all-reduce: an even split of the whole buffer).
// Reduce-scatter phase: at step t process s sends segment s-t-1 to the next process and receives segment s-t-2 from
// the previous one, folding it into its own partial; after P-1 steps it holds segment s reduced over every process.
// All-gather phase: at step t it sends segment s-t and receives s-t-1. Each process sends 2(P-1)/P of the buffer
// (all-reduce) instead of P-1 times it; every segment is reduced on one process and copied to the others, so all
// processes hold the same bits. Steps are pipelined in pieces (kPieceBytes): a piece goes on to the next process as
// soon as it was received and folded, while the rest of the step is still moving.
std::string ProcessCommunicator::Ring(const CollectiveCall& c, int kind, ReduceOp op, size_t count, int type, const std::vector<int>& procs,
                                      std::map<int, std::vector<int>>& members, const std::vector<int>& local, Local& lr, int tag, Clock::time_point deadline,
                                      const std::string& what, const std::vector<int>* write) {
  const size_t w = ElementBytes(type), cb = count * w;
  const int n = int(c.group.size()), P = int(procs.size());
  const int s = int(std::find(procs.begin(), procs.end(), pm_->self) - procs.begin());
  const auto mod = [P](int i) { return ((i % P) + P) % P; };
  const Segments seg = RingSegments(kind, count, w, procs, members);
  const size_t total = kind == kAllReduce ? cb : cb * size_t(n);
  const size_t piece_max = std::max<size_t>(w, PieceBytes() / w * w);
  const auto pieces = [&](int j) {
    std::vector<std::pair<size_t, size_t>> v;
    for (const auto& r : seg[size_t(j)])
      for (size_t o = 0; o < r.second; o += piece_max) v.push_back({r.first + o, std::min(piece_max, r.second - o)});
    return v;
  };
  // buffers: partial (this process's contribution), acc (where segments are reduced and gathered), rbuf (where
  // the reduce-scatter phase receives; acc itself when the partial lives elsewhere: acc = partial op acc)
  const char* in0 = static_cast<const char*>(lr.ins[size_t(local[0])]);
  char* out0 = static_cast<char*>(lr.outs[size_t(local[0])]);
  thread_local std::vector<char> scratch_a, scratch_b;
  const auto grow = [](std::vector<char>& v, size_t b) -> char* {
    if (v.size() < b) v.resize(b);
    return v.data();
  };
  char* acc = kind == kReduceScatter ? grow(scratch_a, total) : out0;
  const char* partial = nullptr;
  if (kind == kAllGather) {
    for (int q : local) std::memcpy(acc + size_t(q) * cb, lr.ins[size_t(q)], cb);
  } else if (local.size() == 1 && in0 != acc) {
    partial = in0;
  } else {
    if (in0 != acc) std::memcpy(acc, in0, total);
    for (size_t j = 1; j < local.size(); j++) FoldBytes(acc, lr.ins[size_t(local[j])], total / w, type, op);
    partial = acc;
  }
  char* rbuf = partial == acc ? grow(scratch_b, total) : acc;
  mpi::Stream st;
  st.send_peer = procs[size_t(mod(s + 1))];
  st.recv_peer = procs[size_t(mod(s - 1))];
  std::vector<std::pair<size_t, size_t>> rpieces;  // per receive: its byte range
  std::vector<bool> rfold;                         // per receive: folded (reduce-scatter phase) or landed in place
  long prev_begin = 0;                             // index of the previous step's first receive
  const bool rs = kind != kAllGather, ag = kind != kReduceScatter;
  const int steps_rs = rs ? P - 1 : 0, steps = steps_rs + (ag ? P - 1 : 0);
  for (int t = 0; t < steps; t++) {
    const bool in_rs = t < steps_rs;
    const int u = in_rs ? t : t - steps_rs;
    const int send_seg = in_rs ? mod(s - u - 1) : mod(s - u), recv_seg = in_rs ? mod(s - u - 2) : mod(s - u - 1);
    // what this step sends: the partial at the first step, then what the previous step received (piece k after receive k)
    const auto sp = pieces(send_seg);
    const bool first = t == 0;
    for (size_t k = 0; k < sp.size(); k++) {
      const char* base = first && in_rs ? partial : acc;
      st.sends.push_back({base + sp[k].first, sp[k].second});
      st.send_after.push_back(first ? -1 : prev_begin + long(k));
    }
    const auto rp = pieces(recv_seg);
    const long begin = long(rpieces.size());
    for (const auto& r : rp) {
      st.recvs.push_back({(in_rs ? rbuf : acc) + r.first, r.second});
      rpieces.push_back(r);
      rfold.push_back(in_rs);
    }
    prev_begin = begin;
  }
  st.on_recv = [&](size_t k) {
    if (!rfold[k]) return;
    const auto& r = rpieces[k];
    FoldInto(acc + r.first, partial + r.first, rbuf + r.first, r.second / w, type, op);
  };
  size_t streamed = 0;
  for (const auto& x : st.sends) streamed += x.second;
  for (const auto& x : st.recvs) streamed += x.second;
  mpishm::CountMpi(streamed);
  mpishm::CountLevel(true, false);
  std::string err = mpi::RunStream(st, tag, deadline, what + " timed out during the data exchange");
  if (!err.empty()) {
    for (int pr : procs)
      if (pr != pm_->self) err += "; process " + std::to_string(pr) + " runs ranks " + RankList(RanksOf(c, pr));
    return err;
  }
  for (int q : write ? *write : local) {
    if (kind == kReduceScatter) std::memcpy(lr.outs[size_t(q)], acc + size_t(q) * cb, cb);
    else if (lr.outs[size_t(q)] != acc) std::memcpy(lr.outs[size_t(q)], acc, total);
  }
  return "";
}

// All-reduce, reduce-scatter and all-gather when some of the group's processes share a host and others do not (two
// levels): 1. within each host, every process sends its part (the partial reduction of its members, or their chunks)
// to the host's first process in group order, which folds them in group order (or places the chunks); 2. those host
// leaders run Ring among themselves over MPI (segment of a host = the chunks of all its processes' members); 3. each
// host leader sends the result to its host's processes (all-reduce / all-gather: all of it; reduce-scatter: the
// chunks of each one's members). Integers are exact; floats are reduced in another order than the flat ring.
std::string ProcessCommunicator::Hier(const CollectiveCall& c, int kind, ReduceOp op, size_t count, int type, const std::vector<int>& procs,
                                      std::map<int, std::vector<int>>& members, const std::vector<int>& local, Local& lr, int tag, int min_rank,
                                      Clock::time_point deadline, const std::string& what) {
  const size_t w = ElementBytes(type), cb = count * w;
  const int n = int(c.group.size());
  const size_t total = kind == kAllReduce ? cb : cb * size_t(n);
  const auto named = [&](std::string e) {
    for (int pr : procs)
      if (pr != pm_->self) e += "; process " + std::to_string(pr) + " runs ranks " + RankList(RanksOf(c, pr));
    return e;
  };
  // this host's processes of the group (group order; the first leads) and the host leaders
  std::vector<int> host, leaders;
  std::map<int, int> leader_of_host;  // host index -> its first process in group order
  std::map<int, std::vector<int>> leader_members;  // host leader -> the chunk positions of its host's processes
  for (int pr : procs) {
    if (mpishm::HostOf(pr) == mpishm::HostOf(pm_->self)) host.push_back(pr);
    auto f = leader_of_host.find(mpishm::HostOf(pr));
    if (f == leader_of_host.end()) {
      f = leader_of_host.emplace(mpishm::HostOf(pr), pr).first;
      leaders.push_back(pr);
    }
    std::vector<int>& lm = leader_members[f->second];
    lm.insert(lm.end(), members[pr].begin(), members[pr].end());
  }
  for (auto& [l, lm] : leader_members) std::sort(lm.begin(), lm.end());
  const bool lead = host[0] == pm_->self;
  mpishm::CountLevel(false, true);
  // this process's part: its members' partial reduction (all-reduce, reduce-scatter: total bytes) or their chunks
  thread_local std::vector<char> part_buf, host_buf, res_buf;
  const auto grow = [](std::vector<char>& v, size_t b) -> char* {
    if (v.size() < b) v.resize(b);
    return v.data();
  };
  const size_t part_bytes = kind == kAllGather ? cb * local.size() : total;
  const char* part = static_cast<const char*>(lr.ins[size_t(local[0])]);
  if (kind == kAllGather || local.size() > 1) {
    char* pb = grow(part_buf, part_bytes);
    if (kind == kAllGather) {
      for (size_t j = 0; j < local.size(); j++) std::memcpy(pb + j * cb, lr.ins[size_t(local[j])], cb);
    } else {
      std::memcpy(pb, part, total);
      for (size_t j = 1; j < local.size(); j++) FoldBytes(pb, lr.ins[size_t(local[j])], total / w, type, op);
    }
    part = pb;
  }
  // the chunk positions of the members of a set of processes (ascending)
  const auto positions = [&](const std::vector<int>& ps) {
    std::vector<int> v;
    for (int pr : ps) v.insert(v.end(), members[pr].begin(), members[pr].end());
    std::sort(v.begin(), v.end());
    return v;
  };
  const std::vector<int> host_pos = positions(host);
  char* res = grow(res_buf, total);  // the result of the whole group (reduce-scatter: this host's chunks)
  std::vector<mpi::Transfer> xs;
  std::string err;
  if (!lead) {
    // 1. the part to the host leader; 3. the result back
    xs.push_back({host[0], part, part_bytes, nullptr, 0});
    if (!(err = Xchg(xs, tag, c, min_rank, 1, deadline, what + " timed out during the data exchange")).empty()) return named(err);
    const size_t back = kind == kReduceScatter ? cb * local.size() : total;
    xs.assign(1, {host[0], nullptr, 0, res, back});
    if (!(err = Xchg(xs, tag, c, min_rank, 2, deadline, what + " timed out during the data exchange")).empty()) return named(err);
    for (size_t j = 0; j < local.size(); j++) {
      const int q = local[j];
      if (kind == kReduceScatter) std::memcpy(lr.outs[size_t(q)], res + j * cb, cb);
      else std::memcpy(lr.outs[size_t(q)], res, total);
    }
    return "";
  }
  // 1. the host's parts, folded in group order (all-gather: placed at their members' positions)
  std::vector<std::vector<char>> parts(host.size());
  xs.clear();
  for (size_t h = 1; h < host.size(); h++) {
    parts[h].resize(kind == kAllGather ? cb * members[host[h]].size() : total);
    xs.push_back({host[h], nullptr, 0, parts[h].data(), parts[h].size()});
  }
  if (!(err = Xchg(xs, tag, c, min_rank, 1, deadline, what + " timed out during the data exchange")).empty()) return named(err);
  char* hb = grow(host_buf, total);
  if (kind == kAllGather) {
    for (size_t j = 0; j < local.size(); j++) std::memcpy(hb + size_t(local[j]) * cb, part + j * cb, cb);
    for (size_t h = 1; h < host.size(); h++)
      for (size_t j = 0; j < members[host[h]].size(); j++) std::memcpy(hb + size_t(members[host[h]][j]) * cb, parts[h].data() + j * cb, cb);
  } else {
    std::memcpy(hb, part, total);
    for (size_t h = 1; h < host.size(); h++) FoldBytes(hb, parts[h].data(), total / w, type, op);
  }
  // 2. the ring between host leaders: a Local whose inputs are the host's (chunks or partial), outputs in `res`
  Local hl;
  hl.ins.assign(size_t(n), nullptr);
  hl.outs.assign(size_t(n), nullptr);
  std::vector<int> ring_local, write;
  if (kind == kAllGather) {
    ring_local = host_pos;
    for (int q : host_pos) {
      hl.ins[size_t(q)] = hb + size_t(q) * cb;
      hl.outs[size_t(q)] = res;
    }
  } else {
    ring_local = {host_pos[0]};
    hl.ins[size_t(host_pos[0])] = hb;
    hl.outs[size_t(host_pos[0])] = res;
    if (kind == kReduceScatter) {
      write = host_pos;
      for (int q : host_pos) hl.outs[size_t(q)] = res + size_t(q) * cb;
    }
  }
  err = Ring(c, kind, op, count, type, leaders, leader_members, ring_local, hl, tag, deadline, what, kind == kReduceScatter ? &write : nullptr);
  if (!err.empty()) return named(err);
  // 3. the result to the host's other processes, and this process's outputs
  std::vector<std::vector<char>> backs(host.size());
  xs.clear();
  for (size_t h = 1; h < host.size(); h++) {
    if (kind == kReduceScatter) {
      for (int q : members[host[h]]) backs[h].insert(backs[h].end(), res + size_t(q) * cb, res + size_t(q) * cb + cb);
      xs.push_back({host[h], backs[h].data(), backs[h].size(), nullptr, 0});
    } else {
      xs.push_back({host[h], res, total, nullptr, 0});
    }
  }
  if (!(err = Xchg(xs, tag, c, min_rank, 2, deadline, what + " timed out during the data exchange")).empty()) return named(err);
  for (int q : local) {
    if (kind == kReduceScatter) std::memcpy(lr.outs[size_t(q)], res + size_t(q) * cb, cb);
    else std::memcpy(lr.outs[size_t(q)], res, total);
  }
  return "";
}

// All-reduce, reduce-scatter and all-gather through the same-host segment: segments as in Ring (segment j = what
// process j's members own; all-reduce: an even split). Reduce-scatter phase: every process sends segment q of its
// partial to process q and folds the pieces it receives straight from the segment into its own segment s; all-gather
// phase: it sends its reduced segment s to every process and receives segment q from q. Every segment is reduced on
// one process and copied, so all processes hold the same bits (fold order: own partial, then the others in order).
std::string ProcessCommunicator::ShmRing(const CollectiveCall& c, int kind, ReduceOp op, size_t count, int type, const std::vector<int>& procs,
                                         std::map<int, std::vector<int>>& members, const std::vector<int>& local, Local& lr, int min_rank, Clock::time_point deadline,
                                         const std::string& what) {
  const size_t w = ElementBytes(type), cb = count * w;
  const int n = int(c.group.size()), P = int(procs.size());
  const int s = int(std::find(procs.begin(), procs.end(), pm_->self) - procs.begin());
  const Segments seg = RingSegments(kind, count, w, procs, members);
  const auto bytes = [&](int j) {
    size_t b = 0;
    for (const auto& r : seg[size_t(j)]) b += r.second;
    return b;
  };
  const size_t total = kind == kAllReduce ? cb : cb * size_t(n);
  const char* in0 = static_cast<const char*>(lr.ins[size_t(local[0])]);
  char* out0 = static_cast<char*>(lr.outs[size_t(local[0])]);
  thread_local std::vector<char> scratch;
  if (kind == kReduceScatter && scratch.size() < total) scratch.resize(total);
  char* acc = kind == kReduceScatter ? scratch.data() : out0;
  const char* partial = in0;
  if (kind == kAllGather) {
    for (int q : local) std::memcpy(acc + size_t(q) * cb, lr.ins[size_t(q)], cb);
  } else if (local.size() > 1) {
    if (in0 != acc) std::memcpy(acc, in0, total);
    for (size_t j = 1; j < local.size(); j++) FoldBytes(acc, lr.ins[size_t(local[j])], total / w, type, op);
    partial = acc;
  }
  const CollectiveEpilogue* epi = lr.epis[size_t(local[0])];
  const bool direct = kind == kAllReduce && total <= mpishm::MailboxBytes() && DirectOn();
  if (epi && !direct) return what + ": internal error: a fused epilogue without the direct exchange";
  if (direct) {
    // the whole buffer fits a mailbox: one exchange of two phases (mpishm::DirectAllReduce), same fold order
    std::vector<std::pair<size_t, size_t>> flat;
    for (const auto& sj : seg) flat.push_back(sj.empty() ? std::make_pair(size_t(0), size_t(0)) : sj[0]);
    const auto mine = std::find(pm_->local_ranks.begin(), pm_->local_ranks.end(), rank_);
    const size_t own_lo = flat[size_t(s)].first / w;  // the own share's first element (the epilogue's operands start there)
    // an epilogue of the form w - sum * s (FusedScaledUpdate): one pass instead of reduce, then evaluate
    FusedScaledUpdate upd;
    ScaledUpdateFn one_pass = nullptr;
    ScaledUpdateStreamFn one_pass_nt = nullptr;
    float upd_s = 0.f;
    if (epi && OnePassOn() && type == kFloat32 && op == ReduceOp::kSum && MatchScaledUpdate(epi->program, &upd) &&
        size_t(upd.w_input - 1) < epi->operands.size() && (upd.scalar < 0 || size_t(upd.scalar) < epi->scalars.size())) {
      one_pass = ScaledUpdateKernel(upd);
      one_pass_nt = ScaledUpdateStreamKernel(upd);
      upd_s = upd.scalar < 0 ? upd.value : epi->scalars[size_t(upd.scalar)];
    }
    if (epi) mpishm::CountFused(one_pass != nullptr);
    const std::string err = mpishm::DirectAllReduce(
        procs, size_t(s), {pm_->global_launch, c.seq, min_rank, 1, ""}, int(mine - pm_->local_ranks.begin()), deadline,
        what + " timed out during the data exchange", partial, acc, flat,
        [&](const char* const* ins, size_t k, char* const* dsts, size_t nd, size_t b, bool stream) {
          if (!epi) return ReduceElements(type, op, reinterpret_cast<const void* const*>(ins), k, dsts, nd, b / w, stream);
          // fused epilogue: a tile at a time (it stays in L1), reduce and evaluate the epilogue into the output, then
          // copy the tile to the mailbox: the peers copy the results, so each element is updated once in the job
          constexpr size_t kTile = 4096;
          thread_local std::vector<float> tile;
          tile.resize(kTile);
          std::vector<const void*> tins(k);
          // a streaming fold: one pass storing the output and the mailbox directly (no tile copy)
          if (one_pass_nt && stream && nd > 1 &&
              one_pass_nt(reinterpret_cast<const float* const*>(ins), k, epi->operands[size_t(upd.w_input - 1)] + own_lo, upd_s,
                          reinterpret_cast<float*>(dsts[0]), reinterpret_cast<float*>(dsts[1]), b / w))
            return true;
          for (size_t t = 0, n_el = b / w; t < n_el; t += kTile) {
            const size_t len = std::min(kTile, n_el - t);
            for (size_t j = 0; j < k; j++) tins[j] = ins[j] + t * w;
            float* o = reinterpret_cast<float*>(dsts[0] + t * w);
            if (one_pass) {
              // w - sum * s in one pass (the common SGD form; same bits as the evaluator below)
              one_pass(reinterpret_cast<const float* const*>(tins.data()), k, epi->operands[size_t(upd.w_input - 1)] + own_lo + t, upd_s, o, len);
            } else {
              char* td = reinterpret_cast<char*>(tile.data());
              if (!ReduceElements(type, op, tins.data(), k, &td, 1, len, false)) return false;
              EvalEpilogue(*epi, tile.data(), own_lo + t, len, &o);
            }
            if (nd > 1) mpishm::CopyStreamed(dsts[1] + t * w, reinterpret_cast<const char*>(o), len * w, stream);
          }
          return true;
        },
        epi != nullptr);
    if (!err.empty()) {
      std::string e = err;
      for (int pr : procs)
        if (pr != pm_->self) e += "; process " + std::to_string(pr) + " runs ranks " + RankList(RanksOf(c, pr));
      return e;
    }
    for (int q : local)
      if (lr.outs[size_t(q)] != acc) std::memcpy(lr.outs[size_t(q)], acc, total);
    return "";
  }
  // segment j of buf as one contiguous run (a pointer into buf, or packed into `tmp`)
  std::vector<std::vector<char>> packs(static_cast<size_t>(P));
  const auto packed = [&](const char* buf, int j) -> const char* {
    if (seg[size_t(j)].size() == 1) return buf + seg[size_t(j)][0].first;
    std::vector<char>& v = packs[size_t(j)];
    v.clear();
    for (const auto& r : seg[size_t(j)]) v.insert(v.end(), buf + r.first, buf + r.first + r.second);
    return v.data();
  };
  // calls f(position in buf, source, length) for the packed bytes [off, off + len) of segment j
  const auto scatter = [&](int j, size_t off, const char* src, size_t len, const std::function<void(size_t, const char*, size_t)>& f) {
    size_t at = 0;
    for (const auto& r : seg[size_t(j)]) {
      const size_t lo = std::max(off, at), hi = std::min(off + len, at + r.second);
      if (hi > lo) f(r.first + (lo - at), src + (lo - off), hi - lo);
      at += r.second;
    }
  };
  std::vector<int> remote;
  for (int j = 0; j < P; j++)
    if (j != s) remote.push_back(j);
  std::vector<mpi::Transfer> xs;
  std::string err;
  const auto named = [&](std::string e) {
    for (int pr : procs)
      if (pr != pm_->self) e += "; process " + std::to_string(pr) + " runs ranks " + RankList(RanksOf(c, pr));
    return e;
  };
  if (kind != kAllGather) {
    // own segment: acc = partial op (the first other process's piece), then the others folded in as they arrive
    // (every process's pieces of one round cover the same bytes, and arrive in process order)
    for (int j : remote) xs.push_back({procs[size_t(j)], packed(partial, j), bytes(j), nullptr, bytes(s)});
    err = Xchg(xs, 0, c, min_rank, 1, deadline, what + " timed out during the data exchange", nullptr,
               [&](size_t i, size_t off, const char* src, size_t len) {
                 scatter(s, off, src, len, [&](size_t at, const char* p, size_t l) {
                   const void* ins[2] = {i == 0 ? partial + at : acc + at, p};
                   ReduceBuffers(ins, 2, acc + at, l / w, type, op);
                 });
               });
    if (!err.empty()) return named(err);
  }
  if (kind != kReduceScatter) {
    xs.clear();
    const char* mine = packed(acc, s);
    for (int j : remote) xs.push_back({procs[size_t(j)], mine, bytes(s), nullptr, bytes(j)});
    err = Xchg(xs, 0, c, min_rank, 2, deadline, what + " timed out during the data exchange", nullptr,
               [&](size_t i, size_t off, const char* src, size_t len) {
                 scatter(remote[i], off, src, len, [&](size_t at, const char* p, size_t l) { std::memcpy(acc + at, p, l); });
               });
    if (!err.empty()) return named(err);
  }
  for (int q : local) {
    if (kind == kReduceScatter) std::memcpy(lr.outs[size_t(q)], acc + size_t(q) * cb, cb);
    else if (lr.outs[size_t(q)] != acc) std::memcpy(lr.outs[size_t(q)], acc, total);
  }
  return "";
}

}  // namespace mpicomm
}  // namespace jaxts
