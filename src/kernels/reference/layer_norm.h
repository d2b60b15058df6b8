// Scalar reference: LayerNorm over the last dimension, as torch.nn.LayerNorm (biased variance,
// eps inside the square root).
#pragma once

#include <cmath>
#include <cstdint>

namespace cpuft::reference {

// y(N,D) = (x - mean) * rstd * gamma + beta; mean(N), rstd(N) = 1 / sqrt(var + eps) written.
template <typename T>
void layer_norm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta,
                        float eps, int64_t N, int64_t D) {
  for (int64_t i = 0; i < N; ++i) {
    const T* xi = x + i * D;
    T sum = 0;
    for (int64_t j = 0; j < D; ++j) sum += xi[j];
    const T mu = sum / static_cast<T>(D);
    T sq = 0;
    for (int64_t j = 0; j < D; ++j) sq += (xi[j] - mu) * (xi[j] - mu);
    const T var = sq / static_cast<T>(D);  // biased, as torch
    const T rs = T(1) / std::sqrt(var + static_cast<T>(eps));
    for (int64_t j = 0; j < D; ++j) y[i * D + j] = (xi[j] - mu) * rs * gamma[j] + beta[j];
    mean[i] = mu;
    rstd[i] = rs;
  }
}

// s = a + b (written, the backward needs it), y = LayerNorm(s).
template <typename T>
void add_layer_norm_forward(T* y, T* s, T* mean, T* rstd, const T* a, const T* b, const T* gamma,
                            const T* beta, float eps, int64_t N, int64_t D) {
  for (int64_t k = 0; k < N * D; ++k) s[k] = a[k] + b[k];
  layer_norm_forward(y, mean, rstd, s, gamma, beta, eps, N, D);
}

// With xhat = (x - mean) * rstd and g = d_y * gamma:
//   d_x = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))    (overwritten)
//   d_gamma += sum_rows(d_y * xhat), d_beta += sum_rows(d_y)     (accumulated)
template <typename T>
void layer_norm_backward(T* d_x, T* d_gamma, T* d_beta, const T* d_y, const T* x, const T* mean,
                         const T* rstd, const T* gamma, int64_t N, int64_t D) {
  for (int64_t i = 0; i < N; ++i) {
    const T* dyi = d_y + i * D;
    const T* xi = x + i * D;
    T sum_g = 0, sum_gx = 0;
    for (int64_t j = 0; j < D; ++j) {
      const T xhat = (xi[j] - mean[i]) * rstd[i];
      const T g = dyi[j] * gamma[j];
      sum_g += g;
      sum_gx += g * xhat;
      d_gamma[j] += dyi[j] * xhat;
      d_beta[j] += dyi[j];
    }
    const T mean_g = sum_g / static_cast<T>(D);
    const T mean_gx = sum_gx / static_cast<T>(D);
    for (int64_t j = 0; j < D; ++j) {
      const T xhat = (xi[j] - mean[i]) * rstd[i];
      d_x[i * D + j] = (dyi[j] * gamma[j] - mean_g - xhat * mean_gx) * rstd[i];
    }
  }
}

}  // namespace cpuft::reference
