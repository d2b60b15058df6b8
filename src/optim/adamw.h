// AdamW over the flat parameter buffer, as torch.optim.AdamW with HF Trainer's two groups:
// weight decay on every parameter except biases and LayerNorm weights (ParamSpec::decays).
#pragma once

#include <cstdint>

#include "core/buffer.h"
#include "model/param_layout.h"
#include "optim/optimizer.h"

namespace cpuft {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class AdamW final : public Optimizer {
 public:
  AdamW(const ParamLayout& layout, const AdamWOptions& options);

  // One update of all parameters with learning rate `lr`; increments the step count first
  // (torch's bias correction uses step >= 1).
  void step(float* params, float* grads, double lr, const UpdatePass& pass) override;
  // Checkpoints: "adamw_steps", and "exp_avg.<name>", "exp_avg_sq.<name>" per parameter.
  const char* state_kind() const override { return "adamw"; }
  std::vector<OptimizerState> state_buffers() override;

  AlignedBuffer<float>& exp_avg() { return m_; }
  AlignedBuffer<float>& exp_avg_sq() { return v_; }

 private:
  const ParamLayout& layout_;
  AdamWOptions options_;
  AlignedBuffer<float> m_, v_;
};

// Global L2 norm of all gradients; when above max_norm (> 0) scales them by
// max_norm / (norm + 1e-6) as torch.nn.utils.clip_grad_norm_ does. Returns the norm before
// clipping. In `zero_rows` only rows with a nonzero are scaled: an all-zero row scales to itself
// (+-0 times the factor keeps its bits), and leaving it unwritten leaves its never-written pages
// without memory (core/buffer.h, release_zeroed). The same as its three parts below in turn.
double clip_grad_norm(float* grads, int64_t n, double max_norm,
                      const MostlyZeroRows& zero_rows = {});
// The parts: the norm; the factor clip_grad_norm scales by (1 when it does not scale); the scaling.
double grad_norm(const float* grads, int64_t n);
float clip_coefficient(double norm, double max_norm);
void scale_gradients(float* grads, int64_t n, float coefficient,
                     const MostlyZeroRows& zero_rows = {});

// Zeroes the rows of `rows` (in `grads`) that hold any bit other than +0's and writes nothing
// else: an all-zero row's pages stay as they are, never-written ones without memory.
void zero_nonzero_rows(float* grads, const MostlyZeroRows& rows);

}  // namespace cpuft
