/** @file Per-device cost of a partitioned program: FLOPs, bytes accessed, collectives and peak memory (per primitive). */

/** One collective of a per-device program: its kind (psum, all_gather, psum_scatter, all_to_all, ppermute, pmax, pmin),
 * the mesh axes it runs over and the bytes of its per-device operand. */
export interface CollectiveCost {
  kind: string;
  axes: string[];
  bytes: number;
}

/** Cost of one device's program (what `jit(f).lower(...).compile().costAnalysis()` returns). */
export interface CostAnalysis {
  flops: number;
  bytesAccessed: number;
  collectives: CollectiveCost[];
  peakBytesPerDevice: number;
}
