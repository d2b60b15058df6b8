// AVX-512 fp32 -> bf16 rounding (bf16_bits_ps in vmath.h: integer arithmetic, AVX-512F/BW only).

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {

void round_to_bf16(bf16* y, const float* x, int64_t n) {
  const int64_t vectors = (n + kLanes - 1) / kLanes;
  auto* out = reinterpret_cast<uint16_t*>(y);
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t v = 0; v < vectors; ++v) {
    const __mmask16 m = lanes_mask(n - v * kLanes);
    prefetch_ahead(x + v * kLanes);
    _mm256_mask_storeu_epi16(out + v * kLanes, m,
                             bf16_bits_ps(_mm512_maskz_loadu_ps(m, x + v * kLanes)));
  }
}

}  // namespace cpuft::avx512
