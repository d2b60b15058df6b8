// Scalar reference: one AdamW update (torch.optim.AdamW, decoupled weight decay).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/bf16.h"
#include "kernels/kernels.h"

namespace cpuft::reference {

// Operation order of torch's single-tensor AdamW, each line rounded in T:
//   w = w - (lr * wd) * w
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   w = w - (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)
// (torch writes the decay as w *= 1 - lr*wd and the first moment as a lerp; both differ from
// these lines by at most an ulp or so.) g is read as g * grad_scale (rounded in T), then zeroed
// with zero_grad; w_b (nullptr: none) gets the new w rounded to float, then to bf16.
template <typename T>
void adamw_update(T* w, T* m, T* v, T* g, bf16* w_b, const AdamWStep& step, int64_t n) {
  const T lr_wd = static_cast<T>(step.lr) * static_cast<T>(step.weight_decay);
  const T b1 = static_cast<T>(step.beta1), b2 = static_cast<T>(step.beta2);
  const T one_minus_b1 = static_cast<T>(step.one_minus_beta1);
  const T one_minus_b2 = static_cast<T>(step.one_minus_beta2);
  const T step_size = static_cast<T>(step.lr) / static_cast<T>(step.bias_correction1);
  const T bc2_sqrt = std::sqrt(static_cast<T>(step.bias_correction2));
  const T eps = static_cast<T>(step.eps);
  const T grad_scale = static_cast<T>(step.grad_scale);
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i] * grad_scale;
    if (step.zero_grad) g[i] = T(0);
    w[i] = w[i] - lr_wd * w[i];
    m[i] = b1 * m[i] + one_minus_b1 * gi;
    v[i] = b2 * v[i] + one_minus_b2 * gi * gi;
    const T denom = std::sqrt(v[i]) / bc2_sqrt + eps;
    w[i] = w[i] - step_size * m[i] / denom;
    if (w_b != nullptr) w_b[i] = cpuft::round_to_bf16(static_cast<float>(w[i]));
  }
}

// KernelTable::adamw_update_sparse: an element whose g is +-0 and whose m and v are all-zero bits
// is only decayed (left as it is without weight decay), the others updated as above.
template <typename T>
void adamw_update_sparse(T* w, T* m, T* v, T* g, bf16* w_b, const AdamWStep& step, int64_t n) {
  const T lr_wd = static_cast<T>(step.lr) * static_cast<T>(step.weight_decay);
  // By the bits, as the AVX-512 twin decides (a float comparison would take a denormal m for 0
  // where the CPU treats denormals as zero): g +-0, m and v +0.
  auto bits = [](T x) {
    const float f = static_cast<float>(x);
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
  };
  for (int64_t i = 0; i < n; ++i) {
    const bool untouched = (bits(g[i]) & 0x7fffffffu) == 0 && bits(m[i]) == 0 && bits(v[i]) == 0;
    if (!untouched) {
      adamw_update(w + i, m + i, v + i, g + i, w_b == nullptr ? nullptr : w_b + i, step, 1);
    } else if (step.weight_decay != 0.0f) {
      w[i] = w[i] - lr_wd * w[i];
      if (w_b != nullptr) w_b[i] = cpuft::round_to_bf16(static_cast<float>(w[i]));
    }
  }
}

}  // namespace cpuft::reference
