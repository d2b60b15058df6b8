// Scalar reference: row softmax of (N, C) and its backward.
#pragma once

#include <cmath>
#include <cstdint>

namespace cpuft::reference {

// y may alias x. Subtracts the row max first so exp never overflows; multiplies by 1/sum (as
// torch's CPU kernel does).
template <typename T>
void softmax_forward(T* y, const T* x, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; ++i) {
    const T* xi = x + i * C;
    T* yi = y + i * C;
    T mx = xi[0];
    for (int64_t j = 1; j < C; ++j) mx = xi[j] > mx ? xi[j] : mx;
    T sum = 0;
    for (int64_t j = 0; j < C; ++j) {
      yi[j] = std::exp(xi[j] - mx);
      sum += yi[j];
    }
    const T inv = T(1) / sum;
    for (int64_t j = 0; j < C; ++j) yi[j] *= inv;
  }
}

// d_x = y * (d_y - sum_c(d_y * y)); d_x may alias d_y (the dot product is taken first).
template <typename T>
void softmax_backward(T* d_x, const T* d_y, const T* y, int64_t N, int64_t C) {
  for (int64_t i = 0; i < N; ++i) {
    T dot = 0;
    for (int64_t j = 0; j < C; ++j) dot += d_y[i * C + j] * y[i * C + j];
    for (int64_t j = 0; j < C; ++j) d_x[i * C + j] = y[i * C + j] * (d_y[i * C + j] - dot);
  }
}

}  // namespace cpuft::reference
