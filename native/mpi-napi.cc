/** @file The addon's host-side MPI functions (mpiInit, mpiFinalize, mpiAllgather, mpiExchange, mpiProbeAllreduce) and their registration; the collectives' communicator is native/mpi-communicator.cc. */
#include <node_api.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "mpi-loader.h"
#include "napi-util.h"

namespace jaxts {
namespace {

using Clock = std::chrono::steady_clock;

napi_value Throw(napi_env env, const std::string& msg) {
  napi_throw_error(env, nullptr, msg.c_str());
  return nullptr;
}

// mpiInit() -> { rank, size, threadLevel }; throws with the reason when MPI cannot be loaded or initialized
napi_value InitFn(napi_env env, napi_callback_info) {
  const std::string err = mpi::Init();
  if (!err.empty()) return Throw(env, err);
  napi_value obj, v;
  napi_create_object(env, &obj);
  napi_create_int32(env, mpi::Rank(), &v);
  napi_set_named_property(env, obj, "rank", v);
  napi_create_int32(env, mpi::Size(), &v);
  napi_set_named_property(env, obj, "size", v);
  napi_create_int32(env, mpi::ThreadLevel(), &v);
  napi_set_named_property(env, obj, "threadLevel", v);
  return obj;
}

napi_value FinalizeFn(napi_env env, napi_callback_info) {
  mpi::Finalize();
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

uint64_t g_host_ops = 0;  // host-side exchanges (JS thread only), in the same order on every process

/** A new Uint8Array of n bytes; *data points at them. */
napi_value NewBytes(napi_env env, size_t n, void** data) {
  napi_value ab, arr;
  napi_create_arraybuffer(env, n, data, &ab);
  napi_create_typedarray(env, napi_uint8_array, n, ab, 0, &arr);
  return arr;
}
/** A JS array of `values`, in order. */
napi_value ArrayOf(napi_env env, const std::vector<napi_value>& values) {
  napi_value out;
  napi_create_array_with_length(env, values.size(), &out);
  for (size_t q = 0; q < values.size(); q++) napi_set_element(env, out, uint32_t(q), values[q]);
  return out;
}
/** What a host-side exchange that missed its deadline says. */
std::string TimedOut(const std::string& what, int self, int64_t timeout) {
  return what + " on process " + std::to_string(self) + " timed out after " + std::to_string(timeout) + " ms";
}

// mpiAllgather(bytes: Uint8Array, timeoutMs, what) -> Uint8Array[] (one per process, sizes may differ)
napi_value AllgatherFn(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void* data = nullptr;
  size_t len = 0;
  int64_t timeout = 30000;
  std::string what = "processAllgather";
  if (argc < 1 || !GetUint8Array(env, argv[0], &data, &len)) return Throw(env, "mpiAllgather: bytes must be a Uint8Array");
  if (argc >= 2) napi_get_value_int64(env, argv[1], &timeout);
  if (argc >= 3) GetString(env, argv[2], &what);
  const int P = mpi::Size(), self = mpi::Rank();
  const int tag = 16384 + int(g_host_ops++ & 8191);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout < 1 ? 1 : timeout);
  // sizes first, then the bytes
  uint64_t mine = len;
  std::vector<uint64_t> sizes(static_cast<size_t>(P), 0);
  std::vector<mpi::Transfer> xs;
  for (int q = 0; q < P; q++)
    if (q != self) xs.push_back({q, &mine, 8, &sizes[size_t(q)], 8});
  std::string err = mpi::Exchange(xs, tag, deadline, TimedOut(what, self, timeout));
  if (!err.empty()) return Throw(env, err);
  sizes[size_t(self)] = mine;
  std::vector<napi_value> arrays(static_cast<size_t>(P));
  std::vector<void*> ptrs(static_cast<size_t>(P));
  for (int q = 0; q < P; q++) arrays[size_t(q)] = NewBytes(env, size_t(sizes[size_t(q)]), &ptrs[size_t(q)]);
  if (len) std::memcpy(ptrs[size_t(self)], data, len);
  xs.clear();
  for (int q = 0; q < P; q++)
    if (q != self) xs.push_back({q, data, len, ptrs[size_t(q)], size_t(sizes[size_t(q)])});
  err = mpi::Exchange(xs, tag, deadline, TimedOut(what, self, timeout));
  if (!err.empty()) return Throw(env, err);
  return ArrayOf(env, arrays);
}

// mpiExchange(sends: Uint8Array[], recvBytes: number[], timeoutMs, what) -> Uint8Array[]: point to point with the
// peers that have bytes for this process or get bytes from it (entry q of sends / recvBytes: to / from process q;
// this process's entries are ignored). Every process calls it in the same order (it takes a host-exchange tag).
napi_value ExchangeFn(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int64_t timeout = 30000;
  std::string what = "mpiExchange";
  if (argc >= 3) napi_get_value_int64(env, argv[2], &timeout);
  if (argc >= 4) GetString(env, argv[3], &what);
  const int P = mpi::Size(), self = mpi::Rank();
  const int tag = 16384 + int(g_host_ops++ & 8191);
  uint32_t ns = 0, nr = 0;
  if (argc < 2 || napi_get_array_length(env, argv[0], &ns) != napi_ok || napi_get_array_length(env, argv[1], &nr) != napi_ok ||
      ns != uint32_t(P) || nr != uint32_t(P))
    return Throw(env, what + ": mpiExchange expects " + std::to_string(P) + " send buffers and receive sizes (one per process)");
  std::vector<napi_value> arrays(static_cast<size_t>(P));
  std::vector<mpi::Transfer> xs;
  for (int q = 0; q < P; q++) {
    napi_value sv, rv;
    napi_get_element(env, argv[0], uint32_t(q), &sv);
    napi_get_element(env, argv[1], uint32_t(q), &rv);
    void* send = nullptr;
    size_t send_len = 0;
    int64_t recv_len = 0;
    if (!GetUint8Array(env, sv, &send, &send_len) || napi_get_value_int64(env, rv, &recv_len) != napi_ok || recv_len < 0)
      return Throw(env, what + ": mpiExchange: entry " + std::to_string(q) + " is not a Uint8Array and a byte count");
    void* recv = nullptr;
    const size_t rn = q == self ? 0 : size_t(recv_len);
    arrays[size_t(q)] = NewBytes(env, rn, &recv);
    if (q != self && (send_len || rn)) xs.push_back({q, send, send_len, recv, rn});
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout < 1 ? 1 : timeout);
  if (!xs.empty()) {
    const std::string err = mpi::Exchange(xs, tag, deadline, TimedOut(what, self, timeout));
    if (!err.empty()) return Throw(env, err);
  }
  return ArrayOf(env, arrays);
}

// mpiProbeAllreduce(count, iters) -> Float64Array of seconds per MPI_Allreduce of count float32 (bench/multiprocess.ts)
napi_value ProbeAllreduceFn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int64_t count = 0, iters = 0;
  if (argc < 2 || napi_get_value_int64(env, argv[0], &count) != napi_ok || napi_get_value_int64(env, argv[1], &iters) != napi_ok || count < 1 ||
      iters < 1)
    return Throw(env, "mpiProbeAllreduce: expected (count >= 1, iters >= 1)");
  std::vector<double> secs;
  const std::string err = mpi::ProbeAllreduce(size_t(count), int(iters), &secs);
  if (!err.empty()) return Throw(env, "mpiProbeAllreduce: " + err);
  void* data = nullptr;
  napi_value ab, arr;
  napi_create_arraybuffer(env, secs.size() * sizeof(double), &data, &ab);
  std::memcpy(data, secs.data(), secs.size() * sizeof(double));
  napi_create_typedarray(env, napi_float64_array, secs.size(), ab, 0, &arr);
  return arr;
}

}  // namespace

void RegisterMpiShm(napi_env env, napi_value exports);  // native/mpi-shm.cc

void RegisterMpi(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"mpiInit", nullptr, InitFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"mpiFinalize", nullptr, FinalizeFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"mpiAllgather", nullptr, AllgatherFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"mpiExchange", nullptr, ExchangeFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"mpiProbeAllreduce", nullptr, ProbeAllreduceFn, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  RegisterMpiShm(env, exports);
}

}  // namespace jaxts
