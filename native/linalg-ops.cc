/** @file ONNX Runtime custom ops jaxts.Lu, jaxts.TriangularSolve, jaxts.Cholesky, jaxts.Qr, jaxts.Eigh, jaxts.Svd: the float64 reference kernels of src/backends/interpreter/linalg-kernels*.ts step for step, batched over leading dims. */
// Every element sees the same float64 operations in the same order as the TypeScript reference (the build passes
// -ffp-contract=off, so a - b * c is never fused), so results equal the interpreter's bit for bit. Loops are only
// reordered where elements are independent (the columns of a left-side solve and of a Householder update, the rows of
// a Schur update), and work is split over ORT's intra-op threads along those independent directions only. The lowering
// (src/lowerings/linalg-native.ts) casts float32 operands to float64 and rounds the results back, as the reference
// impls do.

#include "linalg-ops.h"

#include "custom-op-util.h"

#include "linalg-eig-kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace jaxts {
namespace {

using namespace ort;
using St = OrtStatus*;
const void* const* g_api = nullptr;

template <typename F>
F fn(Slot s) { return ort::At<F>(g_api, s); }

constexpr int kDouble = 11, kInt32 = 6;  // ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE / INT32

St Error(const char* op, const std::string& msg) { return OpError(g_api, op, msg); }

St Input(OrtKernelContext* ctx, size_t i, KernelTensor* t) {
  const OrtValue* v = nullptr;
  if (St s = fn<St (*)(const OrtKernelContext*, size_t, const OrtValue**)>(kKernelContextGetInput)(ctx, i, &v)) return s;
  return DescribeTensor(g_api, v, t);
}
St Output(OrtKernelContext* ctx, size_t i, const std::vector<int64_t>& dims, void** data) {
  OrtValue* v = nullptr;
  if (St s = fn<St (*)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**)>(kKernelContextGetOutput)(ctx, i, dims.data(), dims.size(), &v)) return s;
  *data = nullptr;
  KernelTensor t;
  if (St s = DescribeTensor(g_api, v, &t)) return s;
  *data = t.data;
  return nullptr;
}
/** A float64 batch of matrices [..., r, c]: checks the type and rank; batch = product of the leading dims. */
St Matrices(const char* op, const char* what, const KernelTensor& t, int64_t* batch, int64_t* r, int64_t* c) {
  if (t.type != kDouble) return Error(op, std::string(what) + " must be float64 (element type " + std::to_string(t.type) + ")");
  if (t.dims.size() < 2) return Error(op, std::string(what) + " must have rank >= 2, got " + ShapeStr(t.dims));
  *r = t.dims[t.dims.size() - 2];
  *c = t.dims[t.dims.size() - 1];
  *batch = 1;
  for (size_t i = 0; i + 2 < t.dims.size(); i++) *batch *= t.dims[i];
  return nullptr;
}

template <typename Task>
St ParallelFor(OrtKernelContext* ctx, size_t n, Task& task) { return OpParallelFor(g_api, ctx, n, task); }

