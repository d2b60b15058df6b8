// Scalar reference: bias gradient, sum of squares (clip norm) and scaling.
#pragma once

#include <cstdint>

namespace cpuft::reference {

// d_b(C) += sum over rows of d_y(N, C).   (accumulate, rows in order)
template <typename T>
void bias_backward(T* d_b, const T* d_y, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < C; ++j) d_b[j] += d_y[i * C + j];
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
