/** @file ONNX Runtime custom ops jaxts.Fft / jaxts.Fft64: batched complex DFTs along one axis (mixed-radix Cooley-Tukey, Bluestein for large prime factors), plans cached per (length, precision). */
// Layout: the input is [..., 2] with the real and imaginary lanes interleaved (the complex lowering's layout); the
// attribute `axis` names the transformed axis (not the lane axis), `inverse` selects exp(+2 pi i jk/n) / n.
// Algorithm (ideas from KissFFT's recursive decimation in time and pocketfft's radix choice; our own code): the length
// factors into 4s, 2s, 3s, 5s and other primes; each recursion level does p sub-transforms of length n/p, then m
// radix-p butterflies with twiddles w_n^{qk}. A length with a prime factor above kMaxRadix runs Bluestein's chirp-z:
// X_k = w_k sum_j (x_j w_j) conj(w_{k-j}) with w_j = exp(-i pi j^2 / n), a circular convolution of power-of-two length.
// Twiddles and chirps are computed in float64 (float32 plans round them).

#include "fft-ops.h"

#include "custom-op-util.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace jaxts {
namespace {

using namespace ort;
using St = OrtStatus*;
const void* const* g_api = nullptr;

template <typename F>
F fn(Slot s) { return ort::At<F>(g_api, s); }

constexpr int kFloat = 1, kDouble = 11;
constexpr double kPi = 3.14159265358979323846;
constexpr int kMaxRadix = 64;  // larger prime factors go through Bluestein (a radix-p butterfly costs p^2 per group)

St Error(const char* op, const std::string& msg) { return OpError(g_api, op, msg); }

template <typename T>
struct Cx {
  T re, im;
};
template <typename T>
inline Cx<T> Mul(Cx<T> a, Cx<T> b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
template <typename T>
inline Cx<T> Add(Cx<T> a, Cx<T> b) { return {a.re + b.re, a.im + b.im}; }
template <typename T>
inline Cx<T> Sub(Cx<T> a, Cx<T> b) { return {a.re - b.re, a.im - b.im}; }

/** A forward DFT plan of one length in precision T. */
template <typename T>
struct Plan {
  int64_t n = 0;
  std::vector<int> factors;  // radices, outermost first (empty for n = 1 or Bluestein)
  std::vector<Cx<T>> tw;     // tw[j] = exp(-2 pi i j / n)
  bool bluestein = false;
  int64_t m = 0;                  // Bluestein's convolution length (a power of two >= 2n - 1)
  std::vector<Cx<T>> chirp;       // exp(-i pi k^2 / n), k < n
  std::vector<Cx<T>> bhat;        // DFT_m of the conjugate chirp, divided by m
  std::shared_ptr<const Plan<T>> inner;
};

template <typename T>
std::shared_ptr<const Plan<T>> GetPlan(int64_t n);

/** out[0..n) = DFT_n of in[0], in[s], ..., in[(n-1)s]; ts = N/n is the stride into the full-length twiddle table. */
template <typename T>
void Rec(const Plan<T>& P, Cx<T>* out, const Cx<T>* in, size_t s, size_t ts, size_t fi, size_t n) {
  const Cx<T>* tw = P.tw.data();
  const size_t p = size_t(P.factors[fi]), m = n / p;
  if (m == 1) {
    for (size_t j = 0; j < p; j++) out[j] = in[j * s];
  } else {
    for (size_t j = 0; j < p; j++) Rec(P, out + j * m, in + j * s, s * p, ts * p, fi + 1, m);
  }
  if (p == 2) {
    for (size_t k = 0; k < m; k++) {
      const Cx<T> a = out[k], b = Mul(out[k + m], tw[k * ts]);
      out[k] = Add(a, b);
      out[k + m] = Sub(a, b);
    }
  } else if (p == 4) {
    for (size_t k = 0; k < m; k++) {
      const Cx<T> a0 = out[k], a1 = Mul(out[k + m], tw[k * ts]), a2 = Mul(out[k + 2 * m], tw[2 * k * ts]),
                  a3 = Mul(out[k + 3 * m], tw[3 * k * ts]);
      const Cx<T> t0 = Add(a0, a2), t1 = Sub(a0, a2), t2 = Add(a1, a3), t3 = Sub(a1, a3);
      out[k] = Add(t0, t2);
      out[k + 2 * m] = Sub(t0, t2);
      out[k + m] = {t1.re + t3.im, t1.im - t3.re};      // t1 - i t3
      out[k + 3 * m] = {t1.re - t3.im, t1.im + t3.re};  // t1 + i t3
    }
  } else {
    // generic radix: X[k + q2 m] = sum_q (out[k + q m] w_n^{qk}) w_p^{q q2}, with w_p^r = tw[r N / p]
    const size_t np = size_t(P.n) / p;
    Cx<T> y[kMaxRadix];
    for (size_t k = 0; k < m; k++) {
      y[0] = out[k];
      for (size_t q = 1; q < p; q++) y[q] = Mul(out[k + q * m], tw[q * k * ts]);
      for (size_t q2 = 0; q2 < p; q2++) {
        Cx<T> acc = y[0];
        size_t r = 0;
        for (size_t q = 1; q < p; q++) {
          r += q2;
          if (r >= p) r -= p;
          acc = Add(acc, Mul(y[q], tw[r * np]));
        }
        out[k + q2 * m] = acc;
      }
    }
  }
}

/** Per-thread work buffers of one line transform. */
template <typename T>
struct Work {
  std::vector<Cx<T>> a, b;
};

/** out = DFT_n(in) (forward); in and out are distinct n-element buffers; in may be overwritten. */
template <typename T>
void Run(const Plan<T>& P, Cx<T>* out, Cx<T>* in, Work<T>& w) {
  const size_t n = size_t(P.n);
  if (n == 1) { out[0] = in[0]; return; }
  if (!P.bluestein) { Rec(P, out, in, 1, 1, 0, n); return; }
  const size_t m = size_t(P.m);
  w.a.assign(m, Cx<T>{0, 0});
  w.b.resize(m);
  for (size_t k = 0; k < n; k++) w.a[k] = Mul(in[k], P.chirp[k]);
  Work<T> none;
  Run(*P.inner, w.b.data(), w.a.data(), none);
  // the inverse transform as conj(DFT(conj(.))); bhat carries the 1/m
  for (size_t k = 0; k < m; k++) {
    const Cx<T> v = Mul(w.b[k], P.bhat[k]);
    w.b[k] = {v.re, -v.im};
  }
  Run(*P.inner, w.a.data(), w.b.data(), none);
  for (size_t k = 0; k < n; k++) out[k] = Mul({w.a[k].re, -w.a[k].im}, P.chirp[k]);
}

template <typename T>
std::shared_ptr<Plan<T>> MakePlan(int64_t n) {
  auto p = std::make_shared<Plan<T>>();
  p->n = n;
  int64_t r = n;
  while (r % 4 == 0) { p->factors.push_back(4); r /= 4; }
  while (r % 2 == 0) { p->factors.push_back(2); r /= 2; }
  for (int64_t f = 3; f * f <= r; f += 2)
    while (r % f == 0) { p->factors.push_back(int(f)); r /= f; }
  if (r > 1) {
    if (r > kMaxRadix) p->bluestein = true;
    else p->factors.push_back(int(r));
  }
  for (int f : p->factors) if (f > kMaxRadix) p->bluestein = true;
  if (!p->bluestein) {
    p->tw.resize(size_t(n));
    for (int64_t j = 0; j < n; j++) {
      const double a = -2.0 * kPi * double(j) / double(n);
      p->tw[size_t(j)] = {T(std::cos(a)), T(std::sin(a))};
    }
    return p;
  }
  p->factors.clear();
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  p->m = m;
  p->inner = GetPlan<T>(m);
  // chirp angle pi k^2 / n with k^2 reduced mod 2n in integers (exact for the large k where k^2 / n loses digits)
  std::vector<Cx<double>> w(static_cast<size_t>(n)), b(static_cast<size_t>(m), Cx<double>{0, 0});
  for (int64_t k = 0; k < n; k++) {
    const uint64_t k2 = (uint64_t(k) * uint64_t(k)) % uint64_t(2 * n);
    const double a = -kPi * double(k2) / double(n);
    w[size_t(k)] = {std::cos(a), std::sin(a)};
  }
  p->chirp.resize(size_t(n));
  for (int64_t k = 0; k < n; k++) p->chirp[size_t(k)] = {T(w[size_t(k)].re), T(w[size_t(k)].im)};
  for (int64_t k = 0; k < n; k++) {
    const Cx<double> c = {w[size_t(k)].re, -w[size_t(k)].im};
    b[size_t(k)] = c;
    if (k > 0) b[size_t(m - k)] = c;
  }
  // bhat in float64 (a float64 plan of length m), then rounded
  auto dp = GetPlan<double>(m);
  std::vector<Cx<double>> bh(static_cast<size_t>(m));
  Work<double> wd;
  Run(*dp, bh.data(), b.data(), wd);
  p->bhat.resize(size_t(m));
  for (int64_t k = 0; k < m; k++) p->bhat[size_t(k)] = {T(bh[size_t(k)].re / double(m)), T(bh[size_t(k)].im / double(m))};
  return p;
}

template <typename T>
std::shared_ptr<const Plan<T>> GetPlan(int64_t n) {
  static std::mutex mu;
  static std::map<int64_t, std::shared_ptr<const Plan<T>>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<const Plan<T>> p = MakePlan<T>(n);  // built outside the lock (Bluestein plans nest)
  std::lock_guard<std::mutex> lock(mu);
  return cache.emplace(n, p).first->second;
}

struct FftAttrs {
  int64_t axis = 0;
  bool inverse = false;
};

St CreateFftV2(const CustomOp*, const void*, const OrtKernelInfo* info, void** out) {
  auto* k = new FftAttrs();
  k->axis = KernelIntAttr(g_api, info, "axis", 0);
  k->inverse = KernelIntAttr(g_api, info, "inverse", 0) != 0;
  *out = k;
  return nullptr;
}
constexpr auto CreateFft = CreateKernelV1<CreateFftV2>;
constexpr auto DestroyFft = DestroyKernel<FftAttrs>;

template <typename Task>
St ParallelFor(OrtKernelContext* ctx, size_t n, Task& task) { return OpParallelFor(g_api, ctx, n, task); }

/** exp(-2 pi i k / n) for k <= n / 2 (the real transform's split twiddles), cached per n. */
template <typename T>
std::shared_ptr<const std::vector<Cx<T>>> GetRealTwiddles(int64_t n) {
  static std::mutex mu;
  static std::map<int64_t, std::shared_ptr<const std::vector<Cx<T>>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  auto t = std::make_shared<std::vector<Cx<T>>>(size_t(n / 2 + 1));
  for (int64_t k = 0; k <= n / 2; k++) {
    const double a = -2.0 * kPi * double(k) / double(n);
    (*t)[size_t(k)] = {T(std::cos(a)), T(std::sin(a))};
  }
  return cache.emplace(n, t).first->second;
}

/**
 * The one-sided DFT of real lines: for even n one complex transform of half length on z_j = x_2j + i x_2j+1, then
 * X_k = E_k + w^k O_k with E_k = (Z_k + conj Z_{h-k}) / 2 and O_k = (Z_k - conj Z_{h-k}) / 2i (h = n / 2); odd n
 * transforms the line as complex.
 */
template <typename T>
St RealCompute(OrtKernelContext* ctx, const T* X, Cx<T>* Y, size_t n, size_t outer, size_t inner) {
  const size_t lines = outer * inner, h1 = n / 2 + 1;
  const bool even = n % 2 == 0 && n >= 2;
  const size_t h = even ? n / 2 : n;
  auto plan = GetPlan<T>(int64_t(h));
  auto rtw = GetRealTwiddles<T>(int64_t(n));
  const size_t chunks = std::min<size_t>(lines, 256), per = (lines + chunks - 1) / chunks;
  auto task = [&](size_t c) {
    std::vector<Cx<T>> a(h), b(h);
    Work<T> w;
    const Cx<T>* tw = rtw->data();
    for (size_t l = c * per; l < std::min(lines, (c + 1) * per); l++) {
      const size_t o = l / inner, i = l % inner, base = o * n * inner + i, obase = o * h1 * inner + i;
      if (even) {
        for (size_t j = 0; j < h; j++) a[j] = {X[base + 2 * j * inner], X[base + (2 * j + 1) * inner]};
      } else {
        for (size_t j = 0; j < n; j++) a[j] = {X[base + j * inner], T(0)};
      }
      Run(*plan, b.data(), a.data(), w);
      if (!even) {
        for (size_t k = 0; k < h1; k++) Y[obase + k * inner] = b[k];
        continue;
      }
      for (size_t k = 0; k < h1; k++) {
        const Cx<T> zk = b[k % h], zc0 = b[(h - k) % h];
        const Cx<T> zc = {zc0.re, -zc0.im};
        const Cx<T> e = {(zk.re + zc.re) * T(0.5), (zk.im + zc.im) * T(0.5)};
        const Cx<T> d = Sub(zk, zc);
        const Cx<T> od = {d.im * T(0.5), -d.re * T(0.5)};  // d / 2i
        Y[obase + k * inner] = Add(e, Mul(tw[k], od));
      }
    }
  };
  return ParallelFor(ctx, (lines + per - 1) / per, task);
}

template <typename T, int kType>
St FftCompute(void* kernel, OrtKernelContext* ctx) {
  const char* name = kType == kFloat ? "Fft" : "Fft64";
  const auto* attrs = static_cast<const FftAttrs*>(kernel);
  const OrtValue* v = nullptr;
  if (St s = fn<St (*)(const OrtKernelContext*, size_t, const OrtValue**)>(kKernelContextGetInput)(ctx, 0, &v)) return s;
  KernelTensor x;
  if (St s = DescribeTensor(g_api, v, &x)) return s;
  const int64_t rank = int64_t(x.dims.size());
  if (x.type != kType) return Error(name, "x must be " + std::string(kType == kFloat ? "float32" : "float64") + " (element type " + std::to_string(x.type) + ")");
  if (rank < 2 || (x.dims[size_t(rank - 1)] != 2 && x.dims[size_t(rank - 1)] != 1))
    return Error(name, "x must be interleaved complex [..., n, 2] or real [..., n, 1], got " + ShapeStr(x.dims));
  if (attrs->axis < 0 || attrs->axis >= rank - 1)
    return Error(name, "axis " + std::to_string(attrs->axis) + " is out of range for x of shape " + ShapeStr(x.dims));
  const bool realIn = x.dims[size_t(rank - 1)] == 1;
  if (realIn && attrs->inverse) return Error(name, "a real [..., n, 1] input takes the forward transform only, got inverse = 1");
  // a real input yields the one-sided spectrum: n / 2 + 1 bins along axis
  std::vector<int64_t> odims = x.dims;
  if (realIn) {
    odims[size_t(attrs->axis)] = x.dims[size_t(attrs->axis)] / 2 + 1;
    odims[size_t(rank - 1)] = 2;
  }
  OrtValue* ov = nullptr;
  if (St s = fn<St (*)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**)>(kKernelContextGetOutput)(ctx, 0, odims.data(), odims.size(), &ov)) return s;
  KernelTensor y;
  if (St s = DescribeTensor(g_api, ov, &y)) return s;
  if (x.count == 0) return nullptr;
  const size_t ax = size_t(attrs->axis);
  size_t outer = 1, inner = 1;
  for (size_t i = 0; i < ax; i++) outer *= size_t(x.dims[i]);
  for (size_t i = ax + 1; i + 1 < size_t(rank); i++) inner *= size_t(x.dims[i]);
  const size_t n = size_t(x.dims[ax]), lines = outer * inner;
  if (realIn) return RealCompute<T>(ctx, static_cast<const T*>(x.data), static_cast<Cx<T>*>(y.data), n, outer, inner);
  auto plan = GetPlan<T>(int64_t(n));
  const Cx<T>* X = static_cast<const Cx<T>*>(x.data);
  Cx<T>* Y = static_cast<Cx<T>*>(y.data);
  const bool inv = attrs->inverse;
  const T scale = inv ? T(1.0 / double(n)) : T(1);
  // the inverse DFT as conj(DFT(conj(x))) / n; lines are gathered into contiguous buffers (strided when inner > 1)
  const size_t chunks = std::min<size_t>(lines, 256), per = (lines + chunks - 1) / chunks;
  auto task = [&](size_t c) {
    std::vector<Cx<T>> a(n), b(n);
    Work<T> w;
    for (size_t l = c * per; l < std::min(lines, (c + 1) * per); l++) {
      const size_t o = l / inner, i = l % inner, base = o * n * inner + i;
      for (size_t k = 0; k < n; k++) {
        const Cx<T> e = X[base + k * inner];
        a[k] = {e.re, inv ? -e.im : e.im};
      }
      Run(*plan, b.data(), a.data(), w);
      for (size_t k = 0; k < n; k++) {
        const Cx<T> e = b[k];
        Y[base + k * inner] = inv ? Cx<T>{e.re * scale, -e.im * scale} : e;
      }
    }
  };
  return ParallelFor(ctx, (lines + per - 1) / per, task);
}

template <St (*Compute)(void*, OrtKernelContext*)>
constexpr auto ComputeV1 = ComputeKernelV1<Compute, &g_api>;

const char* FftName(const CustomOp*) { return "Fft"; }
const char* Fft64Name(const CustomOp*) { return "Fft64"; }
const char* CpuEp(const CustomOp*) { return nullptr; }
int FloatType(const CustomOp*, size_t) { return kFloat; }
int DoubleType(const CustomOp*, size_t) { return kDouble; }
size_t One(const CustomOp*) { return 1; }
int Required(const CustomOp*, size_t) { return 0; }
int DefaultMem(const CustomOp*, size_t) { return 0; }
int OneArity(const CustomOp*) { return 1; }

CustomOp g_fft = {
    16,
    CreateFft, FftName, CpuEp, FloatType, One, FloatType, One, ComputeV1<FftCompute<float, kFloat>>, DestroyFft,
    Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreateFftV2, FftCompute<float, kFloat>,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};
CustomOp g_fft64 = {
    16,
    CreateFft, Fft64Name, CpuEp, DoubleType, One, DoubleType, One, ComputeV1<FftCompute<double, kDouble>>, DestroyFft,
    Required, Required, DefaultMem, OneArity, OneArity, OneArity, OneArity, CreateFftV2, FftCompute<double, kDouble>,
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

size_t FftCustomOps(const void* const* api, ort::CustomOp** out) {
  g_api = api;
  out[0] = &g_fft;
  out[1] = &g_fft64;
  return 2;
}

}  // namespace jaxts
