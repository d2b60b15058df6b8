// AVX-512 fp32 -> bf16 rounding, in integer arithmetic so that it needs only AVX-512F/BW (not the
// AVX512_BF16 conversion instruction, which flushes subnormals and so differs from torch's
// rounding and from the scalar twin).

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {

void round_to_bf16(bf16* y, const float* x, int64_t n) {
  const int64_t vectors = (n + kLanes - 1) / kLanes;
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i infinity = _mm512_set1_epi32(0x7F800000);
  const __m512i round_bias = _mm512_set1_epi32(0x7FFF);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i quiet_bit = _mm512_set1_epi32(0x0040);
  auto* out = reinterpret_cast<uint16_t*>(y);
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t v = 0; v < vectors; ++v) {
    const __mmask16 m = lanes_mask(n - v * kLanes);
    const __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + v * kLanes));
    // Nearest, ties to even: u + 0x7FFF + (bit 16 of u), keep the upper half.
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    const __m512i rounded =
        _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, round_bias), lsb), 16);
    // NaN (|u| > infinity's bits): keep the upper half, quieted.
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), infinity);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), quiet_bit);
    const __m512i halves = _mm512_mask_blend_epi32(nan, rounded, quiet);
    _mm256_mask_storeu_epi16(out + v * kLanes, m, _mm512_cvtepi32_epi16(halves));
  }
}

}  // namespace cpuft::avx512
