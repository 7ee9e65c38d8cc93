/** @file Open MPI loaded at run time with dlopen: symbol resolution, initialization, and the polled nonblocking exchange every cross-process collective uses. */
#include "mpi-loader.h"

#include <dlfcn.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <list>
#include <mutex>
#include <thread>

namespace jaxts {
namespace mpi {
namespace {

// Open MPI's ABI: handles are pointers to opaque structs; MPI_STATUS_IGNORE is a null pointer.
using Comm = void*;
using Datatype = void*;
using Request = void*;
constexpr int kSuccess = 0;
constexpr int kThreadMultiple = 3;

struct Api {
  int (*Initialized)(int*) = nullptr;
  int (*Finalized)(int*) = nullptr;
  int (*InitThread)(int*, char***, int, int*) = nullptr;
  int (*Finalize)() = nullptr;
  int (*CommRank)(Comm, int*) = nullptr;
  int (*CommSize)(Comm, int*) = nullptr;
  int (*Isend)(const void*, int, Datatype, int, int, Comm, Request*) = nullptr;
  int (*Irecv)(void*, int, Datatype, int, int, Comm, Request*) = nullptr;
  int (*Test)(Request*, int*, void*) = nullptr;
  int (*Cancel)(Request*) = nullptr;
  int (*RequestFree)(Request*) = nullptr;
  int (*Iprobe)(int, int, Comm, int*, void*) = nullptr;
  int (*Recv)(void*, int, Datatype, int, int, Comm, void*) = nullptr;
  // the bench probe only (optional: resolved lazily)
  int (*Allreduce)(const void*, void*, int, Datatype, void*, Comm) = nullptr;
  int (*Barrier)(Comm) = nullptr;
  Datatype float32 = nullptr;
  void* op_sum = nullptr;
  Comm world = nullptr;
  Datatype byte = nullptr;
};

Api g;
std::mutex g_init_mu;
bool g_ready = false, g_finalized = false;
std::string g_error;
int g_rank = 0, g_size = 1, g_level = 0;
std::atomic<bool> g_peer_silent{false};  // an exchange timed out waiting for a process (which may have died)
// below MPI_THREAD_MULTIPLE every MPI call is serialized by this mutex (MPI_THREAD_SERIALIZED semantics)
std::mutex g_call_mu;

template <typename F>
bool Sym(void* lib, const char* name, F* out, std::string* missing) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (!*out) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *out != nullptr;
}

std::string Load() {
  // RTLD_GLOBAL: Open MPI's plugins (mca components) resolve libmpi's symbols from the global scope
  // JAXTS_MPI_LIBRARY, when set, is the only library tried
  const char* env = std::getenv("JAXTS_MPI_LIBRARY");
  std::vector<const char*> names{"libmpi.so.40", "libmpi.so"};
  if (env && *env) names = {env};
  void* lib = nullptr;
  std::string tried;
  for (const char* n : names) {
    lib = dlopen(n, RTLD_NOW | RTLD_GLOBAL);
    if (lib) break;
    const char* e = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (e ? e : n);
  }
  if (!lib) return "cannot load Open MPI's libmpi (" + tried + "); install Open MPI (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev) or set JAXTS_MPI_LIBRARY to its libmpi.so";
  std::string missing;
  Sym(lib, "MPI_Initialized", &g.Initialized, &missing);
  Sym(lib, "MPI_Finalized", &g.Finalized, &missing);
  Sym(lib, "MPI_Init_thread", &g.InitThread, &missing);
  Sym(lib, "MPI_Finalize", &g.Finalize, &missing);
  Sym(lib, "MPI_Comm_rank", &g.CommRank, &missing);
  Sym(lib, "MPI_Comm_size", &g.CommSize, &missing);
  Sym(lib, "MPI_Isend", &g.Isend, &missing);
  Sym(lib, "MPI_Irecv", &g.Irecv, &missing);
  Sym(lib, "MPI_Test", &g.Test, &missing);
  Sym(lib, "MPI_Cancel", &g.Cancel, &missing);
  Sym(lib, "MPI_Request_free", &g.RequestFree, &missing);
  Sym(lib, "MPI_Iprobe", &g.Iprobe, &missing);
  Sym(lib, "MPI_Recv", &g.Recv, &missing);
  g.Allreduce = reinterpret_cast<decltype(g.Allreduce)>(dlsym(lib, "MPI_Allreduce"));
  g.Barrier = reinterpret_cast<decltype(g.Barrier)>(dlsym(lib, "MPI_Barrier"));
  g.float32 = dlsym(lib, "ompi_mpi_float");
  g.op_sum = dlsym(lib, "ompi_mpi_op_sum");
  g.world = dlsym(lib, "ompi_mpi_comm_world");
  g.byte = dlsym(lib, "ompi_mpi_byte");
  if (!g.world || !g.byte) missing += std::string(missing.empty() ? "" : ", ") + "ompi_mpi_comm_world/ompi_mpi_byte (not Open MPI's ABI?)";
  if (!missing.empty()) return "libmpi lacks " + missing + " (jaxts loads Open MPI's ABI)";
  return "";
}

struct Guard {
  std::unique_lock<std::mutex> lock;
  Guard() : lock(g_call_mu, std::defer_lock) {
    if (g_level < kThreadMultiple) lock.lock();
  }
};

// Open MPI's shared-memory transport moves a large message only inside MPI calls (MPI_Test drives its progress), so a
// waiting exchange spins while messages move, yields after 50 us without progress and sleeps after 1 ms (a silent
// peer, or a peer still computing, then costs little CPU to the device threads).
struct Backoff {
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  void Progress() { last = std::chrono::steady_clock::now(); }
  void Wait() const {
    const auto idle = std::chrono::steady_clock::now() - last;
    if (idle < std::chrono::microseconds(50)) return;
    if (idle < std::chrono::milliseconds(1)) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(idle < std::chrono::milliseconds(50) ? 20 : 200));
  }
};

}  // namespace

