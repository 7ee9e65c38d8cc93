/** @file Strided block copies between device buffers, run on the destination devices' executors in stream order (resharding). */
// A resharding is a list of rectangular copies, each from a source buffer (on a source device, or host memory) into a
// destination buffer on a destination device. The copies into device D run on D's executor; before them, D waits
// for a fence that each other source device's executor passes once the work queued there before this op is done
// (the buffers' producing launches: a buffer is written only by its own device's stream). Every fence is submitted
// before any copy task, and every op submits in the JS thread's global order, so no wait can close a cycle.
//
// JS interface (added to the addon's exports):
//   devCopyBlocks(buffers: TypedArray[], plan: Float64Array, sync: 0|1) -> op handle (sync: undefined, copies done)
//     plan: [count, then per copy: srcBuf, dstBuf, srcDev, dstDev, elemSize, rank, srcOff, dstOff,
//            extents[rank], srcStrides[rank], dstStrides[rank]] (offsets and strides in elements; srcDev -1: host)
//     sync 1 runs every copy on the calling thread now (host sources the caller may recycle once it returns).
//   devCopyDone(op) -> whether every copy finished (never blocks)
//   devCopyWait(op) -> undefined, once every copy finished (blocks)
// The op keeps `buffers` alive (one reference) until devCopyDone/devCopyWait saw it finish.

#include <node_api.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "napi-util.h"

