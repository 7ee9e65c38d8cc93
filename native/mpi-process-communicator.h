/** @file Internal to the multi-process communicator: the ProcessCommunicator class and the local rendezvous its two source files share (native/mpi-communicator.cc: rendezvous, headers, all-to-all, permute; native/mpi-ring-collectives.cc: the ring, two-level and same-host reductions). */
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "communicator.h"
#include "mpi-communicator.h"
#include "mpi-loader.h"

namespace jaxts {
namespace mpicomm {

using Clock = std::chrono::steady_clock;

/**
 * Whether an all-reduce among this host's processes whose buffer fits one mailbox takes the direct two-phase exchange
 * (mpishm::DirectAllReduce) instead of the reduce-scatter and all-gather exchanges; $JAXTS_MPI_SHM_DIRECT=0: never.
 */
bool DirectOn();

/** The local rendezvous of this process's members of one collective (the leader writes every member's output). */
struct Local {
  uint64_t glaunch = 0;
  std::vector<const void*> ins;
  std::vector<void*> outs;
  std::vector<const CollectiveEpilogue*> epis;  // per member: the epilogue fused into the direct exchange, or null
  int arrived = 0, left = 0;
  bool done = false;
  std::string error;
  std::mutex mu;
  std::condition_variable cv;
};

class ProcessCommunicator : public Communicator {
 public:
  ProcessCommunicator(int rank, std::shared_ptr<const ProcessMap> pm)
      : rank_(rank), pm_(std::move(pm)), shm_(NewShmCommunicator(rank, int(pm_->rank_process.size()))) {}
  int rank() const override { return rank_; }
  int size() const override { return int(pm_->rank_process.size()); }
  std::string AllReduce(const CollectiveCall& c, const void* in, void* out, size_t count, int type, ReduceOp op) override;
  std::string AllReduceEpilogue(const CollectiveCall& c, const void* in, size_t count, ReduceOp op, const CollectiveEpilogue& e) override;
  std::string AllGather(const CollectiveCall& c, const void* in, void* out, size_t count, int type) override;
  std::string ReduceScatter(const CollectiveCall& c, const void* in, void* out, size_t count, int type, ReduceOp op) override;
  std::string AllToAll(const CollectiveCall& c, const void* in, void* out, size_t count, int type) override;
  std::string CollectivePermute(const CollectiveCall& c, const void* in, void* out, size_t count, int type,
                                const std::vector<std::pair<int, int>>& pairs) override;
  void DeviceFailed(const std::string& why) override;

 private:
  // float16 / bfloat16 across processes, reduced in float32 (native/mpi-communicator.cc)
  std::string Widened(const CollectiveCall& c, int kind, ReduceOp op, const void* in, void* out, size_t in_count, size_t out_count, int type);
  int Proc(int r) const { return r >= 0 && size_t(r) < pm_->rank_process.size() ? pm_->rank_process[size_t(r)] : -1; }
  bool Within(const CollectiveCall& c) const {
    for (int r : c.group)
      if (Proc(r) != pm_->self) return false;
    return true;
  }
  /** Why this launch failed on a device of this process, or "". */
  std::string LocalAbort() const;
  std::string Where(const CollectiveCall& c) const {
    return c.name + " over " + c.axes + " (group of ranks " + RankList(c.group) + ") on process " + std::to_string(pm_->self);
  }
  std::vector<int> RanksOf(const CollectiveCall& c, int proc) const {
    std::vector<int> v;
    for (int r : c.group)
      if (Proc(r) == proc) v.push_back(r);
    return v;
  }

  // native/mpi-communicator.cc: the exchange, the rendezvous, the leader's header check, all-to-all and permute
  std::string Xchg(const std::vector<mpi::Transfer>& xs, int tag, const CollectiveCall& c, int min_rank, int step, Clock::time_point deadline,
                   const std::string& what, const std::function<std::string()>& check = nullptr,
                   const std::function<void(size_t, size_t, const char*, size_t)>& on_recv = nullptr, const std::string& desc = "");
  std::string Run(const CollectiveCall& c, int kind, ReduceOp op, const void* in, void* out, size_t count, int type,
                  const std::vector<std::pair<int, int>>& pairs, const CollectiveEpilogue* epi = nullptr);
  std::string Lead(const CollectiveCall& c, int kind, ReduceOp op, size_t count, int type, const std::vector<std::pair<int, int>>& pairs,
                   const std::vector<int>& local, Local& lr, Clock::time_point deadline);

  // native/mpi-ring-collectives.cc: all-reduce, reduce-scatter and all-gather between processes
  using Segments = std::vector<std::vector<std::pair<size_t, size_t>>>;
  static Segments RingSegments(int kind, size_t count, size_t w, const std::vector<int>& procs, std::map<int, std::vector<int>>& members);
  std::string Ring(const CollectiveCall& c, int kind, ReduceOp op, size_t count, int type, const std::vector<int>& procs,
                   std::map<int, std::vector<int>>& members, const std::vector<int>& local, Local& lr, int tag, Clock::time_point deadline,
                   const std::string& what, const std::vector<int>* write = nullptr);
  std::string Hier(const CollectiveCall& c, int kind, ReduceOp op, size_t count, int type, const std::vector<int>& procs,
                   std::map<int, std::vector<int>>& members, const std::vector<int>& local, Local& lr, int tag, int min_rank,
                   Clock::time_point deadline, const std::string& what);
  std::string ShmRing(const CollectiveCall& c, int kind, ReduceOp op, size_t count, int type, const std::vector<int>& procs,
                      std::map<int, std::vector<int>>& members, const std::vector<int>& local, Local& lr, int min_rank, Clock::time_point deadline,
                      const std::string& what);

  int rank_;
  std::shared_ptr<const ProcessMap> pm_;
  std::unique_ptr<Communicator> shm_;
};

}  // namespace mpicomm
}  // namespace jaxts