std::string Init() {
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (g_ready) return "";
  if (!g_error.empty()) return g_error;
  if (g_finalized) return g_error = "MPI was already finalized in this process";
  g_error = Load();
  if (!g_error.empty()) return g_error;
  int inited = 0;
  g.Initialized(&inited);
  if (!inited) {
    int provided = 0;
    if (g.InitThread(nullptr, nullptr, kThreadMultiple, &provided) != kSuccess) return g_error = "MPI_Init_thread failed";
    g_level = provided;
  } else {
    g_level = 2;  // initialized by someone else: assume serialized calls are safe
  }
  if (g_level < 2) return g_error = "MPI provides thread level " + std::to_string(g_level) + "; jaxts needs MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE";
  g.CommRank(g.world, &g_rank);
  g.CommSize(g.world, &g_size);
  g_ready = true;
  return "";
}

bool Ready() { return g_ready; }
int Rank() { return g_rank; }
int Size() { return g_size; }
int ThreadLevel() { return g_level; }

void Finalize() {
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (!g_ready || g_finalized) return;
  int done = 0;
  g.Finalized(&done);
  g_finalized = true;
  g_ready = false;
  if (done) return;
  if (!g_peer_silent.load()) {
    g.Finalize();
    return;
  }
  // a process went silent (it may be dead): MPI_Finalize waits for every process and would never return, so it runs
  // on a helper thread that this process stops waiting for after 3 s (it then exits without a finished finalize)
  auto state = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
  auto finished = std::make_shared<bool>(false);
  std::thread([state, finished] {
    g.Finalize();
    std::lock_guard<std::mutex> l(state->first);
    *finished = true;
    state->second.notify_all();
  }).detach();
  std::unique_lock<std::mutex> l(state->first);
  state->second.wait_for(l, std::chrono::seconds(3), [&] { return *finished; });
}