namespace jaxts {

void SubmitToDevice(int device, std::function<void()> task);  // native/devices.cc: queue on the device's executor

namespace {

struct Copy {
  const uint8_t* src = nullptr;
  uint8_t* dst = nullptr;
  int src_dev = -1, dst_dev = 0;
  size_t es = 0;                  // element size in bytes
  std::vector<int64_t> ext, ss, ds;  // extents, source and destination strides (elements)
};

template <size_t N>
void CopyElems(const uint8_t* s, uint8_t* d, int64_t n, int64_t ss, int64_t ds) {
  for (int64_t i = 0; i < n; i++) std::memcpy(d + size_t(i * ds) * N, s + size_t(i * ss) * N, N);
}

// One strided copy: size-1 dims dropped, adjacent dims that are contiguous in both buffers merged, then the innermost
// dim memcpy'd as one run when unit-strided in both (else element by element), looping over the outer dims.
void RunCopy(const Copy& c) {
  std::vector<int64_t> e, s, d;
  for (size_t k = 0; k < c.ext.size(); k++) {
    if (c.ext[k] == 0) return;
    if (c.ext[k] == 1) continue;
    if (!e.empty() && s.back() == c.ext[k] * c.ss[k] && d.back() == c.ext[k] * c.ds[k]) {
      e.back() *= c.ext[k];  // (i, j) with stride (n*t, t) is one dim of n*extent with stride t
      s.back() = c.ss[k];
      d.back() = c.ds[k];
      continue;
    }
    e.push_back(c.ext[k]);
    s.push_back(c.ss[k]);
    d.push_back(c.ds[k]);
  }
  if (e.empty()) {
    std::memcpy(c.dst, c.src, c.es);
    return;
  }
  const size_t r = e.size();
  const int64_t inner = e[r - 1], is = s[r - 1], id = d[r - 1];
  const bool run = is == 1 && id == 1;
  std::vector<int64_t> pos(r - 1, 0);
  int64_t so = 0, dO = 0;
  for (;;) {
    const uint8_t* sp = c.src + size_t(so) * c.es;
    uint8_t* dp = c.dst + size_t(dO) * c.es;
    if (run) std::memcpy(dp, sp, size_t(inner) * c.es);
    else switch (c.es) {
        case 1: CopyElems<1>(sp, dp, inner, is, id); break;
        case 2: CopyElems<2>(sp, dp, inner, is, id); break;
        case 4: CopyElems<4>(sp, dp, inner, is, id); break;
        case 8: CopyElems<8>(sp, dp, inner, is, id); break;
        default: CopyElems<16>(sp, dp, inner, is, id); break;
      }
    size_t k = r - 1;
    for (; k > 0; k--) {
      so += s[k - 1];
      dO += d[k - 1];
      if (++pos[k - 1] < e[k - 1]) break;
      so -= s[k - 1] * e[k - 1];
      dO -= d[k - 1] * e[k - 1];
      pos[k - 1] = 0;
    }
    if (k == 0) return;
  }
}

struct Op {
  std::vector<Copy> copies;
  std::map<int, std::vector<size_t>> by_dst;  // destination device -> its copies
  std::map<int, bool> fenced;                 // source device -> its fence passed (guarded by mu)
  std::atomic<int> remaining{0};
  std::atomic<bool> done{false};
  std::mutex mu;
  std::condition_variable cv;
  napi_env env = nullptr;
  napi_ref keep = nullptr;  // the buffers list (JS thread only)
  void Release() {
    if (keep) napi_delete_reference(env, keep);
    keep = nullptr;
  }
};

napi_value Throw(napi_env env, const std::string& msg) {
  napi_throw_error(env, nullptr, ("jaxts-devices: " + msg).c_str());
  return nullptr;
}

// The copies into `dev`, once the fences of the other source devices they read passed.
void RunDestination(const std::shared_ptr<Op>& op, int dev) {
  const std::vector<size_t>& mine = op->by_dst.at(dev);
  {
    std::unique_lock<std::mutex> lock(op->mu);
    op->cv.wait(lock, [&] {
      for (size_t i : mine) {
        const int sd = op->copies[i].src_dev;
        if (sd >= 0 && sd != dev && !op->fenced.at(sd)) return false;
      }
      return true;
    });
  }
  for (size_t i : mine) RunCopy(op->copies[i]);
  if (op->remaining.fetch_sub(1) == 1) {
    {
      std::lock_guard<std::mutex> lock(op->mu);
      op->done.store(true, std::memory_order_release);
    }
    op->cv.notify_all();
  }
}

void FinalizeOp(napi_env, void* data, void*) {
  auto* holder = static_cast<std::shared_ptr<Op>*>(data);
  (*holder)->Release();
  delete holder;
}

bool Num(napi_env env, napi_value v, int64_t* out) { return napi_get_value_int64(env, v, out) == napi_ok; }

// devCopyBlocks(buffers, plan, sync)
napi_value CopyBlocksFn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc < 3) return Throw(env, "devCopyBlocks(buffers, plan, sync) expects three arguments");
  uint32_t nb = 0;
  if (napi_get_array_length(env, argv[0], &nb) != napi_ok) return Throw(env, "devCopyBlocks: buffers must be a list of typed arrays");
  std::vector<uint8_t*> ptr(nb);
  std::vector<size_t> bytes(nb);
  for (uint32_t i = 0; i < nb; i++) {
    napi_value b;
    napi_get_element(env, argv[0], i, &b);
    napi_typedarray_type tt;
    size_t len = 0;
    void* data = nullptr;
    if (napi_get_typedarray_info(env, b, &tt, &len, &data, nullptr, nullptr) != napi_ok)
      return Throw(env, "devCopyBlocks: buffers[" + std::to_string(i) + "] is not a typed array");
    ptr[i] = static_cast<uint8_t*>(data);
    bytes[i] = TypedArrayBytes(tt, len);
  }
  napi_typedarray_type pt;
  size_t plen = 0;
  void* pdata = nullptr;
  if (napi_get_typedarray_info(env, argv[1], &pt, &plen, &pdata, nullptr, nullptr) != napi_ok || pt != napi_float64_array)
    return Throw(env, "devCopyBlocks: plan must be a Float64Array");
  const double* plan = static_cast<const double*>(pdata);
  int64_t sync = 0;
  Num(env, argv[2], &sync);
  auto op = std::make_shared<Op>();
  size_t at = 1;
  const size_t count = plen ? size_t(plan[0]) : 0;
  auto bad = [&](size_t k, const std::string& why) { return Throw(env, "devCopyBlocks: copy " + std::to_string(k) + ": " + why); };
  for (size_t k = 0; k < count; k++) {
    if (at + 8 > plen) return bad(k, "the plan ends early");
    const int64_t sb = int64_t(plan[at]), db = int64_t(plan[at + 1]), rank = int64_t(plan[at + 5]);
    Copy c;
    c.src_dev = int(plan[at + 2]);
    c.dst_dev = int(plan[at + 3]);
    c.es = size_t(plan[at + 4]);
    const int64_t so = int64_t(plan[at + 6]), dof = int64_t(plan[at + 7]);
    at += 8;
    if (sb < 0 || sb >= int64_t(nb) || db < 0 || db >= int64_t(nb)) return bad(k, "buffer index out of range");
    if (c.es != 1 && c.es != 2 && c.es != 4 && c.es != 8 && c.es != 16) return bad(k, "element size must be 1, 2, 4, 8 or 16 bytes");
    if (c.dst_dev < 0 || c.dst_dev > 4095 || c.src_dev < -1 || c.src_dev > 4095) return bad(k, "device id out of range");
    if (rank < 0 || rank > 64 || at + size_t(3 * rank) > plen) return bad(k, "bad rank or the plan ends early");
    int64_t smax = so, dmax = dof, n = 1;
    for (int64_t d = 0; d < rank; d++) {
      const int64_t e = int64_t(plan[at + size_t(d)]), s = int64_t(plan[at + size_t(rank + d)]), t = int64_t(plan[at + size_t(2 * rank + d)]);
      if (e < 0 || s < 0 || t < 0) return bad(k, "negative extent or stride");
      c.ext.push_back(e);
      c.ss.push_back(s);
      c.ds.push_back(t);
      n *= e;
      if (e > 0) {
        smax += (e - 1) * s;
        dmax += (e - 1) * t;
      }
    }
    at += size_t(3 * rank);
    if (so < 0 || dof < 0) return bad(k, "negative offset");
    if (n > 0 && (size_t(smax + 1) * c.es > bytes[size_t(sb)] || size_t(dmax + 1) * c.es > bytes[size_t(db)]))
      return bad(k, "the region runs past the end of its source (" + std::to_string(bytes[size_t(sb)]) + " bytes) or destination (" +
                        std::to_string(bytes[size_t(db)]) + " bytes) buffer");
    c.src = ptr[size_t(sb)] + size_t(so) * c.es;
    c.dst = ptr[size_t(db)] + size_t(dof) * c.es;
    op->by_dst[c.dst_dev].push_back(op->copies.size());
    op->copies.push_back(std::move(c));
  }
  if (sync) {
    for (const Copy& c : op->copies) RunCopy(c);
    return nullptr;
  }
  for (const Copy& c : op->copies)
    if (c.src_dev >= 0 && c.src_dev != c.dst_dev) op->fenced[c.src_dev] = false;
  op->env = env;
  napi_create_reference(env, argv[0], 1, &op->keep);
  op->remaining = int(op->by_dst.size());
  if (op->by_dst.empty()) op->done = true;
  // fences first (each passes once the work queued on its device before this op is done), then the copies
  for (auto& f : op->fenced) {
    const int sd = f.first;
    SubmitToDevice(sd, [op, sd] {
      {
        std::lock_guard<std::mutex> lock(op->mu);
        op->fenced.at(sd) = true;
      }
      op->cv.notify_all();
    });
  }
  for (auto& g : op->by_dst) {
    const int dev = g.first;
    SubmitToDevice(dev, [op, dev] { RunDestination(op, dev); });
  }
  napi_value handle;
  napi_create_external(env, new std::shared_ptr<Op>(op), FinalizeOp, nullptr, &handle);
  return handle;
}

