/** @file Native buffer arena: ArrayBuffers over mmap'd blocks that the garbage collector hands back to a free list (not to the system), so later outputs reuse already-faulted memory. */
// Why: writing freshly mapped memory costs a page fault per 4 KiB (~12 µs each on the reference machine), and a
// FinalizationRegistry (the JS pool's way to learn that an array died) only runs after the event loop turns.
// V8 calls a backing store's deleter when the collector frees the ArrayBuffer, in any loop, on some thread: the
// deleter puts the block on a mutex-guarded free list. The free list is bounded: at most max(`ratio` times the
// bytes of blocks in use, `floor`) and at most `maxFree` bytes; beyond that blocks are unmapped.

#include <node_api.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#if __has_include(<v8.h>)
#include <v8.h>
#define JAXTS_ARENA 1
#endif

namespace jaxts {

#ifdef JAXTS_ARENA
namespace {

constexpr size_t kPage = 4096;

struct Arena {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free;  // by block size (bytes rounded up to pages)
  size_t free_bytes = 0, in_use_bytes = 0;
  size_t max_free = size_t(256) << 20;
  double ratio = 2.0;
  size_t floor = 0;
  uint64_t fresh = 0, reused = 0, returned = 0, unmapped = 0, reserved = 0;
};
// never destroyed: deleters may still run while the process exits
Arena* const g_arena = new Arena();

size_t BlockSize(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

// True when `size` more free bytes stay within the free list's bounds (caller holds the mutex).
bool FitsLocked(const Arena* a, size_t size) {
  const double cap = std::max(a->ratio * double(a->in_use_bytes), double(a->floor));
  const double after = double(a->free_bytes + size);
  return after <= cap && a->free_bytes + size <= a->max_free;
}

// Unmaps free blocks until the free list is within its bounds (caller holds the mutex).
void TrimLocked(Arena* a) {
  const double cap = std::max(a->ratio * double(a->in_use_bytes), double(a->floor));
  while (a->free_bytes > 0 && (double(a->free_bytes) > cap || a->free_bytes > a->max_free)) {
    for (auto it = a->free.begin(); it != a->free.end(); ++it) {
      if (it->second.empty()) continue;
      void* p = it->second.back();
      it->second.pop_back();
      munmap(p, it->first);
      a->free_bytes -= it->first;
      a->unmapped++;
      break;
    }
  }
}

// V8 calls this when the collector frees the ArrayBuffer (any thread); deleter_data is the block size.
void ReturnBlock(void* data, size_t, void* deleter_data) {
  const size_t size = reinterpret_cast<size_t>(deleter_data);
  Arena* a = g_arena;
  std::lock_guard<std::mutex> lock(a->mu);
  a->in_use_bytes -= size;
  a->free[size].push_back(data);
  a->free_bytes += size;
  a->returned++;
  TrimLocked(a);
}

napi_value Num(napi_env env, double v) {
  napi_value r;
  napi_create_double(env, v, &r);
  return r;
}

// arenaAlloc(bytes) -> ArrayBuffer of exactly `bytes` over an arena block (contents unspecified), or null when
// the memory cannot be mapped
napi_value ArenaAlloc(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  double want = 0;
  if (argc < 1 || napi_get_value_double(env, argv[0], &want) != napi_ok || !(want > 0)) {
    napi_throw_type_error(env, nullptr, "jaxts-ort: arenaAlloc(bytes) expects a positive byte count");
    return nullptr;
  }
  const size_t bytes = size_t(want), size = BlockSize(bytes);
  Arena* a = g_arena;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(a->mu);
    auto it = a->free.find(size);
    if (it != a->free.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      a->free_bytes -= size;
      a->reused++;
    }
    a->in_use_bytes += size;
  }
  if (!p) {
    p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::lock_guard<std::mutex> lock(a->mu);
    if (p == MAP_FAILED) {
      a->in_use_bytes -= size;
      napi_value n;
      napi_get_null(env, &n);
      return n;
    }
    a->fresh++;
  }
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  std::shared_ptr<v8::BackingStore> store =
      v8::ArrayBuffer::NewBackingStore(p, bytes, ReturnBlock, reinterpret_cast<void*>(size));
  v8::Local<v8::ArrayBuffer> ab = v8::ArrayBuffer::New(isolate, std::move(store));
  // a napi_value is a pointer to a V8 handle slot (node's v8impl::JsValueFromV8LocalValue does the same)
  return reinterpret_cast<napi_value>(*ab);
}

// arenaReserve(bytes, count) -> blocks mapped: until the free list holds `count` blocks for `bytes`-byte buffers, maps
// one, writes one byte per page (the first-touch page faults are taken now, not by a later output) and frees it; stops
// at the free list's bounds (a block beyond them would be unmapped again)
napi_value ArenaReserve(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  double want = 0, count = 0;
  if (argc < 2 || napi_get_value_double(env, argv[0], &want) != napi_ok || napi_get_value_double(env, argv[1], &count) != napi_ok ||
      !(want > 0) || !(count >= 0)) {
    napi_throw_type_error(env, nullptr, "jaxts-ort: arenaReserve(bytes, count) expects a positive byte count and a non-negative count");
    return nullptr;
  }
  const size_t size = BlockSize(size_t(want));
  Arena* a = g_arena;
  double mapped = 0;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(a->mu);
      auto it = a->free.find(size);
      if ((it != a->free.end() && double(it->second.size()) >= count) || !FitsLocked(a, size)) break;
    }
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) break;
    // volatile: the stores must reach the pages (fresh anonymous pages read as zero, so zero is what they hold)
    volatile unsigned char* b = static_cast<unsigned char*>(p);
    for (size_t off = 0; off < size; off += kPage) b[off] = 0;
    std::lock_guard<std::mutex> lock(a->mu);
    a->free[size].push_back(p);
    a->free_bytes += size;
    a->fresh++;
    a->reserved++;
    mapped++;
  }
  return Num(env, mapped);
}

