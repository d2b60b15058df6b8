#include "optim/adamw.h"

#include <cmath>

#include "kernels/kernels.h"

namespace cpuft {

AdamW::AdamW(const ParamLayout& layout, const AdamWOptions& options)
    : layout_(layout),
      options_(options),
      m_(static_cast<size_t>(layout.total_floats())),
      v_(static_cast<size_t>(layout.total_floats())) {}

std::vector<OptimizerState> AdamW::state_buffers() {
  return {{"exp_avg", &m_}, {"exp_avg_sq", &v_}};
}

void AdamW::step(float* params, const float* grads, double lr) {
  ++steps_;
  AdamWStep s;
  s.lr = static_cast<float>(lr);
  s.beta1 = static_cast<float>(options_.beta1);
  s.beta2 = static_cast<float>(options_.beta2);
  s.one_minus_beta1 = static_cast<float>(1.0 - options_.beta1);
  s.one_minus_beta2 = static_cast<float>(1.0 - options_.beta2);
  s.eps = static_cast<float>(options_.eps);
  // Bias corrections are computed once per step in double, as torch does on the host.
  s.bias_correction1 = static_cast<float>(1.0 - std::pow(options_.beta1, steps_));
  s.bias_correction2 = static_cast<float>(1.0 - std::pow(options_.beta2, steps_));
  const KernelTable& k = kernels();
  for (const ParamSpec& spec : layout_.specs()) {
    s.weight_decay = spec.decays ? static_cast<float>(options_.weight_decay) : 0.0f;
    k.adamw_update(params + spec.offset, m_.data() + spec.offset, v_.data() + spec.offset,
                   grads + spec.offset, s, spec.numel);
  }
}

double clip_grad_norm(float* grads, int64_t n, double max_norm) {
  const KernelTable& k = kernels();
  const double norm = std::sqrt(k.sum_squares(grads, n));
  if (max_norm > 0) {
    const double coef = max_norm / (norm + 1e-6);
    if (coef < 1.0) k.scale(grads, static_cast<float>(coef), n);
  }
  return norm;
}

}  // namespace cpuft