Op* OpOf(napi_env env, napi_callback_info info, const char* fn) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void* p = nullptr;
  if (argc < 1 || napi_get_value_external(env, argv[0], &p) != napi_ok || !p) {
    Throw(env, std::string(fn) + " expects a copy op handle");
    return nullptr;
  }
  return static_cast<std::shared_ptr<Op>*>(p)->get();
}

napi_value CopyDoneFn(napi_env env, napi_callback_info info) {
  Op* op = OpOf(env, info, "devCopyDone");
  if (!op) return nullptr;
  const bool done = op->done.load(std::memory_order_acquire);
  if (done) op->Release();
  napi_value v;
  napi_get_boolean(env, done, &v);
  return v;
}

napi_value CopyWaitFn(napi_env env, napi_callback_info info) {
  Op* op = OpOf(env, info, "devCopyWait");
  if (!op) return nullptr;
  {
    std::unique_lock<std::mutex> lock(op->mu);
    op->cv.wait(lock, [&] { return op->done.load(std::memory_order_acquire); });
  }
  op->Release();
  return nullptr;
}

}  // namespace

void RegisterBlockCopy(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"devCopyBlocks", nullptr, CopyBlocksFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devCopyDone", nullptr, CopyDoneFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"devCopyWait", nullptr, CopyWaitFn, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}

}  // namespace jaxts
