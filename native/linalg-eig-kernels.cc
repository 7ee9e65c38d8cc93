/** @file Float64 eigh (Householder tridiagonalisation + implicit QR) and one-sided-Jacobi svd (the jaxts.Eigh / jaxts.Svd kernels), step for step as the TypeScript reference kernels. */
// Every element sees the reference's float64 operations in its order (src/backends/interpreter/linalg-kernels-eig.ts;
// the build passes -ffp-contract=off, so no FMA), so results equal the interpreter's bit for bit. Storage is the
// reference's (eigh's Q row-major, Z^T rows rotated) except for the svd, whose working columns and right rotations are
// kept transposed (a column of the reference is a contiguous row here). svd rotations stay in the reference's cyclic order.

#include "linalg-eig-kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace jaxts {
namespace {

constexpr double kEps = 2.220446049250313e-16;  // 2^-52
constexpr int kMaxSweeps = 100;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool AllFinite(const double* a, int64_t count) {
  for (int64_t i = 0; i < count; i++)
    if (!std::isfinite(a[i])) return false;
  return true;
}

/** Indices sorted by key, ascending or descending, ties (and what JS's (a - b) || (i - j) calls ties) by index. */
std::vector<int64_t> SortedOrder(const std::vector<double>& keys, bool ascending) {
  std::vector<int64_t> idx(keys.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int64_t x, int64_t y) {
    // JS: d = ascending ? k[x] - k[y] : k[y] - k[x]; d || x - y (a NaN difference, inf - inf, falls to the index)
    const double d = ascending ? keys[x] - keys[y] : keys[y] - keys[x];
    if (d < 0) return true;
    if (d > 0) return false;
    return x < y;
  });
  return idx;
}

/** JS's 1 or -1 by sign (NaN -> -1) over |x| + sqrt(x^2 + 1), or 1 / (2 x) past 1e150: tan of the smaller rotation. */
inline double SmallerRoot(double x, bool squareFirst) {
  if (std::fabs(x) > 1e150) return 1 / (2 * x);
  const double r = squareFirst ? std::sqrt(x * x + 1) : std::sqrt(1 + x * x);
  return (x >= 0 ? 1.0 : -1.0) / (std::fabs(x) + r);
}

/** The reference's completeOrthonormal on u [rows, cols] (row-major): fills the columns with valid[c] false. */
void CompleteOrthonormal(double* u, int64_t rows, int64_t cols, std::vector<char>& valid) {
  std::vector<double> r(size_t(rows) + 1);
  for (int64_t j = 0; j < cols; j++) {
    if (valid[j]) continue;
    int64_t best = 0;
    double bestCover = HUGE_VAL;
    for (int64_t i = 0; i < rows; i++) {
      double cover = 0;
      for (int64_t c = 0; c < cols; c++)
        if (valid[c]) cover += u[i * cols + c] * u[i * cols + c];
      if (cover < bestCover) {
        bestCover = cover;
        best = i;
      }
    }
    std::fill(r.begin(), r.end(), 0.0);
    r[best] = 1;
    for (int pass = 0; pass < 2; pass++) {
      for (int64_t c = 0; c < cols; c++) {
        if (!valid[c]) continue;
        double d = 0;
        for (int64_t i = 0; i < rows; i++) d += u[i * cols + c] * r[i];
        for (int64_t i = 0; i < rows; i++) r[i] -= d * u[i * cols + c];
      }
    }
    double norm = 0;
    for (int64_t i = 0; i < rows; i++) norm += r[i] * r[i];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < rows; i++) u[i * cols + j] = r[i] / norm;
    valid[j] = 1;
  }
}

}  // namespace

// GCC -O3 vectorizes the rotations' row loops (independent elements, each with its own operations in order).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O3")
#endif

