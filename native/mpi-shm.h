/** @file The same-host transport between processes of an MPI job: a POSIX shared-memory segment of mailboxes, process-shared atomics and futexes. */
#pragma once

// Processes on one host exchange the bytes of cross-process collectives through a shared segment instead of MPI
// messages (as NCCL and Open MPI's own vader do). Setup() runs once at distributed.initialize on every process: the
// host identities are exchanged over MPI, and when every process of the job shares the host (and none set
// JAXTS_MPI_SHM=0) process 0 creates the segment, the others map it, and it is unlinked once all mapped it. MPI then
// only carries the abort messages and the host-side exchanges (processAllgather).
// Exchange() has mpi::Exchange's semantics (every listed peer sends its bytes to this process and receives this
// process's bytes for it, bounded by the deadline, same error texts) over mailboxes: each process owns one mailbox
// per device (the leading device thread's), publishes a key (launch, seq, group, step) in one, and
// moves its bytes in rounds of at most one mailbox slice per peer: write the round, ring, read the peers' rounds,
// mark them consumed. Waits spin briefly, then sleep on a futex in the segment, and check the deadline.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mpi-loader.h"

namespace jaxts {
namespace mpishm {

/**
 * Sets up the segment (every process of the job must call it, after mpi::Init, with the same `slots`: the most devices
 * any process has, one mailbox each); "" when enabled, else why not.
 */
std::string Setup(int64_t timeout_ms, int slots);
/** Whether the shared-memory transport is in use (another process of the job runs on this host). */
bool Enabled();
/** Whether process q (MPI rank) runs on this host and is reached through the segment. */
bool SameHost(int q);
/** The index of process q's host (equal on every process), when the segment is in use. */
int HostOf(int q);
/** Whether every process of the job runs on this host (and the segment is in use). */
bool AllSameHost();
/** Bytes of one mailbox slice (what one exchange round carries to one peer; equal on every process of the host). */
size_t SliceBytes();
/** Counts one of the collectives' exchanges over MPI (mpiShmInfo: mpiExchanges, mpiBytes). */
void CountMpi(size_t bytes);
/**
 * Counts an AllReduceEpilogue evaluated inside the direct exchange's fold (mpiShmInfo: fusedEpilogues), and whether it
 * took the one-pass kernel of the `w - sum * s` form (onePassEpilogues).
 */
void CountFused(bool one_pass = false);
/** Counts a ring over MPI (`ring`) and a two-level collective (`hier`) of this process (mpiShmInfo: mpiRings, twoLevel). */
void CountLevel(bool ring, bool hier);

/** What identifies one exchange on every process (the group's first rank and a step within the collective). */
struct Key {
  uint64_t launch = 0, seq = 0;
  int32_t group = 0, step = 0;
  std::string desc;  // the collective as errors name it ("AllReduce of float32[2,3]"), published with the key
};

/** The prefix of Exchange's error when a peer waits for this process at another collective (callers add who). */
constexpr const char* kOutOfStep = "processes are out of step: ";

/**
 * Exchanges bytes with `peers` through the segment (peer = MPI rank), as mpi::Exchange does. At a step-0 key (a
 * collective's header), a peer that keeps waiting for this process at another collective of the same group (for
 * kOutOfStepMs) ends the wait with kOutOfStep + "process q is at collective #s of launch #l (desc), this process at
 * ..." instead of the timeout. `slot` picks this
 * process's mailbox (the leading device thread's local index; calls on one slot are serialized). `on_recv`, when set,
 * receives each arriving piece (peer index in `peers`, byte offset, bytes, length) instead of a copy into recv.
 */
std::string Exchange(const std::vector<mpi::Transfer>& peers, const Key& key, int slot, std::chrono::steady_clock::time_point deadline,
                     const std::string& what, const std::function<std::string()>& check = nullptr,
                     const std::function<void(size_t, size_t, const char*, size_t)>& on_recv = nullptr);

/** Bytes of one mailbox's data area (the largest buffer DirectAllReduce takes); 0 without the segment. */
size_t MailboxBytes();

/**
 * fold(ins, n, dsts, nd, bytes): every dsts[d][0, bytes) = the left fold of ins[0..n)[0, bytes) (ins[0] op ins[1] op
 * ...), with non-temporal stores when `stream` (a fold that fills the mailbox itself: stream into the mailbox); false when the reduction is unsupported. The one place a reduced
 * share passes through: an epilogue (say a fused SGD update of the reduced gradient) would apply here, to dsts[0]
 * (`out`) and, when nd is 2, dsts[1] (the mailbox; with nd 1 the mailbox gets a copy of `out` afterwards).
 */
using FoldFn = std::function<bool(const char* const* ins, size_t n, char* const* dsts, size_t nd, size_t bytes, bool stream)>;

/**
 * An all-reduce among `procs` (MPI ranks in group order, all on this host; this process is procs[self]) whose whole
 * buffer fits one mailbox (MailboxBytes), in one exchange of two phases instead of the reduce-scatter and all-gather
 * exchanges' rounds: publish the key and copy every peer's share seg[i] of `partial` into the mailbox at its offset,
 * ready = base + 1; fold own share seg[self] reading the peers' mailboxes in place (own partial first, then the peers
 * in group order), writing `out` and the mailbox, ready = base + 2; copy every peer's reduced share from its mailbox
 * into `out`, consumed++ on it. seg[i] = (byte offset, bytes) of process i's share; `partial` may equal `out`.
 * Errors as Exchange's ("no answer from process(es) [q] before the deadline"). `fold_fills_mailbox`: the fold always
 * gets both destinations (nd 2) and writes the mailbox itself (a fold that works a tile at a time copies each tile
 * while it is in L1); else a share under 2 MiB is folded into `out` alone and copied to the mailbox afterwards.
 */
std::string DirectAllReduce(const std::vector<int>& procs, size_t self, const Key& key, int slot, std::chrono::steady_clock::time_point deadline,
                            const std::string& what, const char* partial, char* out, const std::vector<std::pair<size_t, size_t>>& seg,
                            const FoldFn& fold, bool fold_fills_mailbox = false);

}  // namespace mpishm
}  // namespace jaxts
