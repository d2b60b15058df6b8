// SGD over the flat parameter buffer, as torch.optim.SGD (single-tensor path, the CPU default)
// with HF Trainer's two groups: weight decay only on ParamSpec::decays parameters. Per element,
// with g the (clipped) gradient and wd the group's decay:
//   g = g + wd * p                                    (coupled L2 decay, when wd != 0)
//   with momentum: buf = g at the first step, else buf = momentum * buf + (1 - dampening) * g;
//                  g = nesterov ? g + momentum * buf : buf
//   p = p - lr * g
// Each "a + alpha * b" is one fused multiply-add, as torch's vectorised add(alpha=) computes it.
#pragma once

#include "optim/optimizer.h"

namespace cpuft {

struct SgdOptions {
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class Sgd final : public Optimizer {
 public:
  // Throws cpuft::Error as torch does: momentum, dampening or weight_decay < 0, or nesterov
  // without momentum > 0 and dampening 0.
  Sgd(const ParamLayout& layout, const SgdOptions& options);

  void step(float* params, float* grads, double lr, const UpdatePass& pass) override;
  const char* state_kind() const override { return "sgd"; }
  // "momentum_buffer" when momentum != 0 (torch keeps none without momentum).
  std::vector<OptimizerState> state_buffers() override;

  const SgdOptions& options() const { return options_; }

 private:
  const ParamLayout& layout_;
  SgdOptions options_;
  AlignedBuffer<float> momentum_buffer_;  // empty without momentum
};

}  // namespace cpuft
