// AVX-512 inverted dropout. The mask is Philox4x32-10 evaluated 16 counter blocks at a time, so it
// is bit-identical to reference::dropout_forward (uniform_at(key, i) >= p) and to core/rng.h.

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {
namespace {

// 32x32 -> 64-bit products of 16 lanes by a constant: high and low halves.
inline void mul_hi_lo(__m512i a, __m512i c, __m512i* hi, __m512i* lo) {
  const __m512i even = _mm512_mul_epu32(a, c);                        // lanes 0,2,..: 64-bit
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), c);  // lanes 1,3,..
  *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

// Philox4x32-10 for counter blocks first_block .. first_block+15 (same round function as
// core/rng.h's philox4x32); w[k] lane b = word k of block first_block + b.
inline void philox16(RngKey key, uint64_t first_block, __m512i w[4]) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i base_lo = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first_block)));
  __m512i c0 = _mm512_add_epi32(base_lo, lane);
  // Carry into the high word where the low word wrapped around (c0 < base_lo).
  const __mmask16 carry = _mm512_cmplt_epu32_mask(c0, base_lo);
  __m512i c1 = _mm512_mask_add_epi32(
      _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first_block >> 32))), carry,
      _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first_block >> 32))),
      _mm512_set1_epi32(1));
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(key.stream)));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(key.stream >> 32)));
  uint32_t k0 = static_cast<uint32_t>(key.seed), k1 = static_cast<uint32_t>(key.seed >> 32);
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  for (int round = 0; round < 10; ++round) {
    __m512i hi0, lo0, hi1, lo1;
    mul_hi_lo(c0, m0, &hi0, &lo0);
    mul_hi_lo(c2, m1, &hi1, &lo1);
    const __m512i n0 =
        _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
    const __m512i n2 =
        _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
    c1 = lo1;
    c3 = lo0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  w[0] = c0;
  w[1] = c1;
  w[2] = c2;
  w[3] = c3;
}

// 64 elements [64c, 64c + 64) are the 4 words of blocks 16c .. 16c+15: element 4b + k is word k
// of block b. Transposes the words to element order and applies the mask.
// Mark: also writes x back with the sign bit set where dropped and cleared where kept
// (dropout_forward_marking).
template <bool Mark>
void dropout_span(float* y, float* x, float p, float scale, RngKey key, int64_t n) {
  const int64_t chunks = (n + 63) / 64;
  const __m512 vp = _mm512_set1_ps(p);
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 to_unit = _mm512_set1_ps(1.0f / 16777216.0f);
  const __m512 sign_bit = _mm512_set1_ps(-0.0f);
  // Stage 1 interleaves words 0/1 and 2/3 of 8 blocks; stage 2 interleaves those pairs.
  const __m512i lo_pairs = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi_pairs =
      _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  const __m512i lo_quads = _mm512_set_epi32(23, 22, 7, 6, 21, 20, 5, 4, 19, 18, 3, 2, 17, 16, 1, 0);
  const __m512i hi_quads =
      _mm512_set_epi32(31, 30, 15, 14, 29, 28, 13, 12, 27, 26, 11, 10, 25, 24, 9, 8);
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t c = 0; c < chunks; ++c) {
    __m512i w[4];
    philox16(key, static_cast<uint64_t>(c) * 16, w);
    const __m512i w01_lo = _mm512_permutex2var_epi32(w[0], lo_pairs, w[1]);  // blocks 0-7
    const __m512i w01_hi = _mm512_permutex2var_epi32(w[0], hi_pairs, w[1]);  // blocks 8-15
    const __m512i w23_lo = _mm512_permutex2var_epi32(w[2], lo_pairs, w[3]);
    const __m512i w23_hi = _mm512_permutex2var_epi32(w[2], hi_pairs, w[3]);
    const __m512i words[4] = {
        _mm512_permutex2var_epi32(w01_lo, lo_quads, w23_lo),  // blocks 0-3
        _mm512_permutex2var_epi32(w01_lo, hi_quads, w23_lo),  // blocks 4-7
        _mm512_permutex2var_epi32(w01_hi, lo_quads, w23_hi),  // blocks 8-11
        _mm512_permutex2var_epi32(w01_hi, hi_quads, w23_hi),  // blocks 12-15
    };
    for (int q = 0; q < 4; ++q) {
      const int64_t i = c * 64 + q * kLanes;
      if (i >= n) break;
      const __mmask16 m = lanes_mask(n - i);
      // uniform_from_bits: (bits >> 8) * 2^-24, exact in float, so the comparison matches.
      const __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(words[q], 8)), to_unit);
      const __mmask16 keep = _mm512_cmp_ps_mask(u, vp, _CMP_GE_OQ) & m;
      prefetch_ahead(x + i);  // Philox's rounds per vector keep few loads in flight
      const __m512 in = _mm512_maskz_loadu_ps(m, x + i);
      _mm512_mask_storeu_ps(y + i, m, _mm512_maskz_mul_ps(keep, in, vscale));
      if constexpr (Mark) {
        const __m512 magnitude = _mm512_andnot_ps(sign_bit, in);
        _mm512_mask_storeu_ps(
            x + i, m, _mm512_mask_blend_ps(keep, _mm512_or_ps(magnitude, sign_bit), magnitude));
      }
    }
  }
}

