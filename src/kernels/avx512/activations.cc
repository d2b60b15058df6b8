// AVX-512 exact GELU and tanh, element-wise; accuracy of the vector math in vmath.h.

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {
namespace {

// GELU's erf and exp take ~35 cycles a vector, so the loop keeps only a few cache lines in flight
// and the hardware prefetcher leaves it waiting on memory: on an input not in cache (a layer's
// activations, read once per pass) it measured 2.5-3x slower than on a cached one. Asking for the
// line 2 KiB ahead closes that gap (docs/performance.md); 1-8 KiB measured the same. A prefetch
// past the end of an array is harmless (it never faults); the address is formed as an integer, so
// no pointer points past the array.
inline void prefetch_ahead(const float* p) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + 2048), _MM_HINT_T0);
}

// Applies op(i, mask) to every 16-float vector of [0, n), static chunks over threads; op is a
// lambda (a closure type local to this file, so no ODR exposure).
template <typename Op>
inline void for_each_vector(int64_t n, Op op) {
  const int64_t vectors = (n + kLanes - 1) / kLanes;
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t v = 0; v < vectors; ++v) op(v * kLanes, lanes_mask(n - v * kLanes));
}

}  // namespace

// y = x * Phi(x) = x * 0.5 * (1 + erf(x / sqrt 2)).
void gelu_forward(float* y, const float* x, int64_t n) {
  for_each_vector(n, [=](int64_t i, __mmask16 m) {
    prefetch_ahead(x + i);
    const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
    __m512 gauss;
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(xv, normal_cdf_ps(xv, &gauss)));
  });
}

// d_x = d_y * (Phi(x) + x * exp(-x^2/2) / sqrt(2 pi)).
void gelu_backward(float* d_x, const float* d_y, const float* x, int64_t n) {
  for_each_vector(n, [=](int64_t i, __mmask16 m) {
    prefetch_ahead(x + i);
    prefetch_ahead(d_y + i);
    const __m512 deriv = gelu_derivative_ps(_mm512_maskz_loadu_ps(m, x + i));
    _mm512_mask_storeu_ps(d_x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, d_y + i), deriv));
  });
}

// y = round_to_bf16(gelu(x)): gelu_forward's values, rounded as round_to_bf16 rounds.
void gelu_forward_bf16(bf16* y, const float* x, int64_t n) {
  auto* out = reinterpret_cast<uint16_t*>(y);
  for_each_vector(n, [=](int64_t i, __mmask16 m) {
    prefetch_ahead(x + i);
    const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
    __m512 gauss;
    _mm256_mask_storeu_epi16(out + i, m,
                             bf16_bits_ps(_mm512_mul_ps(xv, normal_cdf_ps(xv, &gauss))));
  });
}

// gelu_backward's d_x over (N, C) rows, stored only as its bf16 rounding, and bias_backward's sums
// of it in bias_backward's order (bias_block_rows): the bits of the three kernels run in turn.
void gelu_backward_bf16(bf16* d_x, float* d_b, const float* d_y, const float* x, int64_t N,
                        int64_t C) {
  if (N <= 0) return;
  const int64_t rows_per_block = bias_block_rows(N);
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
  Scratch<float> partial(blocks * C);  // (blocks, C)
  auto* out = reinterpret_cast<uint16_t*>(d_x);
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
          prefetch_ahead(x + at);
          prefetch_ahead(d_y + at);
          const __m512 deriv = gelu_derivative_ps(_mm512_maskz_loadu_ps(m, x + at));
          const __m512 d = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, d_y + at), deriv);
          _mm256_mask_storeu_epi16(out + at, m, bf16_bits_ps(d));
          _mm512_mask_storeu_ps(sums + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, sums + j), d));
        }
      }
    }
    add_block_sums(d_b, partial.data, blocks, C);
  }
}

void tanh_forward(float* y, const float* x, int64_t n) {
  for_each_vector(n, [=](int64_t i, __mmask16 m) {
    _mm512_mask_storeu_ps(y + i, m, tanh_ps(_mm512_maskz_loadu_ps(m, x + i)));
  });
}

// d_x = d_y * (1 - y^2), in the reference's rounding order.
void tanh_backward(float* d_x, const float* d_y, const float* y, int64_t n) {
  for_each_vector(n, [=](int64_t i, __mmask16 m) {
    const __m512 yv = _mm512_maskz_loadu_ps(m, y + i);
    const __m512 deriv = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_mul_ps(yv, yv));
    _mm512_mask_storeu_ps(d_x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, d_y + i), deriv));
  });
}

}  // namespace cpuft::avx512