std::string Exchange(const std::vector<Transfer>& peers, int tag, std::chrono::steady_clock::time_point deadline, const std::string& what,
                     const std::function<std::string()>& check) {
  if (!g_ready) return what + ": MPI is not initialized (call distributed.initialize() first)";
  const size_t n = peers.size();
  std::vector<Request> rreq(n, nullptr), sreq(n, nullptr);
  std::vector<bool> rdone(n, false), sdone(n, false);
  for (const Transfer& t : peers)
    if (t.send_bytes > size_t(0x7fffffff) || t.recv_bytes > size_t(0x7fffffff))
      return what + ": a message to process " + std::to_string(t.peer) + " exceeds 2 GiB (not supported yet)";
  {
    Guard guard;
    for (size_t i = 0; i < n; i++) {
      if (g.Irecv(peers[i].recv, int(peers[i].recv_bytes), g.byte, peers[i].peer, tag, g.world, &rreq[i]) != kSuccess)
        return what + ": MPI_Irecv from process " + std::to_string(peers[i].peer) + " failed";
    }
    for (size_t i = 0; i < n; i++) {
      if (peers[i].no_send) {
        sdone[i] = true;
        continue;
      }
      if (g.Isend(peers[i].send, int(peers[i].send_bytes), g.byte, peers[i].peer, tag, g.world, &sreq[i]) != kSuccess)
        return what + ": MPI_Isend to process " + std::to_string(peers[i].peer) + " failed";
    }
  }
  // poll (see Backoff)
  Backoff backoff;
  for (int iter = 0;; iter++) {
    bool all = true, moved = false;
    {
      Guard guard;
      for (size_t i = 0; i < n; i++) {
        int flag = 0;
        if (!rdone[i]) { g.Test(&rreq[i], &flag, nullptr); rdone[i] = flag != 0; moved = moved || flag; }
        if (!sdone[i]) { flag = 0; g.Test(&sreq[i], &flag, nullptr); sdone[i] = flag != 0; moved = moved || flag; }
        all = all && rdone[i] && sdone[i];
      }
    }
    if (all) return "";
    if (moved) backoff.Progress();
    if (std::chrono::steady_clock::now() >= deadline) break;
    if (check && (iter & 15) == 0) {
      const std::string why = check();
      if (!why.empty()) {
        Guard guard;
        for (size_t i = 0; i < n; i++) {
          if (!rdone[i]) {
            g.Cancel(&rreq[i]);
            g.RequestFree(&rreq[i]);
          }
          if (!sdone[i]) g.RequestFree(&sreq[i]);
        }
        return what + ": " + why;
      }
    }
    backoff.Wait();
  }
  // timed out: cancel what is pending so no late message writes into the caller's buffers
  std::string late;
  Guard guard;
  for (size_t i = 0; i < n; i++) {
    if (!rdone[i] || !sdone[i]) late += std::string(late.empty() ? "" : ", ") + std::to_string(peers[i].peer);
    if (!rdone[i]) {
      g.Cancel(&rreq[i]);
      g.RequestFree(&rreq[i]);
    }
    if (!sdone[i]) g.RequestFree(&sreq[i]);
  }
  g_peer_silent = true;
  return what + ": no answer from process(es) [" + late + "] before the deadline";
}

std::string RunStream(const Stream& s, int tag, std::chrono::steady_clock::time_point deadline, const std::string& what,
                      const std::function<std::string()>& check) {
  if (!g_ready) return what + ": MPI is not initialized (call distributed.initialize() first)";
  const size_t nr = s.recvs.size(), ns = s.sends.size();
  std::vector<Request> rreq(nr, nullptr), sreq(ns, nullptr);
  std::vector<bool> sdone(ns, false);
  size_t handled = 0, posted = 0, sent = 0;  // receives handled in order; sends posted in order; sends completed
  // cancels what is pending so no late message writes into the caller's buffers
  const auto give_up = [&](const std::string& why) {
    Guard guard;
    for (size_t i = handled; i < nr; i++)
      if (rreq[i]) {
        g.Cancel(&rreq[i]);
        g.RequestFree(&rreq[i]);
      }
    for (size_t i = 0; i < posted; i++)
      if (!sdone[i]) g.RequestFree(&sreq[i]);
    return what + ": " + why;
  };
  for (const auto& r : s.recvs)
    if (r.second > size_t(0x7fffffff)) return what + ": a message piece exceeds 2 GiB";
  {
    Guard guard;
    for (size_t i = 0; i < nr; i++)
      if (g.Irecv(s.recvs[i].first, int(s.recvs[i].second), g.byte, s.recv_peer, tag, g.world, &rreq[i]) != kSuccess)
        return give_up("MPI_Irecv from process " + std::to_string(s.recv_peer) + " failed");
  }
  Backoff backoff;
  for (int iter = 0;; iter++) {
    bool moved = false;
    {
      Guard guard;
      // post the sends whose piece is ready (in order: the peer matches them in order)
      while (posted < ns && s.send_after[posted] < long(handled)) {
        if (g.Isend(s.sends[posted].first, int(s.sends[posted].second), g.byte, s.send_peer, tag, g.world, &sreq[posted]) != kSuccess)
          return give_up("MPI_Isend to process " + std::to_string(s.send_peer) + " failed");
        posted++;
      }
      for (size_t i = sent; i < posted; i++) {
        if (sdone[i]) continue;
        int flag = 0;
        g.Test(&sreq[i], &flag, nullptr);
        if (flag) { sdone[i] = true; moved = true; }
      }
      while (sent < posted && sdone[sent]) sent++;
    }
    // receives complete in order (one source, one tag): handle the completed prefix outside the MPI lock
    while (handled < nr) {
      int flag = 0;
      {
        Guard guard;
        g.Test(&rreq[handled], &flag, nullptr);
      }
      if (!flag) break;
      rreq[handled] = nullptr;
      if (s.on_recv) s.on_recv(handled);
      handled++;
      moved = true;
    }
    if (handled == nr && sent == ns) return "";
    if (moved) {
      backoff.Progress();
      continue;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string late = handled < nr ? std::to_string(s.recv_peer) : "";
      if (sent < ns && s.send_peer != s.recv_peer) late += std::string(late.empty() ? "" : ", ") + std::to_string(s.send_peer);
      if (late.empty()) late = std::to_string(s.send_peer);
      g_peer_silent = true;
      return give_up("no answer from process(es) [" + late + "] before the deadline");
    }
    if (check && (iter & 15) == 0) {
      const std::string why = check();
      if (!why.empty()) return give_up(why);
    }
    backoff.Wait();
  }
}

