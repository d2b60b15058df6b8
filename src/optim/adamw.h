// AdamW over the flat parameter buffer, as torch.optim.AdamW with HF Trainer's two groups:
// weight decay on every parameter except biases and LayerNorm weights (ParamSpec::decays).
#pragma once

#include <cstdint>

#include "core/buffer.h"
#include "model/param_layout.h"

namespace cpuft {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class AdamW {
 public:
  AdamW(const ParamLayout& layout, const AdamWOptions& options);

  // One update of all parameters with learning rate `lr`; increments the step count first
  // (torch's bias correction uses step >= 1).
  void step(float* params, const float* grads, double lr);

  int64_t steps_taken() const { return steps_; }
  // For resuming from a checkpoint whose moments were loaded into exp_avg()/exp_avg_sq().
  void set_steps_taken(int64_t steps) { steps_ = steps; }
  AlignedBuffer<float>& exp_avg() { return m_; }
  AlignedBuffer<float>& exp_avg_sq() { return v_; }

 private:
  const ParamLayout& layout_;
  AdamWOptions options_;
  AlignedBuffer<float> m_, v_;
  int64_t steps_ = 0;
};

// Global L2 norm of all gradients; when above max_norm (> 0) scales them by
// max_norm / (norm + 1e-6) as torch.nn.utils.clip_grad_norm_ does. Returns the norm before
// clipping.
double clip_grad_norm(float* grads, int64_t n, double max_norm);

}  // namespace cpuft
