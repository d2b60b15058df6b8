// Vector math for the AVX-512 kernels: exp, the normal CDF (for exact GELU) and tanh on 16 floats,
// plus tail masks and a malloc-backed scratch array. Internal linkage only (see avx512.h).
//
// Accuracy (measured against double-precision std:: functions by avx512_test.cc, rounded to
// float): exp <= 2 ulp; GELU relative error <= 4.4e-7 over all x (no cancellation in the
// negative tail, unlike 0.5 * (1 + erf)); tanh <= 3 ulp. Polynomial coefficients are Chebyshev
// fits made with mpmath (chebyfit); the approximation error of each fit is stated next to it and
// is below float rounding.
#pragma once

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own `__Y = __Y` placeholders
// (GCC bug 105593, fixed in 12.3/13); silenced for the header only. The AVX-512 sources include
// immintrin.h through this file alone.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstddef>
#include <cstdint>
#include <new>

#include "core/bf16.h"

namespace cpuft::avx512 {
namespace {

constexpr int64_t kLanes = 16;

// Mask of the first `count` lanes (count in [0, 16]).
inline __mmask16 lanes_mask(int64_t count) {
  return count >= kLanes ? static_cast<__mmask16>(0xFFFF)
                         : static_cast<__mmask16>((1u << static_cast<unsigned>(count)) - 1u);
}

// Uninitialised scratch of n elements of T (T trivial). Each thread keeps one buffer per T that
// only grows, so a kernel allocates nothing once warm: the training step allocates nothing (its
// test counts). A second Scratch<T> alive on the same thread (no kernel does that) gets its own
// allocation, freed on scope exit. Plain operator new rather than std::vector: see avx512.h on
// why these files instantiate no std templates.
template <typename T>
class Scratch {
 public:
  explicit Scratch(int64_t n) {
    const std::size_t count = static_cast<std::size_t>(n > 0 ? n : 1);
    Buffer& mine = buffer();
    if (mine.in_use) {
      data = static_cast<T*>(::operator new(sizeof(T) * count));
      owned_ = true;
      return;
    }
    if (mine.capacity < count) {
      ::operator delete(mine.data);
      mine.data = static_cast<T*>(::operator new(sizeof(T) * count));
      mine.capacity = count;
    }
    mine.in_use = true;
    data = mine.data;
  }
  ~Scratch() {
    if (owned_)
      ::operator delete(data);
    else
      buffer().in_use = false;
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* data;

 private:
  struct Buffer {
    T* data = nullptr;
    std::size_t capacity = 0;
    bool in_use = false;
  };
  static Buffer& buffer() {
    static thread_local Buffer b;
    return b;
  }
  bool owned_ = false;
};

inline int64_t max_i64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// exp(x) for 16 floats. Range reduction x = n ln2 + r, |r| <= ln2/2, with ln2 split hi/lo (FMA
// keeps n*ln2_hi exact); exp(r) by a degree-6 polynomial (fit error 2.5e-9 relative); 2^n applied
// by scalef, which overflows to +inf and underflows through the subnormals to 0. Inputs are clamped
// to [-104, 89] first so that -inf gives 0 and +inf gives +inf; NaN propagates.
inline __m512 exp_ps(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);  // second operand returned if NaN: keeps NaN
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504089f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693147182f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-1.90465429995e-09f), r);
  __m512 p = _mm512_set1_ps(1.394110843e-03f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.375126398e-03f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.166635290e-02f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.666641551e-01f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.000000047e-01f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.000000038e+00f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

inline __m512 abs_ps(__m512 x) {
  return _mm512_abs_ps(x);
}

inline __m512 sign_of(__m512 x) {
  return _mm512_and_ps(x, _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(0x80000000u))));
}