std::string ProbeAllreduce(size_t count, int iters, std::vector<double>* seconds) {
  if (!g_ready) return "MPI is not initialized (call distributed.initialize() first)";
  if (!g.Allreduce || !g.Barrier || !g.float32 || !g.op_sum) return "libmpi lacks MPI_Allreduce/MPI_Barrier/ompi_mpi_float/ompi_mpi_op_sum";
  if (count > size_t(0x7fffffff)) return "count exceeds 2^31";
  std::vector<float> in(count), out(count);
  for (size_t i = 0; i < count; i++) in[i] = float(i % 17) * 0.25f + float(g_rank);
  Guard guard;
  g.Barrier(g.world);
  for (int k = 0; k < iters; k++) {
    const auto t0 = std::chrono::steady_clock::now();
    if (g.Allreduce(in.data(), out.data(), int(count), g.float32, g.op_sum, g.world) != kSuccess) return "MPI_Allreduce failed";
    seconds->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  // a sanity check of the result (sum over ranks of in[1]) so a broken probe cannot report a bandwidth
  const float want = 0.25f * float(g_size) + float(g_size * (g_size - 1) / 2);
  if (count > 1 && out[1] != want) return "MPI_Allreduce gave " + std::to_string(out[1]) + " for element 1, expected " + std::to_string(want);
  return "";
}

void MarkPeerSilent() { g_peer_silent = true; }

namespace {
// messages Post sent and MPI has not finished sending (their bytes stay alive until then)
struct Posted {
  std::vector<char> bytes;
  Request req = nullptr;
};
std::mutex g_post_mu;
std::list<Posted> g_posted;
}  // namespace

void Post(int peer, int tag, const void* bytes, size_t n) {
  if (!g_ready) return;
  std::lock_guard<std::mutex> lock(g_post_mu);
  Guard guard;
  // drop the ones already sent
  for (auto it = g_posted.begin(); it != g_posted.end();) {
    int flag = 0;
    g.Test(&it->req, &flag, nullptr);
    it = flag ? g_posted.erase(it) : std::next(it);
  }
  g_posted.emplace_back();
  Posted& p = g_posted.back();
  p.bytes.assign(static_cast<const char*>(bytes), static_cast<const char*>(bytes) + n);
  if (g.Isend(p.bytes.data(), int(n), g.byte, peer, tag, g.world, &p.req) != kSuccess) g_posted.pop_back();
}

bool Poll(int peer, int tag, void* bytes, size_t n) {
  if (!g_ready) return false;
  Guard guard;
  int flag = 0;
  if (g.Iprobe(peer, tag, g.world, &flag, nullptr) != kSuccess || !flag) return false;
  return g.Recv(bytes, int(n), g.byte, peer, tag, g.world, nullptr) == kSuccess;
}

}  // namespace mpi
}  // namespace jaxts
