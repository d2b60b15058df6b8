// AVX-512 bias gradient, sum of squares and scaling.

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {

// d_b(C) += sum_rows d_y(N, C). Fixed row blocks (cut from N only) sum into partial rows, which are
// then added in block order: race-free and the same for any thread count.
void bias_backward(float* d_b, const float* d_y, int64_t N, int64_t C) {
  if (N <= 0) return;
  const int64_t rows_per_block = bias_block_rows(N);
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
  Scratch<float> partial(blocks * C);  // (blocks, C)
#pragma omp parallel if (N * C >= kParallelMinElements)
  {
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t row_begin = blk * rows_per_block;
      const int64_t row_end = row_begin + rows_per_block < N ? row_begin + rows_per_block : N;
      for (int64_t j = 0; j < C; j += kLanes) {
        const __mmask16 m = lanes_mask(C - j);
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = row_begin; i < row_end; ++i)
          acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, d_y + i * C + j));
        _mm512_mask_storeu_ps(partial.data + blk * C + j, m, acc);
      }
    }
    add_block_sums(d_b, partial.data, blocks, C);
  }
}

// bias_backward and round_to_bf16 of the same d_y in one pass, with their bits.
void bias_backward_bf16(bf16* d_y_b, float* d_b, const float* d_y, int64_t N, int64_t C) {
  round_rows_and_sum_columns(d_y_b, d_b, N, C, [=](int64_t at, __mmask16 m) {
    prefetch_ahead(d_y + at);
    return _mm512_maskz_loadu_ps(m, d_y + at);
  });
}

// sum(x^2) in double: fixed 64K-element blocks, per-block partials summed in order (the same
// result for any thread count, which matters for gradient clipping across ranks).
double sum_squares(const float* x, int64_t n) {
  constexpr int64_t kBlock = int64_t{1} << 16;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks == 0) return 0.0;
  Scratch<double> partial(blocks);
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t end = (blk + 1) * kBlock < n ? (blk + 1) * kBlock : n;
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    for (int64_t i = blk * kBlock; i < end; i += kLanes) {
      prefetch_ahead(x + i);
      const __m512 v = _mm512_maskz_loadu_ps(lanes_mask(end - i), x + i);
      const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
      const __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
      a0 = _mm512_fmadd_pd(lo, lo, a0);
      a1 = _mm512_fmadd_pd(hi, hi, a1);
    }
    partial.data[blk] = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
  }
  double total = 0;
  for (int64_t blk = 0; blk < blocks; ++blk) total += partial.data[blk];
  return total;
}

void scale(float* x, float s, int64_t n) {
  const __m512 vs = _mm512_set1_ps(s);
  const int64_t vectors = (n + kLanes - 1) / kLanes;
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t v = 0; v < vectors; ++v) {
    const __mmask16 m = lanes_mask(n - v * kLanes);
    _mm512_mask_storeu_ps(x + v * kLanes, m,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + v * kLanes), vs));
  }
}

}  // namespace cpuft::avx512
