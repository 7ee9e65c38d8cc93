/** @file Native fused elementwise programs (native/fused.cc) for other native code: the jaxts.Fused ORT custom op. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace jaxts {

struct FusedProgram;

/** Parses a program in the encoding of src/backends/onnx/native-fused.ts (encodeFused); nullptr and *err when malformed. */
FusedProgram* ParseFused(const int32_t* code, size_t len, int num_inputs, int num_scalars, std::string* err);
void FreeFused(FusedProgram* p);
size_t FusedOutputCount(const FusedProgram* p);
/** Elements per chunk: work for one thread at a time. */
int64_t FusedChunkElements();
/** Evaluates chunk `chunk` (elements [chunk * FusedChunkElements(), ...) below n) on this thread. */
void RunFusedChunk(const FusedProgram* p, const float* const* ins, const float* scalars, float* const* outs, int64_t n, int64_t chunk);

/**
 * A program of one output `w - x * s` or `w + x * s` (either operand order of the add and the multiply): x is input 0,
 * w input `w_input` (> 0), s scalar `scalar` (or the constant `value` when scalar < 0). The shape of an SGD update of
 * a reduced gradient, which the cross-process all-reduce evaluates in one pass (native/mpi-ring-collectives.cc).
 */
struct FusedScaledUpdate {
  int w_input = 0, scalar = -1;
  float value = 0.f;
  bool sub = true;       // w - x * s (else an add)
  bool w_first = true;   // add: w + (x * s), else (x * s) + w
  bool s_first = false;  // s * x, else x * s
};
/** Whether p has FusedScaledUpdate's form (then *m describes it). */
bool MatchScaledUpdate(const FusedProgram* p, FusedScaledUpdate* m);

}  // namespace jaxts
