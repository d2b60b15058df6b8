// AVX-512 AdamW. Same float operations in the same order as reference::adamw_update (no FMA: the
// library is built with -ffp-contract=off), so the two agree bit for bit.

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {

void adamw_update(float* w, float* m, float* v, float* g, bf16* w_b, const AdamWStep& step,
                  int64_t n) {
  const __m512 lr_wd = _mm512_set1_ps(step.lr * step.weight_decay);
  const __m512 b1 = _mm512_set1_ps(step.beta1), b2 = _mm512_set1_ps(step.beta2);
  const __m512 one_minus_b1 = _mm512_set1_ps(step.one_minus_beta1);
  const __m512 one_minus_b2 = _mm512_set1_ps(step.one_minus_beta2);
  const __m512 step_size = _mm512_set1_ps(step.lr / step.bias_correction1);
  const __m512 bc2_sqrt = _mm512_set1_ps(__builtin_sqrtf(step.bias_correction2));
  const __m512 eps = _mm512_set1_ps(step.eps);
  const __m512 grad_scale = _mm512_set1_ps(step.grad_scale);
  const bool zero_grad = step.zero_grad;
  auto* w_bits = reinterpret_cast<uint16_t*>(w_b);
  const int64_t vectors = (n + kLanes - 1) / kLanes;
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t k = 0; k < vectors; ++k) {
    const int64_t i = k * kLanes;
    const __mmask16 mk = lanes_mask(n - i);
    __m512 wv = _mm512_maskz_loadu_ps(mk, w + i);
    __m512 mv = _mm512_maskz_loadu_ps(mk, m + i);
    __m512 vv = _mm512_maskz_loadu_ps(mk, v + i);
    const __m512 gv = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, g + i), grad_scale);
    if (zero_grad) _mm512_mask_storeu_ps(g + i, mk, _mm512_setzero_ps());
    wv = _mm512_sub_ps(wv, _mm512_mul_ps(lr_wd, wv));
    mv = _mm512_add_ps(_mm512_mul_ps(b1, mv), _mm512_mul_ps(one_minus_b1, gv));
    vv = _mm512_add_ps(_mm512_mul_ps(b2, vv), _mm512_mul_ps(_mm512_mul_ps(one_minus_b2, gv), gv));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vv), bc2_sqrt), eps);
    wv = _mm512_sub_ps(wv, _mm512_div_ps(_mm512_mul_ps(step_size, mv), denom));
    _mm512_mask_storeu_ps(w + i, mk, wv);
    _mm512_mask_storeu_ps(m + i, mk, mv);
    _mm512_mask_storeu_ps(v + i, mk, vv);
    if (w_bits != nullptr) _mm256_mask_storeu_epi16(w_bits + i, mk, bf16_bits_ps(wv));
  }
}

}  // namespace cpuft::avx512
