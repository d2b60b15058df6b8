// AVX-512 AdamW. Same float operations in the same order as reference::adamw_update (no FMA: the
// library is built with -ffp-contract=off), so the two agree bit for bit.

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {

namespace {

// The step's constants as vectors, and the update of the lanes `mk` of 16 elements at i.
struct AdamWVectors {
  explicit AdamWVectors(const AdamWStep& step)
      : lr_wd(_mm512_set1_ps(step.lr * step.weight_decay)),
        b1(_mm512_set1_ps(step.beta1)),
        b2(_mm512_set1_ps(step.beta2)),
        one_minus_b1(_mm512_set1_ps(step.one_minus_beta1)),
        one_minus_b2(_mm512_set1_ps(step.one_minus_beta2)),
        step_size(_mm512_set1_ps(step.lr / step.bias_correction1)),
        bc2_sqrt(_mm512_set1_ps(__builtin_sqrtf(step.bias_correction2))),
        eps(_mm512_set1_ps(step.eps)),
        grad_scale(_mm512_set1_ps(step.grad_scale)),
        zero_grad(step.zero_grad) {}

  void update(float* w, float* m, float* v, float* g, uint16_t* w_bits, int64_t i,
              __mmask16 mk) const {
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

  // The weight decay alone: the update of lanes whose g is +-0 and whose m and v are +0.
  void decay(float* w, uint16_t* w_bits, int64_t i, __mmask16 mk) const {
    __m512 wv = _mm512_maskz_loadu_ps(mk, w + i);
    wv = _mm512_sub_ps(wv, _mm512_mul_ps(lr_wd, wv));
    _mm512_mask_storeu_ps(w + i, mk, wv);
    if (w_bits != nullptr) _mm256_mask_storeu_epi16(w_bits + i, mk, bf16_bits_ps(wv));
  }

  __m512 lr_wd, b1, b2, one_minus_b1, one_minus_b2, step_size, bc2_sqrt, eps, grad_scale;
  bool zero_grad;
};

}  // namespace

void adamw_update(float* w, float* m, float* v, float* g, bf16* w_b, const AdamWStep& step,
                  int64_t n) {
  const AdamWVectors c(step);
  auto* w_bits = reinterpret_cast<uint16_t*>(w_b);
  const int64_t vectors = (n + kLanes - 1) / kLanes;
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t k = 0; k < vectors; ++k) {
    const int64_t i = k * kLanes;
    c.update(w, m, v, g, w_bits, i, lanes_mask(n - i));
  }
}

// Per vector: the lanes whose g is +-0 and whose m and v are all-zero bits are untouched. A vector
// of untouched lanes costs the reads of g, m and v (g mostly from never-written pages of the word
// table's gradient, which read as zeros) and, with weight decay, the decay of w; the others get
// the update, whose m, v and w the untouched lanes do not take (their m and v are +0 already).
void adamw_update_sparse(float* w, float* m, float* v, float* g, bf16* w_b, const AdamWStep& step,
                         int64_t n) {
  const AdamWVectors c(step);
  const bool decays = step.weight_decay != 0.0f;
  auto* w_bits = reinterpret_cast<uint16_t*>(w_b);
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  const int64_t vectors = (n + kLanes - 1) / kLanes;
#pragma omp parallel for schedule(static) if (n >= kParallelMinElements)
  for (int64_t k = 0; k < vectors; ++k) {
    const int64_t i = k * kLanes;
    const __mmask16 mk = lanes_mask(n - i);
    const __m512i g_bits = _mm512_maskz_loadu_epi32(mk, g + i);
    const __m512i m_bits = _mm512_maskz_loadu_epi32(mk, m + i);
    const __m512i v_bits = _mm512_maskz_loadu_epi32(mk, v + i);
    const __m512i any =
        _mm512_or_si512(_mm512_and_si512(g_bits, magnitude), _mm512_or_si512(m_bits, v_bits));
    const __mmask16 touched = _mm512_mask_test_epi32_mask(mk, any, any);
    if (touched == 0) {
      if (decays) c.decay(w, w_bits, i, mk);
      continue;
    }
    const __m512 w_old = _mm512_maskz_loadu_ps(mk, w + i);
    const __m512 gv = _mm512_mul_ps(_mm512_castsi512_ps(g_bits), c.grad_scale);
    const __m512 w_decayed = _mm512_sub_ps(w_old, _mm512_mul_ps(c.lr_wd, w_old));
    const __m512 mv = _mm512_add_ps(_mm512_mul_ps(c.b1, _mm512_castsi512_ps(m_bits)),
                                    _mm512_mul_ps(c.one_minus_b1, gv));
    const __m512 vv = _mm512_add_ps(_mm512_mul_ps(c.b2, _mm512_castsi512_ps(v_bits)),
                                    _mm512_mul_ps(_mm512_mul_ps(c.one_minus_b2, gv), gv));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vv), c.bc2_sqrt), c.eps);
    const __m512 updated =
        _mm512_sub_ps(w_decayed, _mm512_div_ps(_mm512_mul_ps(c.step_size, mv), denom));
    const __m512 w_new = _mm512_mask_blend_ps(touched, decays ? w_decayed : w_old, updated);
    const __mmask16 written = decays ? mk : touched;
    _mm512_mask_storeu_ps(w + i, written, w_new);
    if (c.zero_grad) _mm512_mask_storeu_ps(g + i, touched, _mm512_setzero_ps());
    _mm512_mask_storeu_ps(m + i, touched, mv);
    _mm512_mask_storeu_ps(v + i, touched, vv);
    if (w_bits != nullptr) _mm256_mask_storeu_epi16(w_bits + i, written, bf16_bits_ps(w_new));
  }
}

}  // namespace cpuft::avx512
