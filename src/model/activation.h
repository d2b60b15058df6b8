// The element-wise activations a family's config can name outside the encoder layer's GELU: the
// first-token head's (tanh, ReLU, GELU) and DeBERTa's conv_act.
#pragma once

#include <cstdint>
#include <string>

#include "core/check.h"
#include "kernels/kernels.h"
#include "model/family.h"

namespace cpuft {

// y = act(x) over n elements (y may alias x).
inline void activation_forward(const KernelTable& k, HeadActivation act, float* y, const float* x,
                               int64_t n) {
  switch (act) {
    case HeadActivation::tanh:
      k.tanh_forward(y, x, n);
      return;
    case HeadActivation::gelu:
      k.gelu_forward(y, x, n);
      return;
    case HeadActivation::relu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
  }
}

// d_x = d_y * act'(x), from the input x and the output y.
inline void activation_backward(const KernelTable& k, HeadActivation act, float* d_x,
                                const float* d_y, const float* x, const float* y, int64_t n) {
  switch (act) {
    case HeadActivation::tanh:
      k.tanh_backward(d_x, d_y, y, n);
      return;
    case HeadActivation::gelu:
      k.gelu_backward(d_x, d_y, x, n);
      return;
    case HeadActivation::relu:
      for (int64_t i = 0; i < n; ++i) d_x[i] = x[i] > 0.0f ? d_y[i] : 0.0f;
      return;
  }
}

// transformers' ACT2FN name of one of them ("gelu" is the exact, erf form).
inline HeadActivation activation_named(const std::string& name) {
  if (name == "tanh") return HeadActivation::tanh;
  if (name == "gelu") return HeadActivation::gelu;
  CPUFT_CHECK(name == "relu", "activation ", name);
  return HeadActivation::relu;
}

}  // namespace cpuft
