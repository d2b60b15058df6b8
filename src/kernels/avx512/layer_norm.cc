// AVX-512 LayerNorm (torch semantics: biased variance, eps inside the square root).

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {
namespace {

// One row of D: two-pass mean and variance (sum of squared deviations, which unlike
// E[x^2] - mean^2 does not cancel), then y = (x - mean) * rstd * gamma + beta.
inline void normalize_row(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                          const float* beta, float eps, int64_t D) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < D; j += kLanes)
    acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(lanes_mask(D - j), x + j));
  const float mu = _mm512_reduce_add_ps(acc) / static_cast<float>(D);
  const __m512 vmu = _mm512_set1_ps(mu);
  acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < D; j += kLanes) {
    const __mmask16 m = lanes_mask(D - j);
    const __m512 dev = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + j), vmu);
    acc = _mm512_fmadd_ps(dev, dev, acc);
  }
  const float var = _mm512_reduce_add_ps(acc) / static_cast<float>(D);
  const float rs = 1.0f / __builtin_sqrtf(var + eps);
  const __m512 vrs = _mm512_set1_ps(rs);
  for (int64_t j = 0; j < D; j += kLanes) {
    const __mmask16 m = lanes_mask(D - j);
    const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), vmu), vrs);
    const __m512 out = _mm512_fmadd_ps(xhat, _mm512_maskz_loadu_ps(m, gamma + j),
                                       _mm512_maskz_loadu_ps(m, beta + j));
    _mm512_mask_storeu_ps(y + j, m, out);
  }
  *mean = mu;
  *rstd = rs;
}

}  // namespace

void layer_norm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                        const float* beta, float eps, int64_t N, int64_t D) {
#pragma omp parallel for schedule(static) if (N * D >= kParallelMinElements)
  for (int64_t i = 0; i < N; ++i)
    normalize_row(y + i * D, mean + i, rstd + i, x + i * D, gamma, beta, eps, D);
}

// s = a + b written row by row, then normalised while the row is still in L1.
void add_layer_norm_forward(float* y, float* s, float* mean, float* rstd, const float* a,
                            const float* b, const float* gamma, const float* beta, float eps,
                            int64_t N, int64_t D) {
#pragma omp parallel for schedule(static) if (N * D >= kParallelMinElements)
  for (int64_t i = 0; i < N; ++i) {
    float* si = s + i * D;
    for (int64_t j = 0; j < D; j += kLanes) {
      const __mmask16 m = lanes_mask(D - j);
      _mm512_mask_storeu_ps(si + j, m,
                            _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i * D + j),
                                          _mm512_maskz_loadu_ps(m, b + i * D + j)));
    }
    normalize_row(y + i * D, mean + i, rstd + i, si, gamma, beta, eps, D);
  }
}

// d_x = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = d_y * gamma   (overwritten)
// d_gamma += sum_rows(d_y * xhat), d_beta += sum_rows(d_y)               (accumulated)
// Parameter gradients: rows are cut into fixed blocks (the cut depends on N only), each block sums
// into its own partial row, then the partials are added in block order. No races, and the result
// is the same for any thread count.
void layer_norm_backward(float* d_x, float* d_gamma, float* d_beta, const float* d_y,
                         const float* x, const float* mean, const float* rstd, const float* gamma,
                         int64_t N, int64_t D) {
  if (N <= 0) return;
  const int64_t rows_per_block = max_i64(16, (N + 255) / 256);  // at most 256 blocks
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
  Scratch<float> partial(2 * blocks * D);  // (blocks, 2, D): d_gamma then d_beta partials
  const float inv_d = 1.0f / static_cast<float>(D);
#pragma omp parallel if (N * D >= kParallelMinElements)
  {
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      float* pg = partial.data + 2 * blk * D;
      float* pb = pg + D;
      for (int64_t j = 0; j < D; ++j) pg[j] = pb[j] = 0.0f;
      const int64_t row_end = (blk + 1) * rows_per_block < N ? (blk + 1) * rows_per_block : N;
      for (int64_t i = blk * rows_per_block; i < row_end; ++i) {
        const float* dyi = d_y + i * D;
        const float* xi = x + i * D;
        const __m512 vmu = _mm512_set1_ps(mean[i]);
        const __m512 vrs = _mm512_set1_ps(rstd[i]);
        __m512 sum_g = _mm512_setzero_ps(), sum_gx = _mm512_setzero_ps();
        for (int64_t j = 0; j < D; j += kLanes) {
          const __mmask16 m = lanes_mask(D - j);
          const __m512 dy = _mm512_maskz_loadu_ps(m, dyi + j);
          const __m512 xhat =
              _mm512_maskz_mul_ps(m, _mm512_sub_ps(_mm512_maskz_loadu_ps(m, xi + j), vmu), vrs);
          const __m512 g = _mm512_mul_ps(dy, _mm512_maskz_loadu_ps(m, gamma + j));
          sum_g = _mm512_add_ps(sum_g, g);
          sum_gx = _mm512_fmadd_ps(g, xhat, sum_gx);
          _mm512_mask_storeu_ps(pg + j, m,
                                _mm512_fmadd_ps(dy, xhat, _mm512_maskz_loadu_ps(m, pg + j)));
          _mm512_mask_storeu_ps(pb + j, m, _mm512_add_ps(dy, _mm512_maskz_loadu_ps(m, pb + j)));
        }
        const __m512 mean_g = _mm512_set1_ps(_mm512_reduce_add_ps(sum_g) * inv_d);
        const __m512 mean_gx = _mm512_set1_ps(_mm512_reduce_add_ps(sum_gx) * inv_d);
        const float* next_x = i + 1 < N ? xi + D : xi;  // pointers stay inside the arrays
        const float* next_dy = i + 1 < N ? dyi + D : dyi;
        // Written after all reads of row i, so d_x may even alias d_y.
        for (int64_t j = 0; j < D; j += kLanes) {
          const __mmask16 m = lanes_mask(D - j);
          const __m512 xhat =
              _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, xi + j), vmu), vrs);
          const __m512 g =
              _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dyi + j), _mm512_maskz_loadu_ps(m, gamma + j));
          // The next row's x and d_y into L1 while this pass runs on cached data: the first pass
          // is otherwise bound by the latency of its two streams (~3x slower out of DRAM).
          _mm_prefetch(reinterpret_cast<const char*>(next_x + j), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(next_dy + j), _MM_HINT_T0);
          const __m512 dx =
              _mm512_mul_ps(_mm512_fnmadd_ps(xhat, mean_gx, _mm512_sub_ps(g, mean_g)), vrs);
          _mm512_mask_storeu_ps(d_x + i * D + j, m, dx);
        }
      }
    }
    // Implicit barrier above; now columns in parallel, blocks summed in order.
#pragma omp for schedule(static)
    for (int64_t j = 0; j < D; j += kLanes) {
      const __mmask16 m = lanes_mask(D - j);
      __m512 sg = _mm512_setzero_ps(), sb = _mm512_setzero_ps();
      for (int64_t blk = 0; blk < blocks; ++blk) {
        sg = _mm512_add_ps(sg, _mm512_maskz_loadu_ps(m, partial.data + 2 * blk * D + j));
        sb = _mm512_add_ps(sb, _mm512_maskz_loadu_ps(m, partial.data + (2 * blk + 1) * D + j));
      }
      _mm512_mask_storeu_ps(d_gamma + j, m,
                            _mm512_add_ps(_mm512_maskz_loadu_ps(m, d_gamma + j), sg));
      _mm512_mask_storeu_ps(d_beta + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d_beta + j), sb));
    }
  }
}

}  // namespace cpuft::avx512