namespace {

/** Pairs of columns whose Jacobi dot products run side by side (one-sided Jacobi svd). */
constexpr int kLanes = 4;
struct Pair {
  double* wp;
  double* wq;
  int64_t p, q;
  double alpha, beta, gamma;
};

/** alpha = w_p . w_p, beta = w_q . w_q, gamma = w_p . w_q of each pair, every sum in ascending i as the reference. */
void DotProducts(Pair* pr, int count, int64_t R) {
  double a[kLanes] = {0, 0, 0, 0}, b[kLanes] = {0, 0, 0, 0}, g[kLanes] = {0, 0, 0, 0};
  const double* wp[kLanes];
  const double* wq[kLanes];
  for (int k = 0; k < kLanes; k++) {
    // unused lanes read pair 0's columns (their sums are discarded)
    wp[k] = pr[k < count ? k : 0].wp;
    wq[k] = pr[k < count ? k : 0].wq;
  }
  for (int64_t i = 0; i < R; i++)
    for (int k = 0; k < kLanes; k++) {
      const double x = wp[k][i], y = wq[k][i];
      a[k] += x * x;
      b[k] += y * y;
      g[k] += x * y;
    }
  for (int k = 0; k < count; k++) {
    pr[k].alpha = a[k];
    pr[k].beta = b[k];
    pr[k].gamma = g[k];
  }
}

/** (x, y) <- (c x - s y, s x + c y) elementwise over n entries (a plane rotation of two columns). */
void Rotate(double* __restrict x, double* __restrict y, int64_t n, double c, double s) {
  for (int64_t i = 0; i < n; i++) {
    const double u = x[i], v = y[i];
    x[i] = c * u - s * v;
    y[i] = s * u + c * v;
  }
}

}  // namespace

/** The reference's tridiagonalize: Householder reduction of the symmetric A (full storage) to d, e and Q. */
void Tridiagonalize(double* __restrict A, int64_t n, double* d, double* e, double* __restrict q, double* __restrict v,
                    double* __restrict p) {
  std::fill(q, q + n * n, 0.0);
  for (int64_t i = 0; i < n; i++) q[i * n + i] = 1;
  for (int64_t k = 0; k + 2 < n; k++) {
    const int64_t m = n - k - 1;
    const double x0 = A[(k + 1) * n + k];
    double sigma = 0;
    for (int64_t i = k + 2; i < n; i++) sigma += A[i * n + k] * A[i * n + k];
    if (sigma == 0) continue;
    const double norm = std::sqrt(x0 * x0 + sigma);
    const double alpha = x0 >= 0 ? -norm : norm;
    v[0] = x0 - alpha;
    for (int64_t i = 1; i < m; i++) v[i] = A[(k + 1 + i) * n + k];
    const double tau = 2 / (v[0] * v[0] + sigma);
    double vp = 0;
    for (int64_t i = 0; i < m; i++) {
      const double* row = A + (k + 1 + i) * n + k + 1;
      double s = 0;
      for (int64_t j = 0; j < m; j++) s += row[j] * v[j];
      p[i] = tau * s;
      vp += v[i] * p[i];
    }
    const double half = 0.5 * tau * vp;
    for (int64_t i = 0; i < m; i++) p[i] -= half * v[i];
    for (int64_t i = 0; i < m; i++) {
      double* row = A + (k + 1 + i) * n + k + 1;
      const double vi = v[i], wi = p[i];
      for (int64_t j = 0; j < m; j++) row[j] -= vi * p[j] + wi * v[j];
    }
    A[(k + 1) * n + k] = alpha;
    for (int64_t r = 1; r < n; r++) {
      double* row = q + r * n + k + 1;
      double s = 0;
      for (int64_t j = 0; j < m; j++) s += row[j] * v[j];
      s *= tau;
      for (int64_t j = 0; j < m; j++) row[j] -= s * v[j];
    }
  }
  for (int64_t i = 0; i < n; i++) d[i] = A[i * n + i];
  for (int64_t i = 0; i + 1 < n; i++) e[i] = A[(i + 1) * n + i];
}