// ---------------------------------------------------------------- kernels (one matrix each)
// GCC at -O2 leaves these row loops scalar (its cheap vectorizer cost model rejects them); -O3's vectorizer and
// unrolling run them ~1.6-2x faster (n = 300, measured in notes/linalg.md). Vectorizing independent elements keeps
// every element's operations and their order, so results do not change (and -ffp-contract=off still forbids FMA).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O3")
#endif
/** Cholesky of the lower triangle of a [n, n] into out (K.cholesky with symmetrizeInput false); all NaN on breakdown. */
void CholeskyOne(const double* a, double* out, int64_t n) {
  std::fill(out, out + n * n, 0.0);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j <= i; j++) out[i * n + j] = a[i * n + j];
  for (int64_t j = 0; j < n; j++) {
    // L[j][j] = sqrt(A[j][j] - sum_{k<j} L[j][k]^2)
    const double* lj = out + j * n;
    double d = lj[j];
    for (int64_t k = 0; k < j; k++) d -= lj[k] * lj[k];
    if (!(d > 0)) {
      std::fill(out, out + n * n, std::numeric_limits<double>::quiet_NaN());
      return;
    }
    const double ljj = std::sqrt(d);
    out[j * n + j] = ljj;
    // L[i][j] = (A[i][j] - sum_{k<j} L[i][k] L[j][k]) / L[j][j]; four rows at once (independent chains, each in order)
    int64_t i = j + 1;
    for (; i + 4 <= n; i += 4) {
      const double *r0 = out + i * n, *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
      double s0 = r0[j], s1 = r1[j], s2 = r2[j], s3 = r3[j];
      for (int64_t k = 0; k < j; k++) {
        const double l = lj[k];
        s0 -= r0[k] * l;
        s1 -= r1[k] * l;
        s2 -= r2[k] * l;
        s3 -= r3[k] * l;
      }
      out[i * n + j] = s0 / ljj;
      out[(i + 1) * n + j] = s1 / ljj;
      out[(i + 2) * n + j] = s2 / ljj;
      out[(i + 3) * n + j] = s3 / ljj;
    }
    for (; i < n; i++) {
      const double* r = out + i * n;
      double s = r[j];
      for (int64_t k = 0; k < j; k++) s -= r[k] * lj[k];
      out[i * n + j] = s / ljj;
    }
  }
}

/**
 * Left-side substitution op(A) X = B in place on columns [c0, c1) of x [m, n] (K.triangularSolve, leftSide): row i,
 * forward when op(A) is lower and backward otherwise, gets x[i, :] -= op[i][kk] x[kk, :] over the solved rows kk in
 * ascending order, then x[i, :] /= op[i][i] unless unit. op(A) = A^T when trans.
 */
void SubstituteLeft(const double* a, double* x, int64_t m, int64_t n, bool lower, bool trans, bool unit, int64_t c0,
                    int64_t c1) {
  const bool opLower = lower != trans;
  for (int64_t step = 0; step < m; step++) {
    const int64_t i = opLower ? step : m - 1 - step;
    const int64_t lo = opLower ? 0 : i + 1, hi = opLower ? i : m;
    double* __restrict xi = x + i * n;
    for (int64_t kk = lo; kk < hi; kk++) {
      const double f = trans ? a[kk * m + i] : a[i * m + kk];
      const double* __restrict xk = x + kk * n;
      for (int64_t c = c0; c < c1; c++) xi[c] -= f * xk[c];
    }
    if (!unit) {
      const double d = a[i * m + i];
      for (int64_t c = c0; c < c1; c++) xi[c] /= d;
    }
  }
}

/** src [r, c] -> dst [c, r]. */
void Transpose(const double* src, double* dst, int64_t r, int64_t c) {
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) dst[j * r + i] = src[i * c + j];
}

/**
 * LU with partial pivoting of w [m, n] in place (K.lu, LAPACK getrf): the pivot of column j is the first row p >= j
 * of maximal |w[p, j]| (v > best, so NaNs below never win and a NaN diagonal keeps p = j); rows j and p swap; the
 * column below is divided by a nonzero pivot; the trailing block gets w[i, c] -= w[i, j] w[j, c].
 */
