/** @file Same-host transport for MPI jobs: a POSIX shared-memory segment of mailboxes with futex waits (see mpi-shm.h), and the addon's mpiShmSetup / mpiShmInfo. */
// Segment layout: a header, then for each process one bell (a futex word every change of its state rings) and one
// mailbox per device of the process with the most devices (a leading device thread uses its local index's mailbox,
// so concurrent groups never share one). A mailbox: a seqlock-published key, the round counter `ready` (rounds written), the counter
// `consumed` (peer reads of its rounds) and the data area, cut in one slice per process (slice q: the bytes for q).
// One exchange on process p with peers Q: publish the key (after every earlier round of the mailbox was consumed),
// find each peer's mailbox holding the same key, then per round r: wait until p's round r-1 was consumed by the
// peers that read it, write slice q of round r for each q still sending, ready++, ring; then for each q still
// sending to p wait until q's ready passed r, take slice p of it, consumed++ on q's mailbox, ring q's bell.
// The rounds of a pair = max(1, bytes either way / slice bytes): a zero-byte exchange is still a handshake.
// DirectAllReduce uses the whole data area as one buffer (every process's share at its offset) in one key of two
// phases (ready = base + 1: the peers' shares of the partial; base + 2: the own share reduced), consumed once per peer.

#include "mpi-shm.h"
#include "mpi-stream-kernels.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <node_api.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "cpu-level.h"

#ifdef JAXTS_X86
#include <immintrin.h>
#endif

namespace jaxts {
namespace mpishm {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMagic = 0x4a58534d;  // "JXSM"
constexpr int kOutOfStepMs = 100;
constexpr size_t kStreamShare = size_t(2) << 20;  // DirectAllReduce: from this share size on, the fold streams its stores  // how long a peer must wait at another collective before it counts as out of step

struct alignas(64) Bell {
  std::atomic<uint32_t> word{0}, sleepers{0};
};
struct alignas(64) Mailbox {
  std::atomic<uint32_t> pub{0};  // seqlock: odd while the key is being written
  std::atomic<uint64_t> launch{0}, seq{0};
  std::atomic<int32_t> group{0}, step{0};
  std::atomic<uint32_t> base{0};  // `ready` when the key was published
  std::atomic<uint32_t> active{0};  // 1 while an exchange of the key runs (set with the key, cleared on return)
  std::atomic<uint64_t> peers[4] = {};  // the exchange's peers (bit q: process q; processes >= 256 are not listed)
  std::atomic<uint64_t> gave_up_launch{0}, gave_up_seq{0};  // the last key whose exchange failed here (launch + 1; 0: none)
  char desc[64] = {0};  // the key's collective ("AllReduce of float32[2,3]"), written under the seqlock
  alignas(64) std::atomic<uint32_t> ready{0};
  alignas(64) std::atomic<uint32_t> consumed{0};
};
struct alignas(64) SegHeader {
  uint32_t magic = 0, nproc = 0;
  uint64_t slice_bytes = 0, total_bytes = 0;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free, "process-shared atomics need lock-free atomics");

struct State {
  char* base = nullptr;
  size_t bytes = 0, slice = 0, mailbox_stride = 0;
  int nproc = 0, self = 0, slots = 1;  // slots: mailboxes per process (the most devices any process has)
  // the segment serves this host's processes: lidx[q] = q's index among them (-1: another host), hn of them
  std::vector<int> lidx, host_of;  // host_of[q]: index of q's host (first appearance in rank order), on every process
  int hn = 0, hosts = 0;
  bool enabled = false;  // this process has a segment (another process of the job runs on this host)
  bool grouped = false;  // the setup succeeded on every process: host_of is valid everywhere (equal decisions)
  std::string reason = "distributed.initialize was not called";
  // per own mailbox (process-private): consumptions owed by peers, and the lock serializing its exchanges
  std::vector<uint32_t> owed;
  std::vector<Clock::time_point> direct_end;  // per own mailbox: when its last DirectAllReduce returned
  std::unique_ptr<std::mutex[]> slot_mu;
  std::atomic<uint64_t> exchanges{0}, bytes_moved{0};
  std::atomic<uint64_t> mpi_exchanges{0}, mpi_bytes{0};  // the collectives' exchanges over MPI (CountMpi)
  std::atomic<uint64_t> rings{0}, hier{0};  // rings over MPI this process ran, two-level collectives it took part in (CountLevel)
  std::atomic<uint64_t> fused{0};           // AllReduceEpilogues fused into the direct exchange (CountFused)
  std::atomic<uint64_t> one_pass{0};        // ... of them evaluated by the one-pass `w - sum * s` kernel
  // where exchanges spend their time (mpiShmInfo().profile): ns copying into the mailbox, waiting, taking the peers'
  // bytes (copy or fold), and the waits that yielded / slept on the futex
  std::atomic<uint64_t> ns_put{0}, ns_wait{0}, ns_take{0}, ns_fold{0}, yields{0}, sleeps{0};
  std::atomic<uint64_t> streamed{0};  // direct all-reduces that copied with non-temporal stores (StreamAfter)
};
State& S() {
  static State* s = new State();  // never destroyed: device threads may outlive static destructors
  return *s;
}

// p, q: MPI ranks of processes on this host (their index in the segment: lidx)
Bell* BellOf(int p) { return reinterpret_cast<Bell*>(S().base + sizeof(SegHeader)) + S().lidx[size_t(p)]; }
Mailbox* BoxOf(int p, int j) {
  State& s = S();
  char* boxes = s.base + sizeof(SegHeader) + sizeof(Bell) * size_t(s.hn);
  return reinterpret_cast<Mailbox*>(boxes + s.mailbox_stride * (size_t(s.lidx[size_t(p)]) * size_t(s.slots) + size_t(j)));
}
char* SliceOf(Mailbox* m, int q) { return reinterpret_cast<char*>(m) + sizeof(Mailbox) + S().slice * size_t(S().lidx[size_t(q)]); }

long Futex(std::atomic<uint32_t>* w, int op, uint32_t val, const timespec* ts) {
  // the segment is shared between processes: no FUTEX_PRIVATE_FLAG
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), op, val, ts, nullptr, 0);
}
void Ring(int p) {
  Bell* b = BellOf(p);
  b->word.fetch_add(1, std::memory_order_seq_cst);
  if (b->sleepers.load(std::memory_order_seq_cst) > 0) Futex(&b->word, FUTEX_WAKE, INT_MAX, nullptr);
}
inline void Pause() {
#ifdef JAXTS_X86
  _mm_pause();
#endif
}

