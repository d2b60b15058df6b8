// Scalar reference: the two heads' losses, each returning the mean loss and writing its gradient.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/check.h"

namespace cpuft::reference {

// logits(N,K), labels(N) in [0, K). loss = mean_i(logsumexp(logits_i) - logits_i[label_i]);
// d_logits = (softmax(logits) - onehot(label)) * (loss_scale / N)   (overwritten).
template <typename T>
T cross_entropy_forward_backward(T* d_logits, const T* logits, const int32_t* labels,
                                 float loss_scale, int64_t N, int64_t K) {
  for (int64_t i = 0; i < N; ++i)
    CPUFT_REQUIRE(labels[i] >= 0 && labels[i] < K, "cross_entropy: label ", labels[i], " of row ",
                  i, " is outside [0, ", K, ")");
  const T g = static_cast<T>(loss_scale) / static_cast<T>(N);
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    const T* z = logits + i * K;
    T mx = z[0];
    for (int64_t k = 1; k < K; ++k) mx = z[k] > mx ? z[k] : mx;
    T sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += std::exp(z[k] - mx);
    const T inv = T(1) / sum;
    total += static_cast<double>(mx + std::log(sum) - z[labels[i]]);
    for (int64_t k = 0; k < K; ++k) {
      const T onehot = k == labels[i] ? T(1) : T(0);
      d_logits[i * K + k] = (std::exp(z[k] - mx) * inv - onehot) * g;
    }
  }
  return static_cast<T>(total / static_cast<double>(N));
}

// pred(N), target(N). loss = mean((pred - target)^2); d_pred = (pred - target) * (2 * loss_scale
// / N)   (overwritten).
template <typename T>
T mse_forward_backward(T* d_pred, const T* pred, const T* target, float loss_scale, int64_t N) {
  const T g = T(2) * static_cast<T>(loss_scale) / static_cast<T>(N);
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    const T diff = pred[i] - target[i];
    total += static_cast<double>(diff) * static_cast<double>(diff);
    d_pred[i] = diff * g;
  }
  return static_cast<T>(total / static_cast<double>(N));
}

}  // namespace cpuft::reference
