/** @file Device executors: one detached native thread per CPU device runs the tasks queued on it in submission order, polling its queue a bounded while before it blocks; Idle tells a caller when it may run a device's work itself. */
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

namespace jaxts {

class Executor {
 public:
  Executor();
  void Submit(std::function<void()> task);
  /**
   * Nothing queued, and nothing running but a task past its device work (see Finishing): work the caller runs itself
   * now cannot overtake this stream's earlier work.
   */
  bool Idle();
  /**
   * The running task finished its device work (what is left signals completion and releases the launch): a thread
   * woken by that signal may run this device's next rank itself at once instead of finding the stream still busy.
   */
  static void Finishing();

 private:
  // Polls the queue for up to g_spin_us when a polling slot is free and the host is not contended (PollBounded: a
  // poller that finds itself descheduled backs every executor off); true when work arrived meanwhile.
  bool Spin();
  void Loop();
  bool running_ = false;
  std::atomic<bool> finishing_{false};  // the running task is past its device work (Finishing)
  std::atomic<int> queued_{0};  // queue_.size(), readable without the mutex (polling)
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
};

/** The executor of `device`, made (with its thread) on first use. */
Executor* ExecutorFor(int device);

/** Sets how long an idle executor polls its queue before it blocks (microseconds, 0: never); returns the previous value. */
int ExchangeExecutorSpinUs(int us);

}  // namespace jaxts
