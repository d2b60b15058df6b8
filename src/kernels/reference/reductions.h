// Scalar reference: bias gradient, sum of squares (clip norm) and scaling.
#pragma once

#include <cstdint>

#include "kernels/reference/convert.h"

namespace cpuft::reference {

// d_b(C) += sum over rows of d_y(N, C).   (accumulate, rows in order)
template <typename T>
void bias_backward(T* d_b, const T* d_y, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < C; ++j) d_b[j] += d_y[i * C + j];
}

// bias_backward and round_to_bf16 of the same d_y, as one kernel (float only).
inline void bias_backward_bf16(bf16* d_y_b, float* d_b, const float* d_y, int64_t N, int64_t C) {
  bias_backward(d_b, d_y, N, C);
  round_to_bf16(d_y_b, d_y, N * C);
}

// sum(x^2), accumulated in double whatever T.
template <typename T>
double sum_squares(const T* x, int64_t n) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return total;
}

// x *= s.
template <typename T>
void scale(T* x, T s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace cpuft::reference