/**
 * The waits' phases (us since the wait began): spin (pause) until at least 4096 pauses and SpinUs() have passed, then
 * sched_yield until YieldUs(), then sleep on the futex. $JAXTS_MPI_SHM_SPIN_US (default 20) and $JAXTS_MPI_SHM_YIELD_US
 * (default 200; <= the spin: no yields) are A/B knobs: a yield hands the core to any other runnable task on it, which
 * (EEVDF, HZ=250, no preemption) may keep it for a whole 4 ms tick while the peer arrives and then waits for this one.
 */
int64_t EnvUs(const char* name, int64_t dflt) {
  const char* e = std::getenv(name);
  return e && *e ? std::max<int64_t>(0, std::atoll(e)) : dflt;
}
int64_t SpinUs() {
  static const int64_t v = EnvUs("JAXTS_MPI_SHM_SPIN_US", 20);
  return v;
}
int64_t YieldUs() {
  static const int64_t v = EnvUs("JAXTS_MPI_SHM_YIELD_US", 200);
  return v;
}

/**
 * Waits until done() or the deadline, watching process `p`'s bell: spins (SpinUs, ~75 us at the default), yields until
 * YieldUs, then sleeps on the futex in slices of at most 1 ms; `check` (the abort poll) runs every ~1 ms. Returns ""
 * when done, "timeout", or the check's answer.
 */
template <typename F>
std::string WaitOnImpl(int p, F done, Clock::time_point deadline, const std::function<std::string()>& check, Clock::time_point t0) {
  auto last_check = t0;
  Bell* b = BellOf(p);
  const auto spin = std::chrono::microseconds(SpinUs()), yield = std::chrono::microseconds(YieldUs());
  for (uint64_t i = 0;; i++) {
    const uint32_t seen = b->word.load(std::memory_order_acquire);
    if (done()) return "";
    const auto now = (i & 63) == 0 || i > 4096 ? Clock::now() : t0;
    if (now >= deadline) return done() ? "" : "timeout";
    if (check && now - last_check >= std::chrono::milliseconds(1)) {
      last_check = now;
      std::string why = check();
      if (!why.empty()) return why;
    }
    const auto idle = now - t0;
    if (i < 4096 || idle < spin) {
      Pause();
    } else if (idle < yield) {
      S().yields.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::yield();
    } else {
      S().sleeps.fetch_add(1, std::memory_order_relaxed);
      b->sleepers.fetch_add(1, std::memory_order_seq_cst);
      if (!done() && b->word.load(std::memory_order_seq_cst) == seen) {
        const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
        const long long ns = std::max<long long>(1000, std::min<long long>(left, 1000000));
        timespec ts{time_t(ns / 1000000000), long(ns % 1000000000)};
        Futex(&b->word, FUTEX_WAIT, seen, &ts);
      }
      b->sleepers.fetch_sub(1, std::memory_order_seq_cst);
    }
  }
}
template <typename F>
std::string WaitOn(int p, F done, Clock::time_point deadline, const std::function<std::string()>& check) {
  if (done()) return "";
  const auto t0 = Clock::now();
  std::string r = WaitOnImpl(p, done, deadline, check, t0);
  S().ns_wait.fetch_add(uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()), std::memory_order_relaxed);
  return r;
}
inline uint64_t NsSince(Clock::time_point t0) { return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()); }

/** Whether mailbox m currently holds key k; its base round when it does. */
bool Holds(Mailbox* m, const Key& k, uint32_t* base) {
  const uint32_t v1 = m->pub.load(std::memory_order_acquire);
  if (v1 & 1) return false;
  const bool same = m->launch.load(std::memory_order_relaxed) == k.launch && m->seq.load(std::memory_order_relaxed) == k.seq &&
                    m->group.load(std::memory_order_relaxed) == k.group && m->step.load(std::memory_order_relaxed) == k.step;
  const uint32_t b = m->base.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (!same || m->pub.load(std::memory_order_relaxed) != v1) return false;
  *base = b;
  return true;
}

