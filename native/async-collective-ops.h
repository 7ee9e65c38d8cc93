/** @file The jaxts.async ONNX Runtime custom ops (CollectiveStart, CollectiveDone: collectives overlapped with compute): registration and the end-of-run hook of a device rank. */
#pragma once

#include <cstdint>
#include <string>

struct OrtStatus;
struct OrtSessionOptions;

namespace jaxts {

/** Registers the custom-op domain "jaxts.async" against the OrtApi table; false when registration failed. */
bool RegisterAsyncCollectiveOps(const void* const* api);

/** Adds the domain to a device program's session options; returns ORT's status (nullptr: ok). */
OrtStatus* AddAsyncCollectiveOpDomain(OrtSessionOptions* options);

/**
 * Called by a rank's executor after its program run: waits for the rank's collectives still in flight (bounded by
 * the collective timeout) and forgets them; returns an error naming a collective whose CollectiveDone never ran.
 */
std::string FinishAsyncCollectives(uint64_t launch, int rank);

}  // namespace jaxts
