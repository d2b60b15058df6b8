// AVX-512 embeddings: gather-and-sum forward, race-free scatter-add backward.
#include <omp.h>

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {

// out(N,D) = word[ids] + pos[pos_ids] + type[type_ids]; rows in parallel.
void embeddings_forward(float* out, const float* word, const float* pos, const float* type,
                        const int32_t* ids, const int32_t* pos_ids, const int32_t* type_ids,
                        int64_t N, int64_t D) {
#pragma omp parallel for schedule(static) if (N * D >= kParallelMinElements)
  for (int64_t i = 0; i < N; ++i) {
    const float* w = word + int64_t{ids[i]} * D;
    const float* p = pos + int64_t{pos_ids[i]} * D;
    float* o = out + i * D;
    if (type == nullptr) {  // a family without token types
      for (int64_t j = 0; j < D; j += kLanes) {
        const __mmask16 m = lanes_mask(D - j);
        _mm512_mask_storeu_ps(
            o + j, m,
            _mm512_add_ps(_mm512_maskz_loadu_ps(m, w + j), _mm512_maskz_loadu_ps(m, p + j)));
      }
      continue;
    }
    const float* t = type + int64_t{type_ids[i]} * D;
    for (int64_t j = 0; j < D; j += kLanes) {
      const __mmask16 m = lanes_mask(D - j);
      const __m512 sum = _mm512_add_ps(
          _mm512_add_ps(_mm512_maskz_loadu_ps(m, w + j), _mm512_maskz_loadu_ps(m, p + j)),
          _mm512_maskz_loadu_ps(m, t + j));
      _mm512_mask_storeu_ps(o + j, m, sum);
    }
  }
}

// Scatter-add where ids repeat: threads split the D columns (in 16-float, one-cache-line slices)
// and each walks all N rows in order, so no two threads touch the same element and every element
// sums its rows in the reference's order (bit-identical to it, whatever the thread count).
void embeddings_backward(float* d_word, float* d_pos, float* d_type, const float* d_out,
                         const int32_t* ids, const int32_t* pos_ids, const int32_t* type_ids,
                         int64_t N, int64_t D) {
  const int64_t slices = (D + kLanes - 1) / kLanes;
#pragma omp parallel if (N * D >= kParallelMinElements)
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    const int64_t begin = slices * tid / nt, end = slices * (tid + 1) / nt;
    for (int64_t i = 0; i < N; ++i) {
      const float* g = d_out + i * D;
      float* dw = d_word + int64_t{ids[i]} * D;
      float* dp = d_pos + int64_t{pos_ids[i]} * D;
      float* dt = d_type == nullptr ? nullptr : d_type + int64_t{type_ids[i]} * D;
      for (int64_t s = begin; s < end; ++s) {
        const int64_t j = s * kLanes;
        const __mmask16 m = lanes_mask(D - j);
        const __m512 gv = _mm512_maskz_loadu_ps(m, g + j);
        _mm512_mask_storeu_ps(dw + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, dw + j), gv));
        _mm512_mask_storeu_ps(dp + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, dp + j), gv));
        if (dt != nullptr)
          _mm512_mask_storeu_ps(dt + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, dt + j), gv));
      }
    }
  }
}

}  // namespace cpuft::avx512