// arenaStats() -> [freeBytes, inUseBytes, fresh, reused, returned, unmapped, reserved]
napi_value ArenaStats(napi_env env, napi_callback_info) {
  Arena* a = g_arena;
  std::lock_guard<std::mutex> lock(a->mu);
  const double v[] = {double(a->free_bytes), double(a->in_use_bytes), double(a->fresh), double(a->reused), double(a->returned), double(a->unmapped), double(a->reserved)};
  napi_value arr;
  napi_create_array_with_length(env, 7, &arr);
  for (uint32_t i = 0; i < 7; i++) napi_set_element(env, arr, i, Num(env, v[i]));
  return arr;
}

// arenaLimits(maxFreeBytes, ratio, floor): bounds of the free list (applied now)
napi_value ArenaLimits(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  double max_free = 0, ratio = 0, floor = 0;
  if (argc < 3 || napi_get_value_double(env, argv[0], &max_free) != napi_ok || napi_get_value_double(env, argv[1], &ratio) != napi_ok ||
      napi_get_value_double(env, argv[2], &floor) != napi_ok || !(max_free >= 0) || !(ratio >= 0) || !(floor >= 0)) {
    napi_throw_type_error(env, nullptr, "jaxts-ort: arenaLimits(maxFreeBytes, ratio, floor) expects three non-negative numbers");
    return nullptr;
  }
  Arena* a = g_arena;
  std::lock_guard<std::mutex> lock(a->mu);
  a->max_free = size_t(max_free);
  a->ratio = ratio;
  a->floor = size_t(floor);
  TrimLocked(a);
  return nullptr;
}

}  // namespace

void RegisterArena(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"arenaAlloc", nullptr, ArenaAlloc, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"arenaStats", nullptr, ArenaStats, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"arenaReserve", nullptr, ArenaReserve, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"arenaLimits", nullptr, ArenaLimits, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}
#else
// without V8's headers there is no arena: the buffer pool allocates through V8 as before
void RegisterArena(napi_env, napi_value) {}
#endif

}  // namespace jaxts
