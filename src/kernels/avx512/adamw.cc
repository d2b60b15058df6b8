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

  // The update of loaded lanes: w decayed, then the step; m and v as updated. One sequence of
  // operations for both kernels, so the sparse one's touched lanes are adamw_update's bits.
  struct Lanes {
    __m512 w_decayed, w, m, v;
  };
  Lanes step(__m512 w, __m512 m, __m512 v, __m512 g) const {
    const __m512 gv = _mm512_mul_ps(g, grad_scale);
    Lanes out;
    out.w_decayed = _mm512_sub_ps(w, _mm512_mul_ps(lr_wd, w));
    out.m = _mm512_add_ps(_mm512_mul_ps(b1, m), _mm512_mul_ps(one_minus_b1, gv));
    out.v = _mm512_add_ps(_mm512_mul_ps(b2, v), _mm512_mul_ps(_mm512_mul_ps(one_minus_b2, gv), gv));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(out.v), bc2_sqrt), eps);
    out.w = _mm512_sub_ps(out.w_decayed, _mm512_div_ps(_mm512_mul_ps(step_size, out.m), denom));
    return out;
  }

  void update(float* w, float* m, float* v, float* g, uint16_t* w_bits, int64_t i,
              __mmask16 mk) const {
    const Lanes u = step(_mm512_maskz_loadu_ps(mk, w + i), _mm512_maskz_loadu_ps(mk, m + i),
                         _mm512_maskz_loadu_ps(mk, v + i), _mm512_maskz_loadu_ps(mk, g + i));
    if (zero_grad) _mm512_mask_storeu_ps(g + i, mk, _mm512_setzero_ps());
    _mm512_mask_storeu_ps(w + i, mk, u.w);
    _mm512_mask_storeu_ps(m + i, mk, u.m);
    _mm512_mask_storeu_ps(v + i, mk, u.v);
    if (w_bits != nullptr) _mm256_mask_storeu_epi16(w_bits + i, mk, bf16_bits_ps(u.w));
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
    prefetch_ahead(w + i);
    prefetch_ahead(m + i);
    prefetch_ahead(v + i);
    prefetch_ahead(g + i);
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
    prefetch_ahead(w + i);
    prefetch_ahead(m + i);
    prefetch_ahead(v + i);
    prefetch_ahead(g + i);
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
    const AdamWVectors::Lanes u = c.step(w_old, _mm512_castsi512_ps(m_bits),
                                         _mm512_castsi512_ps(v_bits), _mm512_castsi512_ps(g_bits));
    const __m512 w_new = _mm512_mask_blend_ps(touched, decays ? u.w_decayed : w_old, u.w);
    const __mmask16 written = decays ? mk : touched;
    _mm512_mask_storeu_ps(w + i, written, w_new);
    if (c.zero_grad) _mm512_mask_storeu_ps(g + i, touched, _mm512_setzero_ps());
    _mm512_mask_storeu_ps(m + i, touched, u.m);
    _mm512_mask_storeu_ps(v + i, touched, u.v);
    if (w_bits != nullptr) _mm256_mask_storeu_epi16(w_bits + i, written, bf16_bits_ps(w_new));
  }
}

}  // namespace cpuft::avx512
