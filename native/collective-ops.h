/** @file The jaxts.collectives ONNX Runtime custom ops (AllReduce, AllGather, ReduceScatter, AllToAll, CollectivePermute, AxisIndex): registration interface. */
#pragma once

struct OrtStatus;
struct OrtSessionOptions;

namespace jaxts {

/** Registers the custom-op domain "jaxts.collectives" against the OrtApi table; false when registration failed. */
bool RegisterCollectiveOps(const void* const* api);

/** Adds the domain to a device program's session options; returns ORT's status (nullptr: ok). */
OrtStatus* AddCollectiveOpDomain(OrtSessionOptions* options);

}  // namespace jaxts
