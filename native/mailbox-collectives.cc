/** @file One-sided asynchronous collectives over shared memory: CollectiveStart posts its input to a mailbox and returns, CollectiveDone pulls its own result once every member posted. */
// Why: on a host with fewer cores than device threads, a two-sided rendezvous (every member present at once, each
// moving its share) makes a device that is ahead wait for a descheduled peer, and a communication thread per device
// takes a core from compute. Here nobody waits at a Start, and a Done waits only for the peers' posts, which they
// made at their own Starts, usually long before:
//   post (device thread, program order): copy the input into this member's slot of the mailbox keyed by (launch,
//        seq, first rank of the group), mark it posted, return.
//   pull (device thread, at the Done): wait until all n slots are posted (spin briefly, then block; a deadline of
//        the collective timeout; an aborted launch releases it), then compute only this member's result from the
//        staged inputs (all-gather: copy every slot; reduce-scatter: reduce its chunk of every slot; all-reduce:
//        reduce every slot whole; all-to-all / permute: copy the blocks addressed to it). Reductions are the
//        shared-memory communicator's left fold in group order (ReduceBuffers), so results are bit-identical to
//        the synchronous ops. The last member to pull removes the mailbox; the staged inputs belong to the mailbox,
//        so a poster never waits for its readers (no second barrier).
// A mailbox that fails (a timeout, an aborted launch) before every member posted stays failed; its launch's end
// (MailboxForget, from ShmWorld::Forget) removes it.

#include "mailbox-collectives.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "bounded-poll.h"
#include "device-context.h"
#include "meeting-registry.h"

namespace jaxts {

struct Mailbox {
  struct Slot {
    std::vector<char> data;  // the member's input, copied at its post
    size_t count = 0;
    int type = 0, kind = 0, op = 0;
    bool posted = false;
  };
  std::vector<int> group;
  std::vector<Slot> slots;
  std::atomic<int> posted{0}, pulled{0};
  std::atomic<bool> failed{false};
  std::string error;  // set (under mu) before failed becomes true
  double last_post_us = 0;
  std::mutex mu;
  std::condition_variable cv;
};

namespace {

using Registry = MeetingRegistry<Mailbox>;
Registry& TheRegistry() {
  static Registry* r = new Registry();  // never destroyed: device threads may outlive static destructors
  return *r;
}

std::string Where(const CollectiveCall& c, int rank) {
  return c.name + " over " + c.axes + " (group of ranks " + RankList(c.group) + ") on rank " + std::to_string(rank);
}

// Fails the mailbox unless every member already posted (then its pulls complete normally): decided under mu.
void Fail(Mailbox& b, const std::string& why) { FailMeeting(b, &Mailbox::posted, b.slots.size(), why); }

// Why a Done polls only briefly, one at a time, and not at all when descheduled: a waiting Done that yields in a
// loop stays runnable and takes time slices from the very peers it waits for whenever device threads outnumber cores
// (notes/training-parallel.md "ovlstep": less thread CPU per ZeRO-3 step than the yielding wait). A blocked puller
// is woken by the last post's notify (a futex call) instead. The executors' policy (native/bounded-poll.h, with a gate
// of its own): at most cores - 1 pollers, and a poller that finds itself descheduled backs every poller off.
PollGate g_done_polls;  // the Dones polling their mailboxes (native/bounded-poll.h)

// Polls settled() for up to `us` microseconds when a polling slot is free and no poller was recently descheduled.
template <typename F>
void PollBriefly(const F& settled, int us) {
  static const int max_pollers = std::max(1, int(std::thread::hardware_concurrency()) - 1);
  if (us <= 0 || settled()) return;
  PollBounded(g_done_polls, us, max_pollers, 63, settled);
}

}  // namespace

bool MailboxModeEnabled() {
  const char* mode = std::getenv("JAXTS_ASYNC_COLLECTIVES");
  return !(mode && std::strcmp(mode, "thread") == 0);
}

MailboxSpin MailboxSpinPolicy() {
  // read per call (cheap next to a pull) so a benchmark can A/B it within one process
  const char* v = std::getenv("JAXTS_MAILBOX_SPIN");
  if (!v || !*v) return {false, kMailboxSpinUs};
  const bool yields = v[0] == 'y';
  const long n = std::strtol(v + (yields ? 1 : 0), nullptr, 10);
  return {yields, n < 0 ? 0 : n > 1000000 ? 1000000 : int(n)};
}

std::string MailboxPost(const CollectiveCall& c, int rank, int kind, int op, const void* in, size_t count, int type,
                        std::shared_ptr<Mailbox>* box, int* pos) {
  const int n = int(c.group.size());
  const auto pos_it = std::find(c.group.begin(), c.group.end(), rank);
  if (pos_it == c.group.end()) return Where(c, rank) + ": this rank is not in the group";
  const int p = int(pos_it - c.group.begin());
  const size_t w = ElementBytes(type);
  if (!w) return Where(c, rank) + ": element type " + std::to_string(type) + " is not supported";
  // the copy happens outside every lock: peers posting or pulling other mailboxes never wait for it
  std::vector<char> staged(static_cast<const char*>(in), static_cast<const char*>(in) + count * w);
  Registry& reg = TheRegistry();
  std::shared_ptr<Mailbox> b;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    const std::string* why = nullptr;
    b = reg.OpenLocked(c, &why, [n](Mailbox& m) { m.slots.resize(size_t(n)); });
    if (!b) return Where(c, rank) + ": released because the launch failed: " + *why;
  }
  std::string err;
  {
    std::lock_guard<std::mutex> lock(b->mu);
    Mailbox::Slot& s = b->slots[size_t(p)];
    if (b->failed.load()) {
      err = Where(c, rank) + ": " + b->error;
    } else if (b->group != c.group) {
      err = Where(c, rank) + ": peers disagree on the group (" + RankList(b->group) + " vs " + RankList(c.group) + ")";
    } else if (s.posted) {
      err = Where(c, rank) + ": rank posted twice";
    } else {
      s.data = std::move(staged);
      s.count = count;
      s.type = type;
      s.kind = kind;
      s.op = op;
      s.posted = true;
      // posted changes only under mu; the time is written before the count a spinning puller reads (acquire)
      if (b->posted.load() + 1 == n) b->last_post_us = SteadyNowUs();
      if (b->posted.fetch_add(1, std::memory_order_acq_rel) + 1 == n) b->cv.notify_all();  // pulls wait for the last post only
    }
  }
  if (!err.empty()) {
    Fail(*b, err);
    return err;
  }
  *box = std::move(b);
  *pos = p;
  return "";
}