/** The reference's tridiagonalQr: Wilkinson-shift implicit QR on (d, e), rotations applied to the rows of zt. */
bool TridiagonalQr(double* d, double* e, int64_t n, double* zt) {
  const double kTiny = std::ldexp(1.0, -1022);
  const int64_t maxSteps = 30 * n;
  int64_t steps = 0;
  int64_t hi = n - 1;
  while (hi > 0) {
    int64_t lo = hi;
    while (lo > 0) {
      const double x = std::fabs(e[lo - 1]);
      if (x <= kEps * (std::fabs(d[lo - 1]) + std::fabs(d[lo])) || x <= kTiny) {
        e[lo - 1] = 0;
        break;
      }
      lo--;
    }
    if (lo == hi) {
      hi--;
      continue;
    }
    if (steps++ >= maxSteps) return false;
    const double dd = 0.5 * (d[hi - 1] - d[hi]);
    const double ee = e[hi - 1];
    const double rr = std::sqrt(dd * dd + ee * ee);
    const double mu = d[hi] - (ee * ee) / (dd >= 0 ? dd + rr : dd - rr);
    double x = d[lo] - mu;
    double z = e[lo];
    for (int64_t k = lo; k < hi; k++) {
      const double r = std::sqrt(x * x + z * z);
      const double c = r == 0 ? 1 : x / r;
      const double s = r == 0 ? 0 : -z / r;
      if (k > lo) e[k - 1] = r;
      const double a = d[k], b = e[k], f = d[k + 1];
      const double cs = c * s, c2 = c * c, s2 = s * s;
      d[k] = c2 * a - 2 * cs * b + s2 * f;
      d[k + 1] = s2 * a + 2 * cs * b + c2 * f;
      e[k] = cs * (a - f) + (c2 - s2) * b;
      if (k + 1 < hi) {
        z = -s * e[k + 1];
        e[k + 1] = c * e[k + 1];
        x = e[k];
      }
      Rotate(zt + k * n, zt + (k + 1) * n, n, c, s);
    }
  }
  return true;
}

void EighOne(const double* a, int64_t n, bool lower, bool sort, double* v, double* w) {
  const int64_t nn = n * n;
  if (!AllFinite(a, nn)) {
    std::fill(v, v + nn, kNaN);
    std::fill(w, w + n, kNaN);
    return;
  }
  std::vector<double> A(size_t(nn) + 1), Q(size_t(nn) + 1), ZT(size_t(nn) + 1);
  std::vector<double> d(size_t(n) + 1), e(size_t(n) + 1), hv(size_t(n) + 1), hp(size_t(n) + 1);
  double maxAbs = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      const double x = lower == (i >= j) ? a[i * n + j] : a[j * n + i];
      A[i * n + j] = x;
      maxAbs = std::max(maxAbs, std::fabs(x));
    }
  // a power of two putting the largest entry in [1, 2) (exact)
  double scale = 1;
  if (maxAbs > 0) {
    const double cap = std::ldexp(1.0, 1000);
    while (maxAbs * scale >= 2) scale *= 0.5;
    while (maxAbs * scale < 1 && scale < cap) scale *= 2;
    for (int64_t i = 0; i < nn; i++) A[i] *= scale;
  }
  Tridiagonalize(A.data(), n, d.data(), e.data(), Q.data(), hv.data(), hp.data());
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) ZT[j * n + i] = Q[i * n + j];
  if (!TridiagonalQr(d.data(), e.data(), n, ZT.data())) {
    std::fill(v, v + nn, kNaN);
    std::fill(w, w + n, kNaN);
    return;
  }
  std::vector<double> diag(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) diag[i] = d[i] / scale;
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (sort) order = SortedOrder(diag, true);
  else std::iota(order.begin(), order.end(), 0);
  for (int64_t j = 0; j < n; j++) {
    const int64_t src = order[j];
    w[j] = diag[src];
    for (int64_t r = 0; r < n; r++) v[r * n + j] = ZT[src * n + r];
  }
}