// Normal CDF Phi(x) = 0.5 * erfc(-x / sqrt 2), and, in *gauss, exp(-x^2 / 2) (for GELU's
// backward). With z = |x| / sqrt 2:
//   z < 1/2:  Phi = 0.5 + 0.5 * sign(x) * erf(z), erf(z) = z * P(z^2), P of degree 5 (fit error
//             1.2e-11 relative); Phi >= 0.24 here, so the final addition rounds to ~1 ulp of Phi
//             (with the cut at z = 1, Phi >= 0.079 and that addition cost up to 7 ulp);
//   z >= 1/2: erfc(z) = exp(-x^2/2) * G(t), t = 1 / (1 + z/2), G of degree 9 on z in [1/2, 10]
//             (fit error 5.3e-9 relative); Phi = erfc/2 for x < 0 (relative accuracy kept in the
//             whole tail), 1 - erfc/2 for x > 0. exp(-x^2/2) is taken of the exact x^2 = hi + lo
//             (FMA), since rounding x^2 alone would cost 1e-6 relative at |x| = 5. z is clamped to
//             10 (and |x| to 20 for the Gaussian): beyond, erfc(z) < 2e-45 is 0 in float.
// Measured: GELU within 4.4e-7 relative (~3.7 ulp) of the exact value on [-12, 12] (2.4M points).
inline __m512 normal_cdf_ps(__m512 x, __m512* gauss) {
  const __m512 ax = _mm512_min_ps(abs_ps(x), _mm512_set1_ps(20.0f));  // NaN -> 20, see below
  const __m512 z = _mm512_mul_ps(ax, _mm512_set1_ps(0.707106781187f));
  // Small |x|.
  const __m512 z2 = _mm512_mul_ps(z, z);
  __m512 p = _mm512_set1_ps(-7.694534279e-04f);
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(5.200413724e-03f));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(-2.686314303e-02f));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(1.128377401e-01f));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(-3.761263853e-01f));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(1.128379167e+00f));
  const __m512 erf_small = _mm512_or_ps(_mm512_mul_ps(z, p), sign_of(x));
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512 cdf_small = _mm512_fmadd_ps(half, erf_small, half);
  // Gaussian factor from the exact square: x^2 = hi + lo, exp(-hi/2 - lo/2) ~ exp(-hi/2)(1 - lo/2).
  const __m512 hi = _mm512_mul_ps(ax, ax);
  const __m512 lo = _mm512_fmsub_ps(ax, ax, hi);
  const __m512 e = exp_ps(_mm512_mul_ps(hi, _mm512_set1_ps(-0.5f)));
  const __m512 g = _mm512_mul_ps(e, _mm512_fnmadd_ps(lo, half, _mm512_set1_ps(1.0f)));
  *gauss = g;
  // Large |x|.
  const __m512 zc = _mm512_min_ps(z, _mm512_set1_ps(10.0f));
  const __m512 t =
      _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(zc, half, _mm512_set1_ps(1.0f)));
  __m512 q = _mm512_set1_ps(-7.732282768e-02f);
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(3.636000994e-01f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-6.336807973e-01f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(4.300580953e-01f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-1.235281957e-01f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(2.418988468e-01f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(2.330688521e-01f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(2.839369541e-01f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(2.819525570e-01f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(4.812833826e-06f));
  const __m512 half_erfc = _mm512_mul_ps(_mm512_mul_ps(g, q), half);
  const __mmask16 positive = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
  const __m512 cdf_large = _mm512_mask_sub_ps(half_erfc, positive, _mm512_set1_ps(1.0f), half_erfc);
  const __mmask16 small = _mm512_cmp_ps_mask(z, _mm512_set1_ps(0.5f), _CMP_LT_OQ);
  // A NaN x gives some finite value here; callers multiply by x, which makes the result NaN.
  return _mm512_mask_blend_ps(small, cdf_large, cdf_small);
}

// tanh(x): |x| < 0.625: x * Q(x^2), Q of degree 6 (fit error 1.5e-10 relative); otherwise
// sign(x) * (1 - 2 / (exp(2|x|) + 1)), where the result is >= 0.55 so the subtraction does not
// amplify exp's error. exp overflows to +inf for |x| > 44, giving exactly +-1.
inline __m512 tanh_ps(__m512 x) {
  const __m512 ax = abs_ps(x);
  const __m512 x2 = _mm512_mul_ps(x, x);
  __m512 q = _mm512_set1_ps(2.127435363e-03f);
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-8.157853372e-03f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(2.169126532e-02f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-5.394458468e-02f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(1.333318175e-01f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-3.333332966e-01f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(1.0f));
  const __m512 small = _mm512_mul_ps(x, q);
  const __m512 e = exp_ps(_mm512_add_ps(ax, ax));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 big = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
  const __m512 big_signed = _mm512_or_ps(big, sign_of(x));
  const __mmask16 is_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(is_small, big_signed, small);
}

// GELU's derivative Phi(x) + x * phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi).
inline __m512 gelu_derivative_ps(__m512 x) {
  __m512 gauss;
  const __m512 cdf = normal_cdf_ps(x, &gauss);
  const __m512 pdf = _mm512_mul_ps(gauss, _mm512_set1_ps(0.398942280401f));
  return _mm512_fmadd_ps(x, pdf, cdf);
}

// The bf16 bits of 16 floats, as core/bf16.h's round_to_bf16 rounds: nearest, ties to even, in
// integer arithmetic so that it needs only AVX-512F/BW (the AVX512_BF16 conversion instruction
// flushes subnormals, unlike torch's rounding and the scalar twin); a NaN keeps its upper half,
// quieted.
inline __m256i bf16_bits_ps(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                _mm512_set1_epi32(0x7F800000));
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x0040));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

// Column sums of an (N, C) gradient as the bias gradients take them, in one order whatever the
// thread count: blocks of bias_block_rows(N) rows, each column summed from zero over its block's
// rows in order, then the blocks' sums added in order (add_block_sums).
inline int64_t bias_block_rows(int64_t N) {
  return max_i64(16, (N + 255) / 256);
}

// d_b(C) += the sum over blocks of partial(blocks, C), blocks in order. A worksharing loop: call it
// from every thread of a parallel region.
inline void add_block_sums(float* d_b, const float* partial, int64_t blocks, int64_t C) {
#pragma omp for schedule(static)
  for (int64_t j = 0; j < C; j += kLanes) {
    const __mmask16 m = lanes_mask(C - j);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t blk = 0; blk < blocks; ++blk)
      acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, partial + blk * C + j));
    _mm512_mask_storeu_ps(d_b + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d_b + j), acc));
  }
}

