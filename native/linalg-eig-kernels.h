/** @file Float64 cyclic-Jacobi eigh and one-sided-Jacobi svd of one matrix (the jaxts.Eigh / jaxts.Svd kernels), step for step as src/backends/interpreter/linalg-kernels-eig.ts. */
#pragma once

#include <cstdint>

namespace jaxts {

/**
 * eigh of a [n, n] (the triangle named by `lower`, mirrored; K.eigh with symmetrizeInput false): v [n, n] holds the
 * eigenvectors in its columns, w [n] the eigenvalues (ascending when `sort`). All NaN for a non-finite input.
 */
void EighOne(const double* a, int64_t n, bool lower, bool sort, double* v, double* w);

/**
 * svd of a [m, n] (K.svd): s [min(m, n)] descending; when computeUv, u [m, full ? m : k] and vt [full ? n : k, n]
 * (k = min(m, n)). All NaN for a non-finite input.
 */
void SvdOne(const double* a, int64_t m, int64_t n, bool full, bool computeUv, double* s, double* u, double* vt);

}  // namespace jaxts
