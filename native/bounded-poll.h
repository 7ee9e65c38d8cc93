/** @file Bounded polling before a blocking wait, shared by the device executors (native/devices.cc) and the mailbox collectives' Done (native/mailbox-collectives.cc). */
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace jaxts {

/** A spin-loop hint to the CPU (pause / yield), nothing elsewhere. */
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/**
 * The pollers of one kind: how many poll now, and until when nobody polls. A poller that finds itself descheduled (a
 * gap of more than kPreemptedUs between two of its clock reads) is on an oversubscribed host, where polling only burns
 * its time slice (and the peers' it waits for) and a futex wake-up gets the core sooner: then every poller of this
 * kind blocks at once for the next kBackoffUs.
 */
struct PollGate {
  static constexpr int64_t kPreemptedUs = 40, kBackoffUs = 20000;
  std::atomic<int> pollers{0};
  std::atomic<int64_t> backoff_until_us{0};
};

/**
 * Polls done() for up to `us` microseconds when fewer than `max_pollers` of `gate`'s kind poll and no backoff is on,
 * reading the clock every `check_mask + 1` polls; true when done() became true while polling (false when it did not,
 * or polling was not allowed: the caller then blocks).
 */
template <typename F>
bool PollBounded(PollGate& gate, int us, int max_pollers, int check_mask, const F& done) {
  auto now = std::chrono::steady_clock::now();
  const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  if (now_us < gate.backoff_until_us.load(std::memory_order_relaxed)) return false;
  int k = gate.pollers.load(std::memory_order_relaxed);
  do {
    if (k >= max_pollers) return false;
  } while (!gate.pollers.compare_exchange_weak(k, k + 1, std::memory_order_acq_rel));
  const auto until = now + std::chrono::microseconds(us);
  bool got = false;
  for (int i = 1;; i++) {
    if (done()) {
      got = true;
      break;
    }
    if ((i & check_mask) == 0) {
      const auto t = std::chrono::steady_clock::now();
      if (t - now > std::chrono::microseconds(PollGate::kPreemptedUs)) {
        const int64_t t_us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
        gate.backoff_until_us.store(t_us + PollGate::kBackoffUs, std::memory_order_relaxed);
        break;
      }
      if (t > until) break;
      now = t;
    }
    CpuRelax();
  }
  gate.pollers.fetch_sub(1, std::memory_order_acq_rel);
  return got;
}

}  // namespace jaxts