void SvdOne(const double* a, int64_t m, int64_t n, bool full, bool computeUv, double* sOut, double* u, double* vt) {
  const int64_t k = std::min(m, n);
  const bool transposed = m < n;
  const int64_t R = transposed ? n : m, C = transposed ? m : n;
  const int64_t uCols = full ? m : k, vtRows = full ? n : k;
  if (!AllFinite(a, m * n)) {
    std::fill(sOut, sOut + k, kNaN);
    if (computeUv) {
      std::fill(u, u + m * uCols, kNaN);
      std::fill(vt, vt + vtRows * n, kNaN);
    }
    return;
  }
  // W = a (or a^T) scaled by a power of two (exact); WT row j = working column j
  double maxAbs = 0;
  for (int64_t i = 0; i < m * n; i++) maxAbs = std::max(maxAbs, std::fabs(a[i]));
  // 2 ** Math.floor(Math.log2(maxAbs)): V8's log2 and glibc's agree on the integer part (both exact at powers of two)
  const double scale = maxAbs > 0 ? std::ldexp(1.0, int(std::floor(std::log2(maxAbs)))) : 1;
  std::vector<double> WT(size_t(R * C) + 1), VT(size_t(C * C) + 1, 0.0);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      const double x = a[i * n + j] / scale;
      if (transposed) WT[i * R + j] = x;
      else WT[j * R + i] = x;
    }
  for (int64_t i = 0; i < C; i++) VT[i * C + i] = 1;
  const double tol = double(std::max<int64_t>(R, 1)) * kEps;
  for (int sweep = 0; sweep < kMaxSweeps; sweep++) {
    bool rotated = false;
    // The reference's cyclic order (0,1), (0,2), ..., (1,2), ... in blocks of kLanes rows run in lockstep: at step t
    // row p0 + j takes the pair (p0 + j, t - j). Every pair with an index in common with it comes earlier in the
    // reference order and runs at an earlier step, and the pairs of one step share no column, so each rotation reads
    // exactly the columns the reference's does (a rotation touches only its two columns): bit-equal results, and
    // the pairs' dot products, each a sum in order, run as independent chains side by side.
    for (int64_t p0 = 0; p0 < C - 1; p0 += kLanes) {
      const int64_t rows = std::min<int64_t>(kLanes, C - 1 - p0);
      for (int64_t t = p0 + 1; t <= C - 1 + rows - 1; t++) {
        Pair pairs[kLanes];
        int count = 0;
        for (int64_t j = 0; j < rows; j++) {
          const int64_t q = t - j;
          if (q > p0 + j && q < C) pairs[count++] = {WT.data() + (p0 + j) * R, WT.data() + q * R, p0 + j, q, 0, 0, 0};
        }
        DotProducts(pairs, count, R);
        for (int b = 0; b < count; b++) {
          Pair& pr = pairs[b];
          const double alpha = pr.alpha, beta = pr.beta, gamma = pr.gamma;
          if (gamma == 0 || std::fabs(gamma) <= tol * std::sqrt(alpha) * std::sqrt(beta)) continue;
          rotated = true;
          // the rotation zeroing w_p . w_q: zeta = (beta - alpha) / (2 gamma), t = tan(phi) (smaller root)
          const double zeta = (beta - alpha) / (2 * gamma);
          const double tn = SmallerRoot(zeta, false);
          const double c = 1 / std::sqrt(1 + tn * tn);
          const double sn = c * tn;
          Rotate(pr.wp, pr.wq, R, c, sn);
          if (computeUv) Rotate(VT.data() + pr.p * C, VT.data() + pr.q * C, C, c, sn);
        }
      }
    }
    if (!rotated) break;
  }
  std::vector<double> norms(static_cast<size_t>(C));
  for (int64_t j = 0; j < C; j++) {
    double ss = 0;
    for (int64_t i = 0; i < R; i++) ss += WT[j * R + i] * WT[j * R + i];
    norms[j] = std::sqrt(ss);
  }
  const std::vector<int64_t> order = SortedOrder(norms, false);
  for (int64_t j = 0; j < C; j++) sOut[j] = norms[order[j]] * scale;
  if (!computeUv) return;
  // the left factor of W (R x ucW) and the right factor (C x C), in sorted order
  const int64_t ucW = full ? R : C;
  std::vector<double> Uw(size_t(R * ucW) + 1, 0.0);
  std::vector<char> valid(size_t(ucW) + 1, 0);
  for (int64_t j = 0; j < C; j++) {
    const int64_t src = order[j];
    const double sj = norms[src];
    if (sj > 0) {
      for (int64_t i = 0; i < R; i++) Uw[i * ucW + j] = WT[src * R + i] / sj;
      valid[j] = 1;
    }
  }
  CompleteOrthonormal(Uw.data(), R, ucW, valid);
  // Vs[i][j] = V[i][order[j]] = VT[order[j]][i]
  if (!transposed) {
    // a = Uw diag(s) Vs^T: u = Uw [m, uCols], vt = Vs^T (C = n = k)
    std::copy(Uw.begin(), Uw.begin() + R * ucW, u);
    for (int64_t i = 0; i < C; i++)
      for (int64_t j = 0; j < C; j++) vt[i * n + j] = VT[order[i] * C + j];
  } else {
    // a^T = Uw diag(s) Vs^T, so a = Vs diag(s) Uw^T: u = Vs [m, m], vt = Uw^T [vtRows, n]
    for (int64_t i = 0; i < C; i++)
      for (int64_t j = 0; j < C; j++) u[i * C + j] = VT[order[j] * C + i];
    for (int64_t i = 0; i < vtRows; i++)
      for (int64_t j = 0; j < n; j++) vt[i * n + j] = Uw[j * ucW + i];
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

}  // namespace jaxts
