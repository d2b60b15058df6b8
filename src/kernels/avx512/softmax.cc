// AVX-512 row softmax. Attention rows are short (C <= 512) and many, so rows go to threads and
// each row is three passes over L1-resident data.

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {

// y may alias x: every pass reads and writes the same element positions.
void softmax_forward(float* y, const float* x, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static) if (N * C >= kParallelMinElements)
  for (int64_t i = 0; i < N; ++i) {
    const float* xi = x + i * C;
    float* yi = y + i * C;
    const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
    __m512 mx = neg_inf;
    for (int64_t j = 0; j < C; j += kLanes)
      mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(neg_inf, lanes_mask(C - j), xi + j));
    const __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < C; j += kLanes) {
      const __mmask16 m = lanes_mask(C - j);
      const __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, xi + j), vmax));
      sum = _mm512_mask_add_ps(sum, m, sum, e);
      _mm512_mask_storeu_ps(yi + j, m, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (int64_t j = 0; j < C; j += kLanes) {
      const __mmask16 m = lanes_mask(C - j);
      _mm512_mask_storeu_ps(yi + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, yi + j), inv));
    }
  }
}

// d_x = y * (d_y - sum_c(d_y * y)); d_x may alias d_y (dot product first).
void softmax_backward(float* d_x, const float* d_y, const float* y, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static) if (N * C >= kParallelMinElements)
  for (int64_t i = 0; i < N; ++i) {
    const float* dyi = d_y + i * C;
    const float* yi = y + i * C;
    __m512 dot = _mm512_setzero_ps();
    for (int64_t j = 0; j < C; j += kLanes) {
      const __mmask16 m = lanes_mask(C - j);
      dot =
          _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, dyi + j), _mm512_maskz_loadu_ps(m, yi + j), dot);
    }
    const __m512 vdot = _mm512_set1_ps(_mm512_reduce_add_ps(dot));
    for (int64_t j = 0; j < C; j += kLanes) {
      const __mmask16 m = lanes_mask(C - j);
      const __m512 dx = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, yi + j),
                                      _mm512_sub_ps(_mm512_maskz_loadu_ps(m, dyi + j), vdot));
      _mm512_mask_storeu_ps(d_x + i * C + j, m, dx);
    }
  }
}

}  // namespace cpuft::avx512
