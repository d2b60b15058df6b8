// Scalar reference: exact (erf) GELU and tanh, element-wise over n values.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

#include "core/bf16.h"

namespace cpuft::reference {

// y = x * 0.5 * (1 + erf(x / sqrt(2))), the formula of HF's `gelu` (torch's approximate='none').
template <typename T>
void gelu_forward(T* y, const T* x, int64_t n) {
  const T inv_sqrt2 = static_cast<T>(1.0 / std::numbers::sqrt2);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * T(0.5) * (T(1) + std::erf(x[i] * inv_sqrt2));
}

// d_x = d_y * (Phi(x) + x * phi(x)), Phi the normal CDF, phi = exp(-x^2/2) / sqrt(2 pi).
template <typename T>
void gelu_backward(T* d_x, const T* d_y, const T* x, int64_t n) {
  const T inv_sqrt2 = static_cast<T>(1.0 / std::numbers::sqrt2);
  const T inv_sqrt2pi = static_cast<T>(1.0 / std::sqrt(2.0 * std::numbers::pi));
  for (int64_t i = 0; i < n; ++i) {
    const T cdf = T(0.5) * (T(1) + std::erf(x[i] * inv_sqrt2));
    const T pdf = std::exp(T(-0.5) * x[i] * x[i]) * inv_sqrt2pi;
    d_x[i] = d_y[i] * (cdf + x[i] * pdf);
  }
}

// The fused bf16 forms (float only), defined by the unfused kernels run in turn:
// y = round_to_bf16(gelu(x));
inline void gelu_forward_bf16(bf16* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v;
    gelu_forward(&v, x + i, 1);
    y[i] = cpuft::round_to_bf16(v);
  }
}

// d_x(N,C) = round_to_bf16(gelu_backward(d_y, x)), and d_b(C) += the column sums of the unrounded
// values, rows in order (bias_backward).
inline void gelu_backward_bf16(bf16* d_x, float* d_b, const float* d_y, const float* x, int64_t N,
                               int64_t C) {
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < C; ++j) {
      float d;
      gelu_backward(&d, d_y + i * C + j, x + i * C + j, 1);
      d_x[i * C + j] = cpuft::round_to_bf16(d);
      d_b[j] += d;
    }
}

template <typename T>
void tanh_forward(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

// Uses the forward's output: d_x = d_y * (1 - y^2).
template <typename T>
void tanh_backward(T* d_x, const T* d_y, const T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d_x[i] = d_y[i] * (T(1) - y[i] * y[i]);
}

}  // namespace cpuft::reference
