/** @file The communicator interface the collective custom ops call (one object per rank), and its shared-memory implementation's factory. */
#pragma once

// A communicator moves bytes between the ranks of one launch; the collective ops (native/collective-ops.cc) know
// nothing of how. The shared-memory implementation (native/shm-communicator.cc) serves the device threads of this
// process; a multi-process (MPI) implementation can come behind the same interface: every call names its launch,
// its sequence number within the program and its group, which is what a transport needs to match peers.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace jaxts {

/** Reductions of AllReduce / ReduceScatter. */
enum class ReduceOp : int { kSum = 0, kMax = 1, kMin = 2 };

/** ONNX element types the collectives move (TensorProto.DataType codes). */
enum ElemType : int {
  kFloat32 = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7, kBool = 9,
  kFloat16 = 10, kFloat64 = 11, kUint32 = 12, kUint64 = 13, kBfloat16 = 16
};
/** float16 / bfloat16: reductions widen to float32, fold every input in order, and round once to the storage type. */
inline bool IsHalfFloat(int t) { return t == kFloat16 || t == kBfloat16; }

/**
 * The collectives' kinds: one code for every collective op, communicator and launch record (the lowering's op names
 * and src/compiler/async-collectives.ts's KINDS use the same order).
 */
enum CollectiveKind : int { kAllReduce = 0, kAllGather = 1, kReduceScatter = 2, kAllToAll = 3, kPermute = 4, kAxisIndex = 5 };
/** The op name of a kind ("AllReduce", "CollectivePermute", ...); "?" out of range. */
const char* CollectiveKindName(int kind);
/** "[0, 1, 2]": a list of ranks (or processes) for error messages. */
std::string RankList(const std::vector<int>& ranks);
/** Bytes per element of an ONNX element type, 0 when the collectives do not move it. */
size_t ElementBytes(int onnx_type);

/** One collective call as the peers must agree on it. */
struct CollectiveCall {
  std::string name;        // e.g. "psum" (what the user called), for errors
  std::string axes;        // e.g. "mesh axis 'x'", for errors
  uint64_t launch = 0;     // the launch (program run across devices) this call belongs to
  uint64_t seq = 0;        // index of this collective among those the rank ran in this launch
  std::vector<int> group;  // the ranks taking part, in group order (position = index along the axis)
  int64_t timeout_ms = 30000;
  double* ready_us = nullptr;  // when set: receives the steady-clock time (us) at which every peer had arrived
  std::vector<int64_t> shape;  // the caller's input shape (compared across processes on entry)
};

struct FusedProgram;  // native/fused.h

/**
 * The elementwise epilogue of an all-reduce (AllReduceEpilogue): a fused float32 program whose input 0 is the reduced
 * value and inputs 1.. are `operands` (count elements each, replicated over the group: every rank passes the same
 * bytes), then `scalars`; its outputs go to `outs` (count elements each). The result is what running the program on
 * the all-reduce's output gives, bit for bit.
 */
struct CollectiveEpilogue {
  const FusedProgram* program = nullptr;
  std::vector<const float*> operands;
  std::vector<float> scalars;
  std::vector<float*> outs;
};
/** Evaluates elements [lo, lo + n) of the epilogue on this thread; `reduced` and every `dsts[j]` point at element lo. */
void EvalEpilogue(const CollectiveEpilogue& e, const float* reduced, size_t lo, size_t n, float* const* dsts);

/** The collectives of one rank. Each returns "" on success, else an error message that names the call. */
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /** out[i] = op over the group of in[i]; count elements each. */
  virtual std::string AllReduce(const CollectiveCall& c, const void* in, void* out, size_t count, int type, ReduceOp op) = 0;
  /** out = the inputs of the group's members concatenated in group order (group.size() * count elements). */
  virtual std::string AllGather(const CollectiveCall& c, const void* in, void* out, size_t count, int type) = 0;
  /** in holds group.size() chunks of count elements; out = chunk p (p: this rank's position) reduced over the group. */
  virtual std::string ReduceScatter(const CollectiveCall& c, const void* in, void* out, size_t count, int type, ReduceOp op) = 0;
  /** in and out hold group.size() chunks of count elements; out chunk q = chunk p of member q's input. */
  virtual std::string AllToAll(const CollectiveCall& c, const void* in, void* out, size_t count, int type) = 0;
  /** pairs (source position, destination position): out of each destination = in of its source; others get zeros. */
  virtual std::string CollectivePermute(const CollectiveCall& c, const void* in, void* out, size_t count, int type,
                                        const std::vector<std::pair<int, int>>& pairs) = 0;
  /**
   * out = the epilogue applied to the all-reduce of in (float32, count elements). The default reduces into scratch
   * with AllReduce and evaluates the whole epilogue locally; the shared-memory communicator applies it once per
   * element on the rank that reduces it and writes the results into every peer's outputs.
   */
  virtual std::string AllReduceEpilogue(const CollectiveCall& c, const void* in, size_t count, ReduceOp op, const CollectiveEpilogue& e);
  /** Whether two threads of this rank may call collectives at once (the async ops' communication thread). */
  virtual bool ConcurrentCalls() const { return false; }
  /**
   * Whether every rank of this communicator's groups shares this process's memory, so the async ops may run
   * one-sided collectives (native/mailbox-collectives.cc: post at Start, pull at Done, no communication thread).
   */
  virtual bool OneSided() const { return false; }
  /** This rank's device failed (`why`): a communicator spanning processes tells the other processes (default: nothing). */
  virtual void DeviceFailed(const std::string& why) { (void)why; }
};

/** The shared-memory world of this process: rendezvous of device threads, keyed by (launch, seq, group). */
class ShmWorld {
 public:
  /** Marks a launch failed: its ranks waiting in a collective return `why`, as do later collectives of it. */
  static void Abort(uint64_t launch, const std::string& why);
  /** Forgets a finished launch (its abort mark and any rendezvous a failure left behind). */
  static void Forget(uint64_t launch);
  /** Rendezvous and mailboxes (native/mailbox-collectives.cc) still open (tests: 0 once every launch finished). */
  static size_t OpenRendezvous();
};

/**
 * out[i] = op over ins[0..n)[i] for i < count (a left fold in input order, with the shared-memory communicator's
 * kernels; out may be ins[0]); false for a reduction the type does not have (a bool sum).
 */
bool ReduceBuffers(const void* const* ins, size_t n, void* out, size_t count, int type, ReduceOp op);

/** A communicator for `rank` of a launch of `size` ranks over shared memory (the caller owns it). */
Communicator* NewShmCommunicator(int rank, int size);

}  // namespace jaxts
