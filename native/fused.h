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

}  // namespace jaxts
