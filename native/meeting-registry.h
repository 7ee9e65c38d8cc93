/** @file What the in-process collective protocols share (rendezvous in shm-communicator.cc, mailboxes in mailbox-collectives.cc): the key peers meet under, the registry of open meetings and aborted launches, and the failure rule. */
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "communicator.h"

namespace jaxts {

/** Peers of one collective meet under (launch, seq, first rank of the group). */
using CollectiveKey = std::tuple<uint64_t, uint64_t, int>;
inline CollectiveKey KeyOf(const CollectiveCall& c) {
  return CollectiveKey{c.launch, c.seq, *std::min_element(c.group.begin(), c.group.end())};
}

/** Open meetings of type T by key, and the launches aborted while they run (the first reason wins). */
template <typename T>
struct MeetingRegistry {
  std::mutex mu;
  std::map<CollectiveKey, std::shared_ptr<T>> open;
  std::map<uint64_t, std::string> aborted;

  /**
   * Under mu: the open meeting of c, made for c's group (init sizes its members) when c is the first member to come;
   * null, with *aborted_why pointing at the reason, when c's launch was aborted.
   */
  template <typename Init>
  std::shared_ptr<T> OpenLocked(const CollectiveCall& c, const std::string** aborted_why, Init init) {
    auto ab = aborted.find(c.launch);
    if (ab != aborted.end()) {
      *aborted_why = &ab->second;
      return nullptr;
    }
    const CollectiveKey key = KeyOf(c);
    auto it = open.find(key);
    if (it != open.end()) return it->second;
    auto m = std::make_shared<T>();
    m->group = c.group;
    init(*m);
    open.emplace(key, m);
    return m;
  }
  /** Marks the launch aborted and returns its open meetings, for the caller to fail outside mu. */
  std::vector<std::shared_ptr<T>> Abort(uint64_t launch, const std::string& why) {
    std::vector<std::shared_ptr<T>> hit;
    std::lock_guard<std::mutex> lock(mu);
    aborted.emplace(launch, why);
    for (auto& kv : open)
      if (std::get<0>(kv.first) == launch) hit.push_back(kv.second);
    return hit;
  }
  /** Forgets a finished launch: its abort mark and any meeting a failure left open. */
  void Forget(uint64_t launch) {
    std::lock_guard<std::mutex> lock(mu);
    aborted.erase(launch);
    for (auto it = open.begin(); it != open.end();) {
      if (std::get<0>(it->first) == launch) it = open.erase(it);
      else ++it;
    }
  }
  /** Removes the meeting under key if it is still m (the last member out closes it). */
  void Remove(const CollectiveKey& key, const T* m) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = open.find(key);
    if (it != open.end() && it->second.get() == m) open.erase(it);
  }
  size_t Size() {
    std::lock_guard<std::mutex> lock(mu);
    return open.size();
  }
};

/**
 * Fails meeting m with `why` unless all `total` members already joined (counted by m.*joined): a meeting either
 * completes or fails, never both, because joins and failures are decided under m.mu.
 */
template <typename T>
void FailMeeting(T& m, std::atomic<int> T::*joined, size_t total, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (!m.failed.load() && (m.*joined).load() < int(total)) {
      m.error = why;
      m.failed.store(true);
    }
  }
  m.cv.notify_all();
}

}  // namespace jaxts
