#include "optim/sgd.h"

#include <cmath>

#include "core/check.h"
#include "kernels/kernels.h"

namespace cpuft {

namespace {

// Below this many elements a tensor is updated on the calling thread.
constexpr int64_t kParallelMin = 1 << 16;

}  // namespace

Sgd::Sgd(const ParamLayout& layout, const SgdOptions& options)
    : layout_(layout),
      options_(options),
      momentum_buffer_(options.momentum != 0 ? static_cast<size_t>(layout.total_floats()) : 0) {
  CPUFT_REQUIRE(options.momentum >= 0, "sgd: invalid momentum ", options.momentum);
  CPUFT_REQUIRE(options.dampening >= 0, "sgd: invalid dampening ", options.dampening);
  CPUFT_REQUIRE(options.weight_decay >= 0, "sgd: invalid weight_decay ", options.weight_decay);
  CPUFT_REQUIRE(!options.nesterov || (options.momentum > 0 && options.dampening == 0),
                "sgd: nesterov momentum requires a momentum and zero dampening");
}

std::vector<OptimizerState> Sgd::state_buffers() {
  if (options_.momentum == 0) return {};
  return {{"momentum_buffer", &momentum_buffer_}};
}

void Sgd::step(float* params, float* grads, double lr, const UpdatePass& pass) {
  check_pass(pass, layout_);
  const bool first = steps_ == 0;  // torch creates the momentum buffer at the first step
  ++steps_;
  const bool has_momentum = options_.momentum != 0;
  const bool nesterov = options_.nesterov;
  // Scalars as torch hands them to its float kernels: Python doubles rounded to float.
  const float momentum = static_cast<float>(options_.momentum);
  const float one_minus_dampening = static_cast<float>(1.0 - options_.dampening);
  const float neg_lr = static_cast<float>(-lr);
  const float grad_scale = pass.grad_scale;
  const std::vector<ParamSpec>& specs = layout_.specs();
  for (size_t s = 0; s < specs.size(); ++s) {
    const ParamSpec& spec = specs[s];
    const bool decay = spec.decays && options_.weight_decay != 0;
    const float wd = static_cast<float>(options_.weight_decay);
    const bool zero_grad = pass.zeroes(s);
    float* p = params + spec.offset;
    float* g = grads + spec.offset;
    float* buf = has_momentum ? momentum_buffer_.data() + spec.offset : nullptr;
    const int64_t n = spec.numel;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      float d = g[i] * grad_scale;  // the clip's scaling (UpdatePass)
      if (zero_grad) g[i] = 0.0f;
      if (decay) d = std::fma(p[i], wd, d);  // grad.add(param, alpha=weight_decay)
      if (has_momentum) {
        // buf.mul_(momentum).add_(grad, alpha=1 - dampening), or a copy of grad at first.
        buf[i] = first ? d : std::fma(d, one_minus_dampening, buf[i] * momentum);
        d = nesterov ? std::fma(buf[i], momentum, d) : buf[i];  // grad.add(buf, alpha=momentum)
      }
      p[i] = std::fma(d, neg_lr, p[i]);  // param.add_(grad, alpha=-lr)
    }
    // SGD is rarely the hot path: its bf16 copy is a second pass over the tensor.
    if (bf16* copy = pass.copy_of(s)) kernels().round_to_bf16(copy, p, n);
  }
}

}  // namespace cpuft