std::string MailboxPull(const CollectiveCall& c, const std::shared_ptr<Mailbox>& box, int pos, void* out, size_t ycount,
                        const std::vector<std::pair<int, int>>& pairs, double* ready_us) {
  Mailbox& b = *box;
  const int n = int(b.slots.size());
  const int rank = c.group[size_t(pos)];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(c.timeout_ms);
  auto settled = [&] { return b.posted.load(std::memory_order_acquire) >= n || b.failed.load(); };
  // the peers usually posted long ago; if not, poll briefly when a core is free, then block
  const MailboxSpin spin = MailboxSpinPolicy();
  if (spin.yields) {
    for (int i = 0; i < spin.amount && !settled(); i++)  // the previous policy (an A/B switch): polls, then yields
      if (i > 64) std::this_thread::yield();
  } else {
    PollBriefly(settled, spin.amount);
  }
  if (!settled()) {
    std::unique_lock<std::mutex> lock(b.mu);
    b.cv.wait_until(lock, deadline, settled);
  }
  if (b.posted.load(std::memory_order_acquire) < n) {
    std::vector<int> came, missing;
    {
      std::lock_guard<std::mutex> lock(b.mu);
      for (int q = 0; q < n; q++) (b.slots[size_t(q)].posted ? came : missing).push_back(c.group[size_t(q)]);
    }
    const std::string msg = c.name + " over " + c.axes + " (group of ranks " + RankList(c.group) + ") timed out after " +
                            std::to_string(c.timeout_ms) + " ms waiting for its peers to post: ranks that posted " + RankList(came) +
                            ", missing " + RankList(missing);
    Fail(b, msg);  // no-op if the last member posted meanwhile: then the pull goes ahead after all
    if (b.posted.load(std::memory_order_acquire) < n) {
      std::string err;
      {
        std::lock_guard<std::mutex> lock(b.mu);
        err = b.error;
      }
      if (err == msg) ShmWorld::Abort(c.launch, msg);  // this member's timeout is the cause: release the launch's other waits
      return err == msg ? msg : Where(c, rank) + ": " + err;
    }
  }
  if (ready_us) *ready_us = b.last_post_us;
  // every member checks the same thing, so all fail together when the peers disagree
  const Mailbox::Slot& me = b.slots[size_t(pos)];
  std::string err;
  for (int q = 0; q < n && err.empty(); q++) {
    const Mailbox::Slot& s = b.slots[size_t(q)];
    if (s.kind != me.kind || s.op != me.op || s.type != me.type || s.count != me.count)
      err = Where(c, rank) + ": peers disagree: rank " + std::to_string(c.group[size_t(q)]) + " called " + CollectiveKindName(s.kind) + " of " +
            std::to_string(s.count) + " elements of type " + std::to_string(s.type) + ", this rank " + CollectiveKindName(me.kind) + " of " +
            std::to_string(me.count) + " elements of type " + std::to_string(me.type);
  }
  const size_t w = ElementBytes(me.type), count = me.count;
  const size_t want = me.kind == kMbAllGather ? count * size_t(n) : me.kind == kMbReduceScatter ? count / size_t(n) : count;
  if (err.empty() && ycount != want)
    err = Where(c, rank) + ": output of " + std::to_string(ycount) + " elements, expected " + std::to_string(want);
  if (err.empty()) {
    char* dst = static_cast<char*>(out);
    std::vector<const void*> ins(static_cast<size_t>(n));
    switch (me.kind) {
      case kMbAllReduce:
      case kMbReduceScatter: {
        // all-reduce: the whole buffer; reduce-scatter: chunk pos of every input (the same left fold as the sync op)
        const size_t off = me.kind == kMbAllReduce ? 0 : size_t(pos) * ycount * w;
        for (int q = 0; q < n; q++) ins[size_t(q)] = b.slots[size_t(q)].data.data() + off;
        if (!ReduceBuffers(ins.data(), size_t(n), dst, ycount, me.type, ReduceOp(me.op)))
          err = Where(c, rank) + ": unsupported reduction for element type " + std::to_string(me.type);
        break;
      }
      case kMbAllGather:
        for (int q = 0; q < n; q++) std::memcpy(dst + size_t(q) * count * w, b.slots[size_t(q)].data.data(), count * w);
        break;
      case kMbAllToAll: {
        // out chunk q = chunk pos of member q's input
        const size_t chunk = count / size_t(n) * w;
        for (int q = 0; q < n; q++) std::memcpy(dst + size_t(q) * chunk, b.slots[size_t(q)].data.data() + size_t(pos) * chunk, chunk);
        break;
      }
      case kMbPermute: {
        const Mailbox::Slot* from = nullptr;
        for (const auto& pr : pairs)
          if (pr.second == pos && pr.first >= 0 && pr.first < n) {
            from = &b.slots[size_t(pr.first)];
            break;
          }
        if (from) std::memcpy(dst, from->data.data(), count * w);
        else std::memset(dst, 0, count * w);
        break;
      }
      default: err = Where(c, rank) + ": unknown collective kind " + std::to_string(me.kind);
    }
  }
  // the last member to pull closes the mailbox (its staged inputs go with the last reference)
  if (b.pulled.fetch_add(1, std::memory_order_acq_rel) + 1 == n) TheRegistry().Remove(KeyOf(c), &b);
  return err;
}

void MailboxAbort(uint64_t launch, const std::string& why) {
  for (auto& b : TheRegistry().Abort(launch, why)) Fail(*b, "released because the launch failed: " + why);
}

void MailboxForget(uint64_t launch) {
  TheRegistry().Forget(launch);
}

size_t OpenMailboxes() {
  return TheRegistry().Size();
}

}  // namespace jaxts
