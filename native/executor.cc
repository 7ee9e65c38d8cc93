/** @file Device executors (native/executor.h): the queue of each device's thread, its bounded spin before a blocking wait, the idle rule, and the executors by device. */
#include "executor.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "bounded-poll.h"

namespace jaxts {
namespace {

// How long an executor that finished its work polls its queue before it blocks on its condition variable
// (microseconds; devSetExecutorSpin changes it, 0: block at once). A blocked executor is woken by a futex call and a
// reschedule, 20-60 us on this VM, longer than a tiny program's whole run; an executor still polling when the next
// launch arrives starts it within a microsecond. At most MaxSpinners() executors poll at once (one core is left to the
// JS thread), so more devices than cores never spin each other out: the others block as before.
std::atomic<int> g_spin_us{250};
PollGate g_executor_polls;  // the executors polling their queues (native/bounded-poll.h)
int MaxSpinners() {
  static const int n = std::max(0, int(std::thread::hardware_concurrency()) - 1);
  return n;
}

thread_local Executor* t_executor = nullptr;  // the executor whose thread this is (null on other threads)

std::mutex g_exec_mu;
std::vector<Executor*>* g_executors = new std::vector<Executor*>();  // never destroyed (threads are detached)

}  // namespace

Executor::Executor() { std::thread([this] { Loop(); }).detach(); }

void Executor::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    queued_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_one();  // no system call when the executor is polling rather than waiting
}

bool Executor::Idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.empty() && (!running_ || finishing_.load(std::memory_order_acquire));
}

void Executor::Finishing() {
  if (t_executor) t_executor->finishing_.store(true, std::memory_order_release);
}

bool Executor::Spin() {
  const int us = g_spin_us.load(std::memory_order_relaxed);
  if (us <= 0 || queued_.load(std::memory_order_acquire) > 0) return true;
  return PollBounded(g_executor_polls, us, MaxSpinners(), 127, [&] { return queued_.load(std::memory_order_acquire) > 0; });
}

void Executor::Loop() {
  t_executor = this;
  for (;;) {
    std::function<void()> task;
    Spin();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty(); });
      task = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
      running_ = true;
      finishing_.store(false, std::memory_order_relaxed);
    }
    task();
    task = nullptr;  // the launch it held is released before this executor idles
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
  }
}

Executor* ExecutorFor(int device) {
  std::lock_guard<std::mutex> lock(g_exec_mu);
  while (int(g_executors->size()) <= device) g_executors->push_back(new Executor());
  return (*g_executors)[size_t(device)];
}

int ExchangeExecutorSpinUs(int us) { return g_spin_us.exchange(us); }

}  // namespace jaxts
