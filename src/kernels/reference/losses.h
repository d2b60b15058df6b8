// Scalar reference: the two heads' losses, each returning the mean loss and writing its gradient.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/check.h"

namespace cpuft::reference {

// logits(N,K), labels(N) in [0, K), label_smoothing eps in [0, 1] (torch's CrossEntropyLoss(
// label_smoothing=eps), which is HF Trainer's LabelSmoother for single-label classification):
//   loss = mean_i((1 - eps) (lse_i - z_i[label_i]) + eps mean_k(lse_i - z_ik)),
//   lse_i = logsumexp(z_i);
//   d_logits = (softmax(z) - ((1 - eps) onehot(label) + eps / K)) * (loss_scale / N) (overwritten).
// eps = 0 is plain cross-entropy, bit for bit (the smoothing terms are skipped or exact).
template <typename T>
T cross_entropy_forward_backward(T* d_logits, const T* logits, const int32_t* labels,
                                 float loss_scale, int64_t N, int64_t K, float label_smoothing) {
  for (int64_t i = 0; i < N; ++i)
    CPUFT_REQUIRE(labels[i] >= 0 && labels[i] < K, "cross_entropy: label ", labels[i], " of row ",
                  i, " is outside [0, ", K, ")");
  const T g = static_cast<T>(loss_scale) / static_cast<T>(N);
  const T eps = static_cast<T>(label_smoothing);
  const T off = eps / static_cast<T>(K);  // target of every other class
  const T on = (T(1) - eps) + off;        // target of the label's class
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    const T* z = logits + i * K;
    T mx = z[0];
    for (int64_t k = 1; k < K; ++k) mx = z[k] > mx ? z[k] : mx;
    T sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += std::exp(z[k] - mx);
    const T inv = T(1) / sum;
    const T lse = mx + std::log(sum);
    double row = static_cast<double>(lse - z[labels[i]]);
    if (label_smoothing != 0.0f) {
      double smooth = 0;
      for (int64_t k = 0; k < K; ++k) smooth += static_cast<double>(lse - z[k]);
      const double e = static_cast<double>(label_smoothing);
      row = (1.0 - e) * row + e * (smooth / static_cast<double>(K));
    }
    total += row;
    for (int64_t k = 0; k < K; ++k) {
      const T target = k == labels[i] ? on : off;
      d_logits[i * K + k] = (std::exp(z[k] - mx) * inv - target) * g;
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