void LuOne(double* w, int32_t* piv, int32_t* perm, int64_t m, int64_t n) {
  const int64_t k = std::min(m, n);
  for (int64_t j = 0; j < k; j++) {
    int64_t p = j;
    double best = std::fabs(w[j * n + j]);
    for (int64_t i = j + 1; i < m; i++) {
      const double v = std::fabs(w[i * n + j]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    piv[j] = int32_t(p);
    if (p != j)
      for (int64_t c = 0; c < n; c++) std::swap(w[j * n + c], w[p * n + c]);
    const double pv = w[j * n + j];
    if (pv != 0)
      for (int64_t i = j + 1; i < m; i++) w[i * n + j] /= pv;
    const double* __restrict uj = w + j * n;
    for (int64_t i = j + 1; i < m; i++) {
      double* __restrict wi = w + i * n;
      const double l = wi[j];
      for (int64_t c = j + 1; c < n; c++) wi[c] -= l * uj[c];
    }
  }
  // permutation: the identity with the swaps (j, piv[j]) applied in order
  for (int64_t i = 0; i < m; i++) perm[i] = int32_t(i);
  for (int64_t j = 0; j < k; j++) std::swap(perm[j], perm[piv[j]]);
}

/** JavaScript's Math.max(x, y) on non-negative values: NaN when either is NaN. */
double JsMax(double x, double y) { return std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::quiet_NaN() : (y > x ? y : x); }

/** Math.hypot(a, b) as V8 computes it: inf if either is inf, NaN if either is NaN, else max * sqrt((|a|/max)^2 + (|b|/max)^2). */
double JsHypot(double a, double b) {
  const double x = std::fabs(a), y = std::fabs(b);
  if (x == HUGE_VAL || y == HUGE_VAL) return HUGE_VAL;
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
  const double mx = y > x ? y : x;
  if (mx == 0) return 0;
  // V8's Kahan-compensated sum of the scaled squares: for two terms the compensation stays exactly 0
  const double p = x / mx, q = y / mx;
  const double sum = p * p + q * q;
  return std::sqrt(sum) * mx;
}

/** ||w[start + t stride]||, t < count, scaled by the largest magnitude (the reference's scaledNorm; NaN/inf pass through). */
double ScaledNorm(const double* w, int64_t stride, int64_t count) {
  double scale = 0;
  for (int64_t t = 0; t < count; t++) scale = JsMax(scale, std::fabs(w[t * stride]));
  if (scale == 0 || !std::isfinite(scale)) return scale;
  double ss = 0;
  for (int64_t t = 0; t < count; t++) {
    const double v = w[t * stride] / scale;
    ss += v * v;
  }
  return scale * std::sqrt(ss);
}

/**
 * Applies H = I - tau v v^T (v = [1; x[j+1..m) of column j of `v`, stride ldv]) to columns [c0, c1) of rows j..m of
 * q [m, ldq]: s_c = tau (q[j, c] + sum_{i>j} v_i q[i, c]) in ascending i; a column with s_c == 0 is left alone;
 * otherwise q[j, c] -= s_c and q[i, c] -= s_c v_i. `s` is scratch of c1 entries.
 */
void ApplyReflector(const double* v, int64_t ldv, int64_t j, double tau, double* q, int64_t ldq, int64_t m, int64_t c0,
                    int64_t c1, double* s) {
  for (int64_t c = c0; c < c1; c++) s[c] = q[j * ldq + c];
  for (int64_t i = j + 1; i < m; i++) {
    const double vi = v[i * ldv + j];
    const double* __restrict qi = q + i * ldq;
    for (int64_t c = c0; c < c1; c++) s[c] += vi * qi[c];
  }
  for (int64_t c = c0; c < c1; c++) {
    s[c] *= tau;
    if (s[c] != 0) q[j * ldq + c] -= s[c];
  }
  for (int64_t i = j + 1; i < m; i++) {
    const double vi = v[i * ldv + j];
    double* __restrict qi = q + i * ldq;
    for (int64_t c = c0; c < c1; c++) qi[c] = s[c] != 0 ? qi[c] - s[c] * vi : qi[c];
  }
}

/**
 * Householder QR of w [m, n] (K.qr: dgeqrf with dlarfg's reflectors, then dorgqr): reflector j has
 * beta = -sign(alpha) hypot(alpha, ||x||), tau = (beta - alpha) / beta, v = [1; x / (alpha - beta)] (tau = 0 when
 * ||x|| = 0). Writes q [m, qc] and r [rr, n] (qc = rr = m when full, else min(m, n)). `s` is scratch of max(n, qc).
 */
void QrOne(double* w, double* taus, double* q, double* r, int64_t m, int64_t n, bool full, double* s) {
  const int64_t k = std::min(m, n), qc = full ? m : k, rr = full ? m : k;
  for (int64_t j = 0; j < k; j++) {
    taus[j] = 0;
    const double alpha = w[j * n + j];
    const double xnorm = ScaledNorm(w + (j + 1) * n + j, n, m - j - 1);
    if (xnorm == 0) continue;  // H_j = I
    const bool negAlpha = alpha < 0 || (alpha == 0 && std::signbit(alpha));
    const double beta = (negAlpha ? 1.0 : -1.0) * JsHypot(alpha, xnorm);
    const double tau = (beta - alpha) / beta;
    const double inv = 1 / (alpha - beta);
    for (int64_t i = j + 1; i < m; i++) w[i * n + j] *= inv;
    w[j * n + j] = beta;
    taus[j] = tau;
    ApplyReflector(w, n, j, tau, w, n, m, j + 1, n, s);
  }
  // R: the upper triangle of the first rr rows
  std::fill(r, r + rr * n, 0.0);
  for (int64_t i = 0; i < std::min(rr, m); i++)
    for (int64_t c = i; c < n; c++) r[i * n + c] = w[i * n + c];
  // Q = H_0 ... H_{k-1} applied to the first qc columns of the identity, last reflector first
  std::fill(q, q + m * qc, 0.0);
  for (int64_t i = 0; i < qc; i++) q[i * qc + i] = 1;
  for (int64_t j = k - 1; j >= 0; j--) {
    if (taus[j] == 0) continue;
    ApplyReflector(w, n, j, taus[j], q, qc, m, j, qc, s);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

// ---------------------------------------------------------------- ORT kernels
struct TsAttrs {
  bool left = false, lower = false, trans = false, unit = false;
};

// Cholesky and Lu have no attributes: their kernel is one shared placeholder (ORT expects a non-null kernel)
int g_plain_kernel = 0;
void* NoKernel(const CustomOp*, const void*, const OrtKernelInfo*) { return &g_plain_kernel; }
St CreatePlainV2(const CustomOp*, const void*, const OrtKernelInfo*, void** out) {
  *out = &g_plain_kernel;
  return nullptr;
}
void DestroyPlain(void*) {}
St CreateTsV2(const CustomOp*, const void*, const OrtKernelInfo* info, void** out) {
  auto* k = new TsAttrs();
  k->left = KernelIntAttr(g_api, info, "left_side", 0) != 0;
  k->lower = KernelIntAttr(g_api, info, "lower", 0) != 0;
  k->trans = KernelIntAttr(g_api, info, "transpose_a", 0) != 0;
  k->unit = KernelIntAttr(g_api, info, "unit_diagonal", 0) != 0;
  *out = k;
  return nullptr;
}
constexpr auto CreateTs = CreateKernelV1<CreateTsV2>;
constexpr auto DestroyTs = DestroyKernel<TsAttrs>;

St CholeskyCompute(void*, OrtKernelContext* ctx) {
  KernelTensor a;
  if (St s = Input(ctx, 0, &a)) return s;
  int64_t batch = 0, r = 0, n = 0;
  if (St s = Matrices("Cholesky", "a", a, &batch, &r, &n)) return s;
  if (r != n) return Error("Cholesky", "a must be a batch of square matrices, got " + ShapeStr(a.dims));
  void* out = nullptr;
  if (St s = Output(ctx, 0, a.dims, &out)) return s;
  if (a.count == 0) return nullptr;
  const double* A = static_cast<const double*>(a.data);
  double* L = static_cast<double*>(out);
  auto task = [&](size_t b) { CholeskyOne(A + b * n * n, L + b * n * n, n); };
  return ParallelFor(ctx, size_t(batch), task);
}

St LuCompute(void*, OrtKernelContext* ctx) {
  KernelTensor a;
  if (St s = Input(ctx, 0, &a)) return s;
  int64_t batch = 0, m = 0, n = 0;
  if (St s = Matrices("Lu", "a", a, &batch, &m, &n)) return s;
  if (m > INT32_MAX) return Error("Lu", "too many rows for int32 pivots: " + ShapeStr(a.dims));
  const int64_t k = std::min(m, n);
  std::vector<int64_t> pd(a.dims.begin(), a.dims.end() - 1), qd = pd;
  pd.back() = k;
  void *lu = nullptr, *piv = nullptr, *perm = nullptr;
  if (St s = Output(ctx, 0, a.dims, &lu)) return s;
  if (St s = Output(ctx, 1, pd, &piv)) return s;
  if (St s = Output(ctx, 2, qd, &perm)) return s;
  if (batch == 0) return nullptr;
  if (a.count) std::memcpy(lu, a.data, a.count * sizeof(double));
  auto task = [&](size_t b) {
    LuOne(static_cast<double*>(lu) + b * m * n, static_cast<int32_t*>(piv) + b * k, static_cast<int32_t*>(perm) + b * m, m, n);
  };
  return ParallelFor(ctx, size_t(batch), task);
}

/** Fewest columns of the right-hand side per parallel task of a left-side solve. */
constexpr int64_t kMinSolveBand = 32;
unsigned HardwareThreads() {
  static const unsigned n = [] { unsigned h = std::thread::hardware_concurrency(); return h ? h : 1u; }();
  return n;
}

St TsCompute(void* kp, OrtKernelContext* ctx) {
  const TsAttrs& p = *static_cast<TsAttrs*>(kp);
  KernelTensor a, b;
  if (St s = Input(ctx, 0, &a)) return s;
  if (St s = Input(ctx, 1, &b)) return s;
  int64_t batch = 0, ka = 0, ka2 = 0, bb = 0, m = 0, n = 0;
  if (St s = Matrices("TriangularSolve", "a", a, &batch, &ka, &ka2)) return s;
  if (St s = Matrices("TriangularSolve", "b", b, &bb, &m, &n)) return s;
  const int64_t need = p.left ? m : n;
  if (ka != ka2 || ka != need || bb != batch || a.dims.size() != b.dims.size())
    return Error("TriangularSolve", "a" + ShapeStr(a.dims) + " must be a batch of square " + std::to_string(need) + "x" +
                                        std::to_string(need) + " matrices matching b" + ShapeStr(b.dims) +
                                        (p.left ? " (left_side: b's rows)" : " (right side: b's columns)"));
  void* out = nullptr;
  if (St s = Output(ctx, 0, b.dims, &out)) return s;
  if (b.count == 0) return nullptr;
  const double* A = static_cast<const double*>(a.data);
  double* X = static_cast<double*>(out);
  const int64_t kk = need;
  if (p.left) {
    // op(A) X = B: columns of X are independent; split (matrix, column band) pairs over the threads
    std::memcpy(X, b.data, b.count * sizeof(double));
    const double work = double(kk) * double(kk) * double(n) * double(batch);
    // one band per hardware thread (a single-threaded session runs them one after the other: few bands, long rows)
    int64_t bands = 1;
    if (work >= double(1 << 20) && batch < int64_t(HardwareThreads()))
      bands = std::max<int64_t>(1, std::min<int64_t>(HardwareThreads(), n / kMinSolveBand));
    const int64_t band = (n + bands - 1) / bands;
    auto task = [&](size_t t) {
      const int64_t bi = int64_t(t) / bands, c0 = (int64_t(t) % bands) * band;
      const int64_t c1 = std::min(n, c0 + band);
      SubstituteLeft(A + bi * kk * kk, X + bi * m * n, m, n, p.lower, p.trans, p.unit, c0, c1);
    };
    return ParallelFor(ctx, size_t(batch * bands), task);
  }
  // X op(A) = B is op(A)^T X^T = B^T: for element (r, j) the reference subtracts x[r, i] op[i][j] over ascending i
  // and divides by A[j][j], exactly what the left-side substitution on X^T with op^T does (the same chain per element)
  auto task = [&](size_t bi) {
    std::vector<double> xt(size_t(m * n));
    Transpose(static_cast<const double*>(b.data) + bi * m * n, xt.data(), m, n);
    SubstituteLeft(A + bi * kk * kk, xt.data(), n, m, p.lower, !p.trans, p.unit, 0, m);
    Transpose(xt.data(), X + bi * m * n, n, m);
  };
  return ParallelFor(ctx, size_t(batch), task);
}

struct QrAttrs {
  bool full = false;
};
St CreateQrV2(const CustomOp*, const void*, const OrtKernelInfo* info, void** out) {
  auto* k = new QrAttrs();
  k->full = KernelIntAttr(g_api, info, "full_matrices", 0) != 0;
  *out = k;
  return nullptr;
}
void* CreateQr(const CustomOp* op, const void* api, const OrtKernelInfo* info) {
  void* k = nullptr;
  CreateQrV2(op, api, info, &k);
  return k;
}
void DestroyQr(void* k) { delete static_cast<QrAttrs*>(k); }

St QrCompute(void* kp, OrtKernelContext* ctx) {
  const bool full = static_cast<QrAttrs*>(kp)->full;
  KernelTensor a;
  if (St s = Input(ctx, 0, &a)) return s;
  int64_t batch = 0, m = 0, n = 0;
  if (St s = Matrices("Qr", "a", a, &batch, &m, &n)) return s;
  const int64_t k = std::min(m, n), qc = full ? m : k, rr = full ? m : k;
  std::vector<int64_t> qd = a.dims, rd = a.dims;
  qd.back() = qc;
  rd[rd.size() - 2] = rr;
  void *q = nullptr, *r = nullptr;
  if (St s = Output(ctx, 0, qd, &q)) return s;
  if (St s = Output(ctx, 1, rd, &r)) return s;
  if (batch == 0 || m == 0) return nullptr;
  auto task = [&](size_t b) {
    std::vector<double> w(static_cast<const double*>(a.data) + b * m * n, static_cast<const double*>(a.data) + (b + 1) * m * n);
    std::vector<double> taus(size_t(k) + 1), s(size_t(std::max(n, qc)) + 1);
    QrOne(w.data(), taus.data(), static_cast<double*>(q) + b * m * qc, static_cast<double*>(r) + b * rr * n, m, n, full, s.data());
  };
  return ParallelFor(ctx, size_t(batch), task);
}

/** Eigh's and Svd's two boolean attributes. */
struct FlagAttrs {
  bool a = false, b = false;
};
template <const char* A, const char* B>
St CreateFlagsV2(const CustomOp*, const void*, const OrtKernelInfo* info, void** out) {
  auto* k = new FlagAttrs();
  k->a = KernelIntAttr(g_api, info, A, 0) != 0;
  k->b = KernelIntAttr(g_api, info, B, 0) != 0;
  *out = k;
  return nullptr;
}
template <const char* A, const char* B>
constexpr auto CreateFlags = CreateKernelV1<CreateFlagsV2<A, B>>;
constexpr auto DestroyFlags = DestroyKernel<FlagAttrs>;
constexpr char kLower[] = "lower", kSort[] = "sort_eigenvalues", kFull[] = "full_matrices", kUv[] = "compute_uv";

/** jaxts.Eigh(a) -> (v, w), attributes lower and sort_eigenvalues: K.eigh with symmetrizeInput false. */
St EighCompute(void* kp, OrtKernelContext* ctx) {
  const FlagAttrs& p = *static_cast<FlagAttrs*>(kp);
  KernelTensor a;
  if (St s = Input(ctx, 0, &a)) return s;
  int64_t batch = 0, r = 0, n = 0;
  if (St s = Matrices("Eigh", "a", a, &batch, &r, &n)) return s;
  if (r != n) return Error("Eigh", "a must be a batch of square matrices, got " + ShapeStr(a.dims));
  std::vector<int64_t> wd(a.dims.begin(), a.dims.end() - 1);
  void *v = nullptr, *w = nullptr;
  if (St s = Output(ctx, 0, a.dims, &v)) return s;
  if (St s = Output(ctx, 1, wd, &w)) return s;
  if (a.count == 0) return nullptr;
  const double* A = static_cast<const double*>(a.data);
  auto task = [&](size_t b) {
    EighOne(A + b * n * n, n, p.a, p.b, static_cast<double*>(v) + b * n * n, static_cast<double*>(w) + b * n);
  };
  return ParallelFor(ctx, size_t(batch), task);
}

/**
 * jaxts.Svd(a) -> (s, u, vt), attributes full_matrices and compute_uv (K.svd). Without compute_uv, u is
 * [..., m, 0] and vt [..., 0, n] (the lowering uses s only).
 */
St SvdCompute(void* kp, OrtKernelContext* ctx) {
  const FlagAttrs& p = *static_cast<FlagAttrs*>(kp);
  const bool full = p.a, uv = p.b;
  KernelTensor a;
  if (St s = Input(ctx, 0, &a)) return s;
  int64_t batch = 0, m = 0, n = 0;
  if (St s = Matrices("Svd", "a", a, &batch, &m, &n)) return s;
  const int64_t k = std::min(m, n), uc = uv ? (full ? m : k) : 0, vr = uv ? (full ? n : k) : 0;
  std::vector<int64_t> sd(a.dims.begin(), a.dims.end() - 1), ud = a.dims, vd = a.dims;
  sd.back() = k;
  ud.back() = uc;
  vd[vd.size() - 2] = vr;
  void *s = nullptr, *u = nullptr, *vt = nullptr;
  if (St st = Output(ctx, 0, sd, &s)) return st;
  if (St st = Output(ctx, 1, ud, &u)) return st;
  if (St st = Output(ctx, 2, vd, &vt)) return st;
  if (batch == 0) return nullptr;
  const double* A = static_cast<const double*>(a.data);
  auto task = [&](size_t b) {
    SvdOne(A + b * m * n, m, n, full, uv, static_cast<double*>(s) + b * k, uv ? static_cast<double*>(u) + b * m * uc : nullptr,
           uv ? static_cast<double*>(vt) + b * vr * n : nullptr);
  };
  return ParallelFor(ctx, size_t(batch), task);
}

template <St (*Compute)(void*, OrtKernelContext*)>
constexpr auto ComputeV1 = ComputeKernelV1<Compute, &g_api>;

const char* CholeskyName(const CustomOp*) { return "Cholesky"; }
const char* LuName(const CustomOp*) { return "Lu"; }
const char* TsName(const CustomOp*) { return "TriangularSolve"; }
const char* QrName(const CustomOp*) { return "Qr"; }
const char* EighName(const CustomOp*) { return "Eigh"; }
const char* SvdName(const CustomOp*) { return "Svd"; }
const char* CpuEp(const CustomOp*) { return nullptr; }
int DoubleType(const CustomOp*, size_t) { return kDouble; }
int LuOutputType(const CustomOp*, size_t i) { return i == 0 ? kDouble : kInt32; }
size_t One(const CustomOp*) { return 1; }
size_t Two(const CustomOp*) { return 2; }
size_t Three(const CustomOp*) { return 3; }
int Required(const CustomOp*, size_t) { return 0; }
int DefaultMem(const CustomOp*, size_t) { return 0; }
int OneArity(const CustomOp*) { return 1; }

CustomOp g_cholesky = {
    16,
    NoKernel, CholeskyName, CpuEp, DoubleType, One, DoubleType, One, ComputeV1<CholeskyCompute>, DestroyPlain,
    Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreatePlainV2, CholeskyCompute,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};
CustomOp g_lu = {
    16,
    NoKernel, LuName, CpuEp, DoubleType, One, LuOutputType, Three, ComputeV1<LuCompute>, DestroyPlain,
    Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreatePlainV2, LuCompute,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};
CustomOp g_ts = {
    16,
    CreateTs, TsName, CpuEp, DoubleType, Two, DoubleType, One, ComputeV1<TsCompute>, DestroyTs,
    Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreateTsV2, TsCompute,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};
CustomOp g_qr = {
    16,
    CreateQr, QrName, CpuEp, DoubleType, One, DoubleType, Two, ComputeV1<QrCompute>, DestroyQr,
    Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreateQrV2, QrCompute,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};

CustomOp g_eigh = {
    16,
    CreateFlags<kLower, kSort>, EighName, CpuEp, DoubleType, One, DoubleType, Two, ComputeV1<EighCompute>, DestroyFlags,
    Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreateFlagsV2<kLower, kSort>, EighCompute,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};
CustomOp g_svd = {
    16,
    CreateFlags<kFull, kUv>, SvdName, CpuEp, DoubleType, One, DoubleType, Three, ComputeV1<SvdCompute>, DestroyFlags,
    Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreateFlagsV2<kFull, kUv>, SvdCompute,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

size_t LinalgCustomOps(const void* const* api, ort::CustomOp** out) {
  g_api = api;
  out[0] = &g_lu;
  out[1] = &g_ts;
  out[2] = &g_cholesky;
  out[3] = &g_qr;
  out[4] = &g_eigh;
  out[5] = &g_svd;
  return 6;
}

}  // namespace jaxts