/** The mailbox of process q holding key k (its `base` into *base), or nullptr when none of q's mailboxes does. */
Mailbox* BoxHolding(int q, const Key& k, uint32_t* base) {
  for (int j = 0; j < S().slots; j++)
    if (Holds(BoxOf(q, j), k, base)) return BoxOf(q, j);
  return nullptr;
}

/** A consistent copy of mailbox m's key while it is active and lists process `who` as a peer; false otherwise. */
bool ActiveFor(Mailbox* m, int who, Key* k) {
  const uint32_t v1 = m->pub.load(std::memory_order_acquire);
  if ((v1 & 1) || !m->active.load(std::memory_order_acquire)) return false;
  if (who < 0 || who >= 256 || !((m->peers[who / 64].load(std::memory_order_relaxed) >> (who % 64)) & 1)) return false;
  k->launch = m->launch.load(std::memory_order_relaxed);
  k->seq = m->seq.load(std::memory_order_relaxed);
  k->group = m->group.load(std::memory_order_relaxed);
  k->step = m->step.load(std::memory_order_relaxed);
  char d[sizeof m->desc];
  std::memcpy(d, m->desc, sizeof d);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (m->pub.load(std::memory_order_relaxed) != v1 || !m->active.load(std::memory_order_relaxed)) return false;
  d[sizeof d - 1] = 0;
  k->desc = d;
  return true;
}

/**
 * The host identity: hostname, boot id and /dev/shm's device and inode (containers with their own /dev/shm differ);
 * $JAXTS_HOST_ID replaces it (tests and advanced use: processes with the same value form one "host").
 */
uint64_t HostId() {
  std::string id;
  if (const char* forced = std::getenv("JAXTS_HOST_ID")) id = std::string("JAXTS_HOST_ID=") + forced;
  else {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  id += host;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string line;
  if (std::getline(boot, line)) id += "|" + line;
  struct stat st {};
  if (stat("/dev/shm", &st) == 0) id += "|" + std::to_string(uint64_t(st.st_dev)) + ":" + std::to_string(uint64_t(st.st_ino));
  }
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  return h;
}

/** Every process's `mine` (fixed size), over MPI: the setup's allgather. */
std::string Allgather(const void* mine, size_t n, std::vector<char>* all, int tag, Clock::time_point deadline, const std::string& what) {
  State& s = S();
  all->assign(n * size_t(s.nproc), 0);
  std::memcpy(all->data() + n * size_t(s.self), mine, n);
  std::vector<mpi::Transfer> xs;
  for (int q = 0; q < s.nproc; q++)
    if (q != s.self) xs.push_back({q, mine, n, all->data() + n * size_t(q), n});
  return mpi::Exchange(xs, tag, deadline, what);
}


/**
 * Ends a failed exchange on mailbox `mine`: forgives what peers still owe it (a dead or released peer never reads it),
 * marks the key given up (or, out of step, the mailbox stays marked 2 until its next key so the peer detects it too)
 * and names the late processes.
 */
std::string Fail(Mailbox* mine, uint32_t* owed, const Key& key, const std::string& what, const std::string& why, const std::vector<int>& late) {
  *owed = mine->consumed.load(std::memory_order_acquire);
  const bool step_err = why.rfind(kOutOfStep, 0) == 0;
  if (!step_err) {
    // peers still waiting at this key must not take this process's later keys for an out-of-step program
    mine->gave_up_seq.store(key.seq, std::memory_order_relaxed);
    mine->gave_up_launch.store(key.launch + 1, std::memory_order_release);
  }
  mine->active.store(step_err ? 2 : 0, std::memory_order_release);
  Ring(S().self);
  if (step_err) return why;
  if (why != "timeout") return what + ": " + why;
  std::string list;
  for (int q : late) list += std::string(list.empty() ? "" : ", ") + std::to_string(q);
  mpi::MarkPeerSilent();
  return what + ": no answer from process(es) [" + list + "] before the deadline";
}

/** Publishes key k in mailbox `mine` (seqlock), active, with its peers (MPI ranks), and rings this process's bell. */
void Publish(Mailbox* mine, const Key& key, const std::vector<int>& peers) {
  const uint32_t v = mine->pub.load(std::memory_order_relaxed);
  mine->pub.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  mine->launch.store(key.launch, std::memory_order_relaxed);
  mine->seq.store(key.seq, std::memory_order_relaxed);
  mine->group.store(key.group, std::memory_order_relaxed);
  mine->step.store(key.step, std::memory_order_relaxed);
  mine->base.store(mine->ready.load(std::memory_order_relaxed), std::memory_order_relaxed);
  uint64_t bits[4] = {0, 0, 0, 0};
  for (int q : peers)
    if (q >= 0 && q < 256) bits[q / 64] |= uint64_t(1) << (q % 64);
  for (int b = 0; b < 4; b++) mine->peers[b].store(bits[b], std::memory_order_relaxed);
  std::strncpy(mine->desc, key.desc.c_str(), sizeof mine->desc - 1);
  mine->desc[sizeof mine->desc - 1] = 0;
  mine->active.store(1, std::memory_order_relaxed);
  mine->pub.store(v + 2, std::memory_order_release);
  Ring(S().self);
}

}  // namespace

