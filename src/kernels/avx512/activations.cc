// AVX-512 exact GELU and tanh, element-wise; accuracy of the vector math in vmath.h.

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {
namespace {

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
  round_rows_and_sum_columns(d_x, d_b, N, C, [=](int64_t at, __mmask16 m) {
    prefetch_ahead(x + at);
    prefetch_ahead(d_y + at);
    const __m512 deriv = gelu_derivative_ps(_mm512_maskz_loadu_ps(m, x + at));
    return _mm512_mul_ps(_mm512_maskz_loadu_ps(m, d_y + at), deriv);
  });
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