// 1/(1-p) rounded once from double, as reference::dropout_scale.
float dropout_scale(float p) {
  return static_cast<float>(1.0 / (1.0 - static_cast<double>(p)));
}

void copy(float* y, const float* x, int64_t n) {
  if (y == x) return;
  const int64_t vectors = (n + kLanes - 1) / kLanes;
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t v = 0; v < vectors; ++v) {
    const __mmask16 m = lanes_mask(n - v * kLanes);
    _mm512_mask_storeu_ps(y + v * kLanes, m, _mm512_maskz_loadu_ps(m, x + v * kLanes));
  }
}

}  // namespace

// y may alias x.
void dropout_forward(float* y, const float* x, float p, RngKey key, int64_t n) {
  if (p == 0.0f) return copy(y, x, n);
  // Mark = false only reads x: the cast lets both forms share one body.
  dropout_span<false>(y, const_cast<float*>(x), p, dropout_scale(p), key, n);
}

// y may not alias x.
void dropout_forward_marking(float* y, float* x, float p, RngKey key, int64_t n) {
  if (p == 0.0f) return copy(y, x, n);
  dropout_span<true>(y, x, p, dropout_scale(p), key, n);
}

// Not parallel: it runs on blocks of attention, inside their parallel loop.
void dropout_unmark(float* y, float* x_abs, const float* marked, float p, int64_t n) {
  const __m512 vscale = _mm512_set1_ps(dropout_scale(p));
  const __m512 sign_bit = _mm512_set1_ps(-0.0f);
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = lanes_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, marked + i);
    const __mmask16 kept =
        static_cast<__mmask16>(~_mm512_movepi32_mask(_mm512_castps_si512(v)) & m);
    const __m512 magnitude = _mm512_andnot_ps(sign_bit, v);
    _mm512_mask_storeu_ps(x_abs + i, m, magnitude);
    _mm512_mask_storeu_ps(y + i, m, _mm512_maskz_mul_ps(kept, magnitude, vscale));
  }
}

void dropout_backward(float* d_x, const float* d_y, float p, RngKey key, int64_t n) {
  dropout_forward(d_x, d_y, p, key, n);
}

// d_x may alias d_y. For p > 0 not parallel: it runs on blocks of attention, inside their parallel
// loop (p == 0, which attention never passes, is copy's parallel loop).
void dropout_backward_kept(float* d_x, const float* d_y, const float* kept, float p, int64_t n) {
  if (p == 0.0f) return copy(d_x, d_y, n);
  const __m512 vscale = _mm512_set1_ps(dropout_scale(p));
  for (int64_t i = 0; i < n; i += kLanes) {
    const __mmask16 m = lanes_mask(n - i);
    // kept != 0, unordered (NaN) counting as nonzero, as the reference's `!=` does.
    const __mmask16 keep =
        _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, kept + i), _mm512_setzero_ps(), _CMP_NEQ_UQ) &
        m;
    _mm512_mask_storeu_ps(d_x + i, m,
                          _mm512_maskz_mul_ps(keep, _mm512_maskz_loadu_ps(m, d_y + i), vscale));
  }
}

}  // namespace cpuft::avx512