bool Enabled() { return S().enabled; }
bool SameHost(int q) {
  const State& s = S();
  return s.enabled && q >= 0 && size_t(q) < s.lidx.size() && s.lidx[size_t(q)] >= 0;
}
int HostOf(int q) {
  const State& s = S();
  // without a successful setup every process is its own host (the flat ring over MPI)
  return s.grouped && q >= 0 && size_t(q) < s.host_of.size() ? s.host_of[size_t(q)] : -1 - q;
}
void CountLevel(bool ring, bool hier) {
  if (ring) S().rings.fetch_add(1, std::memory_order_relaxed);
  if (hier) S().hier.fetch_add(1, std::memory_order_relaxed);
}
void CountFused(bool one_pass) {
  S().fused.fetch_add(1, std::memory_order_relaxed);
  if (one_pass) S().one_pass.fetch_add(1, std::memory_order_relaxed);
}
bool AllSameHost() { return S().enabled && S().hn == S().nproc; }
size_t SliceBytes() { return S().enabled ? S().slice : 0; }
void CountMpi(size_t bytes) {
  S().mpi_exchanges.fetch_add(1, std::memory_order_relaxed);
  S().mpi_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

std::string Setup(int64_t timeout_ms, int slots) {
  State& s = S();
  if (s.enabled) return "";
  s.slots = std::max(1, std::min(slots, 256));
  s.owed.assign(size_t(s.slots), 0);
  s.direct_end.assign(size_t(s.slots), Clock::time_point());
  s.slot_mu.reset(new std::mutex[size_t(s.slots)]);
  s.nproc = mpi::Size();
  s.self = mpi::Rank();
  if (!mpi::Ready()) return s.reason = "MPI is not initialized";
  if (s.nproc < 2) return s.reason = "a single process";
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms < 1 ? 1 : timeout_ms);
  const char* env = std::getenv("JAXTS_MPI_SHM");
  struct Hello {
    uint64_t host;
    uint32_t want, pad;
  } hello{HostId(), env && std::strcmp(env, "0") == 0 ? 0u : 1u, 0};
  std::vector<char> all;
  std::string err = Allgather(&hello, sizeof hello, &all, 30001, deadline, "distributed.initialize (host identities)");
  if (!err.empty()) return s.reason = err;
  // this host's processes (in rank order; the first creates the segment), and the number of hosts
  std::vector<int> hm, host_of;
  std::vector<uint64_t> ids;
  s.lidx.assign(size_t(s.nproc), -1);
  for (int q = 0; q < s.nproc; q++) {
    Hello h;
    std::memcpy(&h, all.data() + sizeof(Hello) * size_t(q), sizeof h);
    if (!h.want) {
      s.lidx.clear();
      return s.reason = "JAXTS_MPI_SHM=0 on process " + std::to_string(q);
    }
    if (std::find(ids.begin(), ids.end(), h.host) == ids.end()) ids.push_back(h.host);
    host_of.push_back(int(std::find(ids.begin(), ids.end(), h.host) - ids.begin()));
    if (h.host == hello.host) {
      s.lidx[size_t(q)] = int(hm.size());
      hm.push_back(q);
    }
  }
  s.hn = int(hm.size());
  s.hosts = int(ids.size());
  s.host_of = host_of;
  const bool creator = s.hn >= 2 && hm[0] == s.self;
  // the segment: `slots` mailboxes per process, each a header and one slice per process
  const char* mb = std::getenv("JAXTS_MPI_SHM_BYTES");  // per mailbox (tests: tiny, many rounds)
  const long long want_bytes = mb ? std::atoll(mb) : 0;
  // default 4 MiB (a direct all-reduce takes buffers up to that; 16 MiB mailboxes for 2 processes made the 16 MiB
  // psum slower in interleaved bench runs, 8.3-8.6 vs 5.0-5.4 ms: the ring's 2 MiB slices stay in cache)
  const size_t mailbox_data = want_bytes > 0 ? size_t(want_bytes) : size_t(4) << 20;
  s.slice = std::max<size_t>(64, mailbox_data / size_t(std::max(1, s.hn)) / 64 * 64);
  s.mailbox_stride = sizeof(Mailbox) + s.slice * size_t(s.hn);
  s.bytes = sizeof(SegHeader) + sizeof(Bell) * size_t(s.hn) + s.mailbox_stride * size_t(s.hn) * size_t(s.slots);
  struct Name {
    char name[56];
    uint32_t ok, pad;
  } name{};
  std::string local_err;
  if (creator) {
    std::random_device rd;
    std::snprintf(name.name, sizeof name.name, "/jaxts-%d-%08x%08x", int(getpid()), unsigned(rd()), unsigned(rd()));
    const int fd = shm_open(name.name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      local_err = std::string("shm_open(") + name.name + ") failed: " + std::strerror(errno);
    } else {
      if (ftruncate(fd, off_t(s.bytes)) != 0) local_err = std::string("ftruncate failed: ") + std::strerror(errno);
      void* p = local_err.empty() ? mmap(nullptr, s.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
      close(fd);
      if (p == MAP_FAILED) {
        if (local_err.empty()) local_err = std::string("mmap failed: ") + std::strerror(errno);
        shm_unlink(name.name);
      } else {
        s.base = static_cast<char*>(p);
        SegHeader* h = new (s.base) SegHeader();
        h->nproc = uint32_t(s.hn);
        h->slice_bytes = s.slice;
        h->total_bytes = s.bytes;
        for (int q : hm) {
          new (BellOf(q)) Bell();
          for (int j = 0; j < s.slots; j++) new (BoxOf(q, j)) Mailbox();
        }
        std::atomic_thread_fence(std::memory_order_release);
        h->magic = kMagic;
      }
    }
    name.ok = local_err.empty();
  } else {
    name.ok = 1;  // nothing to create here (every host's first process creates its host's segment)
  }
  err = Allgather(&name, sizeof name, &all, 30002, deadline, "distributed.initialize (shared-memory segment)");
  if (!err.empty()) return s.reason = err;
  // this host's segment: the one its first process created (none for a process alone on its host)
  Name root{};
  if (s.hn >= 2) std::memcpy(&root, all.data() + sizeof(Name) * size_t(hm[0]), sizeof root);
  else root.ok = 1;
  root.name[sizeof root.name - 1] = 0;
  if (s.hn >= 2 && !creator && root.ok) {
    const int fd = shm_open(root.name, O_RDWR, 0600);
    if (fd < 0) {
      local_err = std::string("shm_open(") + root.name + ") failed: " + std::strerror(errno);
    } else {
      void* p = mmap(nullptr, s.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd);
      if (p == MAP_FAILED) local_err = std::string("mmap failed: ") + std::strerror(errno);
      else s.base = static_cast<char*>(p);
      const SegHeader* h = reinterpret_cast<const SegHeader*>(s.base);
      if (s.base && (h->magic != kMagic || h->total_bytes != s.bytes)) local_err = "the segment's layout differs (JAXTS_MPI_SHM_BYTES differs between processes?)";
    }
  }
  // everyone says whether it mapped the segment; then process 0 unlinks the name (the mappings stay)
  struct Mapped {
    uint32_t ok;
    char why[124];
  } mapped{};
  mapped.ok = root.ok && local_err.empty();
  std::strncpy(mapped.why, local_err.c_str(), sizeof mapped.why - 1);
  err = Allgather(&mapped, sizeof mapped, &all, 30003, deadline, "distributed.initialize (shared-memory segment mapped)");
  if (creator && root.ok) shm_unlink(root.name);
  std::string why = err;
  for (int q = 0; q < s.nproc && why.empty(); q++) {
    Mapped m;
    std::memcpy(&m, all.data() + sizeof(Mapped) * size_t(q), sizeof m);
    m.why[sizeof m.why - 1] = 0;
    if (!m.ok) why = "process " + std::to_string(q) + ": " + (m.why[0] ? m.why : "the segment was not created");
  }
  if (!why.empty()) {
    if (s.base) munmap(s.base, s.bytes);
    s.base = nullptr;
    return s.reason = why;
  }
  s.grouped = true;
  if (s.hn < 2) {
    s.reason = "no other process runs on this host (" + std::to_string(s.hosts) + " hosts): MPI to every process";
    return s.reason;
  }
  s.enabled = true;
  s.reason = "";
  return "";
}

std::string Exchange(const std::vector<mpi::Transfer>& peers, const Key& key, int slot, Clock::time_point deadline, const std::string& what,
                     const std::function<std::string()>& check, const std::function<void(size_t, size_t, const char*, size_t)>& on_recv) {
  State& s = S();
  if (!s.enabled) return what + ": the shared-memory transport is not set up";
  const int j = ((slot % s.slots) + s.slots) % s.slots;
  std::lock_guard<std::mutex> slot_lock(s.slot_mu[j]);
  Mailbox* mine = BoxOf(s.self, j);
  const size_t n = peers.size(), slice = s.slice;
  s.exchanges.fetch_add(1, std::memory_order_relaxed);
  // rounds per pair, and this process's rounds
  std::vector<size_t> rounds(n);
  size_t total = 1;
  for (size_t i = 0; i < n; i++) {
    const size_t sb = peers[i].no_send ? 0 : peers[i].send_bytes;
    rounds[i] = std::max<size_t>(1, (std::max(sb, peers[i].recv_bytes) + slice - 1) / slice);
    total = std::max(total, rounds[i]);
  }
  std::vector<Mailbox*> theirs(n, nullptr);
  std::vector<uint32_t> base(n, 0);
  uint32_t& owed = s.owed[j];
  const auto fail = [&](const std::string& why, const std::vector<size_t>& late) {
    std::vector<int> who;
    for (size_t i : late) who.push_back(peers[i].peer);
    return Fail(mine, &owed, key, what, why, who);
  };
  const auto consumed_all = [&] { return int32_t(mine->consumed.load(std::memory_order_acquire) - owed) >= 0; };
  const auto all_peers = [&] {
    std::vector<size_t> v;
    for (size_t i = 0; i < n; i++) v.push_back(i);
    return v;
  };
  // 0. the previous exchange's last round must have been read before the key changes
  std::string w = WaitOn(s.self, consumed_all, deadline, check);
  if (!w.empty()) return fail(w, all_peers());
  {
    std::vector<int> ranks;
    for (const auto& x : peers) ranks.push_back(x.peer);
    Publish(mine, key, ranks);
  }
  const uint32_t my_base = mine->base.load(std::memory_order_relaxed);
  for (size_t r = 0; r < total; r++) {
    // 1. this round's slices (after the peers read the previous round)
    if (r > 0) {
      w = WaitOn(s.self, consumed_all, deadline, check);
      if (!w.empty()) {
        std::vector<size_t> late;
        for (size_t i = 0; i < n; i++)
          if (r - 1 < rounds[i]) late.push_back(i);
        return fail(w, late);
      }
    }
    uint32_t readers = 0;
    const auto t_put = Clock::now();
    for (size_t i = 0; i < n; i++) {
      if (r >= rounds[i]) continue;
      readers++;
      const size_t sb = peers[i].no_send ? 0 : peers[i].send_bytes, lo = std::min(sb, r * slice), len = std::min(sb, lo + slice) - lo;
      if (len) std::memcpy(SliceOf(mine, peers[i].peer), static_cast<const char*>(peers[i].send) + lo, len);
    }
    s.ns_put.fetch_add(NsSince(t_put), std::memory_order_relaxed);
    owed += readers;
    mine->ready.store(my_base + uint32_t(r + 1), std::memory_order_release);
    Ring(s.self);
    // 2. the peers' slices for this process
    for (size_t i = 0; i < n; i++) {
      if (r >= rounds[i]) continue;
      const int q = peers[i].peer;
      if (!theirs[i]) {
        // at a header (step 0): a peer waiting for this process at another collective of the same group, for
        // kOutOfStepMs without change, is out of step (a peer merely behind or ahead moves on meanwhile)
        Key other;
        bool seen_other = false;
        Clock::time_point other_since;
        std::string step_err;
        const auto out_of_step = [&] {
          if (key.step != 0) return false;
          for (int k = 0; k < s.slots; k++) {
            Key o;
            Mailbox* qm = BoxOf(q, k);
            if (!ActiveFor(qm, s.self, &o) || o.step != 0 || o.group != key.group || (o.launch == key.launch && o.seq == key.seq))
              continue;
            // a peer ahead of this process counts (unless it gave up at this key or later: it moved on after a
            // failure); a peer behind only once it declared itself out of step (it then waits for nothing)
            const bool ahead = o.launch > key.launch || (o.launch == key.launch && o.seq > key.seq);
            const uint64_t gl = qm->gave_up_launch.load(std::memory_order_acquire), gs = qm->gave_up_seq.load(std::memory_order_relaxed);
            const bool gave_up = gl != 0 && (gl - 1 > key.launch || (gl - 1 == key.launch && gs >= key.seq));
            const bool declared = qm->active.load(std::memory_order_acquire) == 2;
            if (!(ahead ? !gave_up : declared)) continue;
            if (declared) {
              other = o;
              other_since = Clock::now() - std::chrono::milliseconds(kOutOfStepMs);
              seen_other = true;
            }
            const auto now = Clock::now();
            if (!seen_other || o.launch != other.launch || o.seq != other.seq) {
              seen_other = true;
              other = o;
              other_since = now;
              return false;
            }
            if (now - other_since < std::chrono::milliseconds(kOutOfStepMs)) return false;
            step_err = std::string(kOutOfStep) + "process " + std::to_string(q) + " is at collective #" + std::to_string(o.seq) + " of launch #" +
                       std::to_string(o.launch) + (o.desc.empty() ? "" : " (" + o.desc + ")") + ", this process at collective #" +
                       std::to_string(key.seq) + " of launch #" + std::to_string(key.launch) + (key.desc.empty() ? "" : " (" + key.desc + ")");
            return true;
          }
          seen_other = false;
          return false;
        };
        w = WaitOn(q, [&] { return (theirs[i] = BoxHolding(q, key, &base[i])) != nullptr || out_of_step(); }, deadline, check);
        if (w.empty() && !step_err.empty()) w = step_err;
        if (!w.empty()) return fail(w, {i});
      }
      Mailbox* m = theirs[i];
      const uint32_t want = base[i] + uint32_t(r + 1);
      w = WaitOn(q, [&] { return int32_t(m->ready.load(std::memory_order_acquire) - want) >= 0; }, deadline, check);
      if (!w.empty()) return fail(w, {i});
      const size_t rb = peers[i].recv_bytes, lo = std::min(rb, r * slice), len = std::min(rb, lo + slice) - lo;
      if (len) {
        const auto t_take = Clock::now();
        if (on_recv) on_recv(i, lo, SliceOf(m, s.self), len);
        else std::memcpy(static_cast<char*>(peers[i].recv) + lo, SliceOf(m, s.self), len);
        s.ns_take.fetch_add(NsSince(t_take), std::memory_order_relaxed);
        s.bytes_moved.fetch_add(len, std::memory_order_relaxed);
      }
      m->consumed.fetch_add(1, std::memory_order_acq_rel);
      Ring(q);
    }
  }
  mine->active.store(0, std::memory_order_release);
  return "";
}

namespace {
/**
 * Whether a direct all-reduce on a mailbox whose previous one returned `idle` ago copies into it with non-temporal
 * stores: when the mailbox's lines have likely left this core's cache meanwhile (a training step's compute runs
 * between its all-reduces), reading them first (RFO) and keeping them here only costs, and the peer reads them next
 * anyway; back-to-back all-reduces (a loop of psums) find them cached and keep memcpy, which is then twice as fast.
 * $JAXTS_MPI_SHM_NT_US (default 1000): the idle time from which on it streams; $JAXTS_MPI_SHM_NT=0: never.
 */
bool StreamAfter(Clock::duration idle) {
  static const int64_t us = [] {
    const char* e = std::getenv("JAXTS_MPI_SHM_NT");
    if (e && std::strcmp(e, "0") == 0) return int64_t(-1);
    return EnvUs("JAXTS_MPI_SHM_NT_US", 1000);
  }();
  return us >= 0 && idle >= std::chrono::microseconds(us);
}
/**
 * Whether the take phase (the peers' reduced shares into the output) streams too when the exchange does: the output
 * is read next by the following step, not soon by this core; $JAXTS_MPI_SHM_NT_TAKE=0: memcpy (A/B).
 */
bool TakeStreamOn() {
  static const bool v = [] {
    const char* e = std::getenv("JAXTS_MPI_SHM_NT_TAKE");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return v;
}

}  // namespace

size_t MailboxBytes() { return S().enabled ? S().slice * size_t(S().hn) : 0; }

std::string DirectAllReduce(const std::vector<int>& procs, size_t self, const Key& key, int slot, Clock::time_point deadline, const std::string& what,
                            const char* partial, char* out, const std::vector<std::pair<size_t, size_t>>& seg, const FoldFn& fold,
                            bool fold_fills_mailbox) {
  State& s = S();
  if (!s.enabled) return what + ": the shared-memory transport is not set up";
  const size_t P = procs.size();
  size_t end = 0;
  for (const auto& r : seg) end = std::max(end, r.first + r.second);
  if (seg.size() != P || self >= P || end > MailboxBytes()) return what + ": internal error: a direct all-reduce that does not fit the mailbox";
  const int j = ((slot % s.slots) + s.slots) % s.slots;
  std::lock_guard<std::mutex> slot_lock(s.slot_mu[j]);
  Mailbox* mine = BoxOf(s.self, j);
  char* my_data = reinterpret_cast<char*>(mine) + sizeof(Mailbox);
  s.exchanges.fetch_add(1, std::memory_order_relaxed);
  uint32_t& owed = s.owed[j];
  std::vector<int> peers;
  for (size_t i = 0; i < P; i++)
    if (i != self) peers.push_back(procs[i]);
  const auto consumed_all = [&] { return int32_t(mine->consumed.load(std::memory_order_acquire) - owed) >= 0; };
  // 0. every peer read this mailbox's previous exchange
  std::string w = WaitOn(s.self, consumed_all, deadline, nullptr);
  if (!w.empty()) return Fail(mine, &owed, key, what, w, peers);
  Publish(mine, key, peers);
  const uint32_t my_base = mine->base.load(std::memory_order_relaxed);
  // 1. every peer's share of this process's partial, at its offset in the mailbox (this process's own share stays put)
  auto t0 = Clock::now();
  const bool nt = StreamAfter(t0 - s.direct_end[j]);
  if (nt) s.streamed.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < P; i++)
    if (i != self && seg[i].second) CopyStreamed(my_data + seg[i].first, partial + seg[i].first, seg[i].second, nt);
  s.ns_put.fetch_add(NsSince(t0), std::memory_order_relaxed);
  owed += uint32_t(peers.size());  // each peer consumes once, after its last read (phase 3)
  mine->ready.store(my_base + 1, std::memory_order_release);
  Ring(s.self);
  // 2. the peers' mailboxes of this key, their partials published; fold this process's share reading them in place
  std::vector<Mailbox*> theirs(P, nullptr);
  std::vector<uint32_t> base(P, 0);
  for (size_t i = 0; i < P; i++) {
    if (i == self) continue;
    const int q = procs[i];
    w = WaitOn(q, [&] { return (theirs[i] = BoxHolding(q, key, &base[i])) != nullptr; }, deadline, nullptr);
    if (w.empty()) w = WaitOn(q, [&] { return int32_t(theirs[i]->ready.load(std::memory_order_acquire) - (base[i] + 1)) >= 0; }, deadline, nullptr);
    if (!w.empty()) return Fail(mine, &owed, key, what, w, {q});
  }
  const size_t lo = seg[self].first, len = seg[self].second;
  t0 = Clock::now();
  if (len) {
    // own partial first, then the peers in group order (the ring's fold order: the same bits as before)
    std::vector<const char*> ins{partial + lo};
    for (size_t i = 0; i < P; i++)
      if (i != self) ins.push_back(reinterpret_cast<const char*>(theirs[i]) + sizeof(Mailbox) + lo);
    char* dsts[2] = {out + lo, my_data + lo};
    // a share of a few MiB: one pass with non-temporal stores into both (nobody reads them from this core's cache
    // soon); smaller: fold into `out` alone and copy it to the mailbox (a fold storing into the mailbox while it loads
    // from the peer's, at the same offsets within a page, runs at half speed: 4K aliasing)
    const bool big = len >= kStreamShare, both = big || fold_fills_mailbox;
    if (!fold(ins.data(), ins.size(), dsts, both ? 2 : 1, len, big || (nt && fold_fills_mailbox)))
      return Fail(mine, &owed, key, what, "unsupported reduction", peers);
    if (!both) CopyStreamed(my_data + lo, out + lo, len, nt);
  }
  s.ns_fold.fetch_add(NsSince(t0), std::memory_order_relaxed);
  mine->ready.store(my_base + 2, std::memory_order_release);
  Ring(s.self);
  // 3. the peers' reduced shares into the output
  for (size_t i = 0; i < P; i++) {
    if (i == self) continue;
    const int q = procs[i];
    w = WaitOn(q, [&] { return int32_t(theirs[i]->ready.load(std::memory_order_acquire) - (base[i] + 2)) >= 0; }, deadline, nullptr);
    if (!w.empty()) return Fail(mine, &owed, key, what, w, {q});
    t0 = Clock::now();
    if (seg[i].second)
      CopyStreamed(out + seg[i].first, reinterpret_cast<const char*>(theirs[i]) + sizeof(Mailbox) + seg[i].first, seg[i].second, nt && TakeStreamOn());
    s.ns_take.fetch_add(NsSince(t0), std::memory_order_relaxed);
    s.bytes_moved.fetch_add(seg[i].second + len, std::memory_order_relaxed);
    theirs[i]->consumed.fetch_add(1, std::memory_order_acq_rel);
    Ring(q);
  }
  mine->active.store(0, std::memory_order_release);
  s.direct_end[j] = Clock::now();
  return "";
}

namespace {
// mpiShmSetup(timeoutMs, maxLocalDevices) -> "" when enabled, else why not (every process must call it)
napi_value SetupFn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int64_t timeout = 30000;
  int32_t slots = 1;
  if (argc >= 1) napi_get_value_int64(env, argv[0], &timeout);
  if (argc >= 2) napi_get_value_int32(env, argv[1], &slots);
  const std::string why = Setup(timeout, slots);
  napi_value out;
  napi_create_string_utf8(env, why.c_str(), why.size(), &out);
  return out;
}
// mpiShmInfo() -> { enabled, reason, exchanges, bytes }: which transport cross-process collectives use, and its counters
napi_value InfoFn(napi_env env, napi_callback_info) {
  State& s = S();
  napi_value obj, v;
  napi_create_object(env, &obj);
  napi_get_boolean(env, s.enabled, &v);
  napi_set_named_property(env, obj, "enabled", v);
  napi_create_string_utf8(env, s.reason.c_str(), s.reason.size(), &v);
  napi_set_named_property(env, obj, "reason", v);
  napi_create_double(env, double(s.exchanges.load()), &v);
  napi_set_named_property(env, obj, "exchanges", v);
  napi_create_double(env, double(s.bytes_moved.load()), &v);
  napi_set_named_property(env, obj, "bytes", v);
  napi_create_double(env, double(s.mpi_exchanges.load()), &v);
  napi_set_named_property(env, obj, "mpiExchanges", v);
  napi_create_double(env, double(s.mpi_bytes.load()), &v);
  napi_set_named_property(env, obj, "mpiBytes", v);
  napi_create_double(env, double(s.rings.load()), &v);
  napi_set_named_property(env, obj, "mpiRings", v);
  napi_create_double(env, double(s.hier.load()), &v);
  napi_set_named_property(env, obj, "twoLevel", v);
  napi_create_double(env, double(s.fused.load()), &v);
  napi_set_named_property(env, obj, "fusedEpilogues", v);
  napi_create_double(env, double(s.one_pass.load()), &v);
  napi_set_named_property(env, obj, "onePassEpilogues", v);
  napi_create_int32(env, s.hosts, &v);
  napi_set_named_property(env, obj, "hosts", v);
  napi_value prof;
  napi_create_object(env, &prof);
  const std::pair<const char*, double> fields[] = {{"putUs", double(s.ns_put.load()) / 1e3}, {"waitUs", double(s.ns_wait.load()) / 1e3},
                                                   {"takeUs", double(s.ns_take.load()) / 1e3}, {"foldUs", double(s.ns_fold.load()) / 1e3}, {"yields", double(s.yields.load())},
                                                   {"sleeps", double(s.sleeps.load())}, {"streamed", double(s.streamed.load())}};
  for (const auto& f : fields) {
    napi_create_double(env, f.second, &v);
    napi_set_named_property(env, prof, f.first, v);
  }
  napi_set_named_property(env, obj, "profile", prof);
  napi_create_int32(env, s.enabled ? s.hn : 1, &v);
  napi_set_named_property(env, obj, "hostProcesses", v);
  return obj;
}
}  // namespace

}  // namespace mpishm

void RegisterMpiShm(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"mpiShmSetup", nullptr, mpishm::SetupFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"mpiShmInfo", nullptr, mpishm::InfoFn, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}

}  // namespace jaxts
