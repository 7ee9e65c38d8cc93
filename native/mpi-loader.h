/** @file Open MPI loaded at run time (dlopen of libmpi): the few MPI calls jaxts uses, and a deadline-bounded point-to-point exchange. */
#pragma once

// No mpi.h is needed to build: the handles are declared here as Open MPI's ABI has them (MPI_Comm, MPI_Datatype and
// MPI_Request are pointers; MPI_COMM_WORLD and MPI_BYTE are the addresses of the global symbols ompi_mpi_comm_world
// and ompi_mpi_byte). Other MPI implementations (MPICH's integer handles) are not supported by this loader.

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace jaxts {
namespace mpi {

/** Loads libmpi ($JAXTS_MPI_LIBRARY, else libmpi.so.40, else libmpi.so) and initializes MPI once (MPI_Init_thread asking for MPI_THREAD_MULTIPLE); "" on success, else why not. */
std::string Init();
/** Whether Init succeeded. */
bool Ready();
/** This process's rank and the process count in MPI_COMM_WORLD (0 and 1 before Init). */
int Rank();
int Size();
/** The thread level MPI provided (0 single, 1 funneled, 2 serialized, 3 multiple). */
int ThreadLevel();
/** MPI_Finalize, once, if initialized (a no-op otherwise). */
void Finalize();

/** One peer of an exchange: bytes sent to and received from process `peer`. */
struct Transfer {
  int peer = 0;
  const void* send = nullptr;
  size_t send_bytes = 0;
  void* recv = nullptr;
  size_t recv_bytes = 0;
  bool no_send = false;  // receive only (e.g. again, after a stale message from an aborted launch)
};

/**
 * Posts every receive and send (nonblocking, MPI_BYTE, `tag`) and polls until all completed or the deadline
 * passed. Returns "" or an error naming the peers whose messages did not arrive (`what` prefixes it); a timed-out
 * exchange cancels its receives so no later message lands in a freed buffer. `check`, when given, is called between
 * polls: a non-empty answer ends the exchange early the same way (the error is `what` + ": " + the answer).
 */
std::string Exchange(const std::vector<Transfer>& peers, int tag, std::chrono::steady_clock::time_point deadline, const std::string& what,
                     const std::function<std::string()>& check = nullptr);

/**
 * An ordered stream of messages: sends go to `send_peer`, receives come from `recv_peer` (a ring step pipelined in
 * pieces). Every receive is posted at once; send k is posted once receive send_after[k] was handled (-1: at once), so
 * piece k of a ring step leaves as soon as the previous step delivered (and folded) it; on_recv(k) runs in order.
 */
struct Stream {
  int send_peer = 0, recv_peer = 0;
  std::vector<std::pair<const void*, size_t>> sends;
  std::vector<long> send_after;  // non-decreasing
  std::vector<std::pair<void*, size_t>> recvs;
  std::function<void(size_t)> on_recv;
};
/** Runs a stream against the deadline like Exchange (same errors, same cancellation). */
std::string RunStream(const Stream& s, int tag, std::chrono::steady_clock::time_point deadline, const std::string& what,
                      const std::function<std::string()>& check = nullptr);

/**
 * The bench probe: `iters` MPI_Allreduce (MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) of `count` floats after a barrier;
 * the seconds of each, or an error. Blocking: only for bench/multiprocess.ts, never for jaxts collectives.
 */
std::string ProbeAllreduce(size_t count, int iters, std::vector<double>* seconds);

/** Records that a process went silent (another transport timed out waiting for it): Finalize then does not wait for it. */
void MarkPeerSilent();

/** Sends `bytes` to process `peer` with `tag` without waiting (the bytes are copied and kept until sent). */
void Post(int peer, int tag, const void* bytes, size_t n);
/** Receives a message of exactly `n` bytes from `peer` with `tag` if one is waiting (MPI_Iprobe); false otherwise. */
bool Poll(int peer, int tag, void* bytes, size_t n);

}  // namespace mpi
}  // namespace jaxts