// Forks a team only when there is enough work to pay for it (~a few microseconds).
constexpr int64_t kParallelMinElements = int64_t{1} << 15;

// A pass that spends many cycles on each vector keeps only a few cache lines in flight, and the
// hardware prefetcher leaves it waiting on memory: GELU (erf and exp, ~35 cycles a vector) on an
// input not in cache (a layer's activations, read once per pass) measured 2.5-3x slower than on a
// cached one. Asking for the line 2 KiB ahead closes that gap (docs/performance.md); 1-8 KiB
// measured the same. Other passes gained too on a 2-core Zen 5 VM: dropout (Philox), and even the
// cheap rounding to bf16 and the fused bias pass, took 35-60% less time in the step with it, and
// the optimizer's region (AdamW, the clip norm's sum of squares) about 30% less; a LayerNorm
// fetching its next row ahead showed no gain there. A prefetch past the end of an array
// is harmless (it never faults); the address is formed as an integer, so no pointer points past
// the array.
inline void prefetch_ahead(const float* p) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + 2048), _MM_HINT_T0);
}

// The one pass of the fused bf16 backward kernels over an (N, C) output gradient whose elements
// value(at, m) gives (at = i * C + j, m: the lanes of columns j.. inside C): writes its bf16
// rounding to out and adds its column sums to d_b in bias_backward's order (blocks of
// bias_block_rows rows, each summed from zero rows in order, then add_block_sums), so the bits
// are those of the unfused kernels run in turn. value is a lambda (a closure type local to its
// file, so no ODR exposure).
template <typename Value>
inline void round_rows_and_sum_columns(bf16* out_bf16, float* d_b, int64_t N, int64_t C,
                                       Value value) {
  if (N <= 0) return;
  const int64_t rows_per_block = bias_block_rows(N);
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
  Scratch<float> partial(blocks * C);  // (blocks, C)
  auto* out = reinterpret_cast<uint16_t*>(out_bf16);
#pragma omp parallel if (N * C >= kParallelMinElements)
  {
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      float* sums = partial.data + blk * C;
      for (int64_t j = 0; j < C; j += kLanes)
        _mm512_mask_storeu_ps(sums + j, lanes_mask(C - j), _mm512_setzero_ps());
      const int64_t row_begin = blk * rows_per_block;
      const int64_t row_end = row_begin + rows_per_block < N ? row_begin + rows_per_block : N;
      for (int64_t i = row_begin; i < row_end; ++i) {
        for (int64_t j = 0; j < C; j += kLanes) {
          const __mmask16 m = lanes_mask(C - j);
          const int64_t at = i * C + j;
          const __m512 d = value(at, m);
          _mm256_mask_storeu_epi16(out + at, m, bf16_bits_ps(d));
          _mm512_mask_storeu_ps(sums + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, sums + j), d));
        }
      }
    }
    add_block_sums(d_b, partial.data, blocks, C);
  }
}

}  // namespace
}  // namespace cpuft::avx512
