#include "optim/adamw.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/check.h"
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

void AdamW::step(float* params, float* grads, double lr, const UpdatePass& pass) {
  check_pass(pass, layout_);
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
  s.grad_scale = pass.grad_scale;
  const KernelTable& k = kernels();
  const std::vector<ParamSpec>& specs = layout_.specs();
  const MostlyZeroRows& rows = pass.sparse_rows;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ParamSpec& spec = specs[i];
    s.weight_decay = spec.decays ? static_cast<float>(options_.weight_decay) : 0.0f;
    s.zero_grad = pass.zeroes(i);
    const bool table = rows.rows > 0 && spec.offset == rows.begin &&
                       spec.numel == rows.rows * rows.width && !s.zero_grad;
    if (table) {  // only the elements a step has touched are updated, the others only decayed
      k.adamw_update_sparse(params + spec.offset, m_.data() + spec.offset, v_.data() + spec.offset,
                            grads + spec.offset, pass.copy_of(i), s, spec.numel);
    } else {
      k.adamw_update(params + spec.offset, m_.data() + spec.offset, v_.data() + spec.offset,
                     grads + spec.offset, pass.copy_of(i), s, spec.numel);
    }
  }
}

namespace {

// Whether any of row[0, width) has a bit of `mask` set: an OR of the bits (vectorizes). With the
// sign bit masked out: any value other than +-0 (NaN counts).
bool any_bits(const float* row, int64_t width, uint32_t mask) {
  uint32_t bits = 0;
  for (int64_t i = 0; i < width; ++i) {
    uint32_t b;
    std::memcpy(&b, row + i, sizeof b);
    bits |= b & mask;
  }
  return bits != 0;
}

}  // namespace

double clip_grad_norm(float* grads, int64_t n, double max_norm, const MostlyZeroRows& zero_rows) {
  const double norm = grad_norm(grads, n);
  scale_gradients(grads, n, clip_coefficient(norm, max_norm), zero_rows);
  return norm;
}

double grad_norm(const float* grads, int64_t n) {
  return std::sqrt(kernels().sum_squares(grads, n));
}

float clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0f;
  const double coef = max_norm / (norm + 1e-6);
  return coef >= 1.0 ? 1.0f : static_cast<float>(coef);
}

void scale_gradients(float* grads, int64_t n, float c, const MostlyZeroRows& zero_rows) {
  if (c == 1.0f) return;  // clip_coefficient's "no scaling" (x * 1 = x anyway)
  const KernelTable& k = kernels();
  if (zero_rows.rows == 0) {
    k.scale(grads, c, n);
    return;
  }
  const int64_t begin = zero_rows.begin, width = zero_rows.width;
  const int64_t end = begin + zero_rows.rows * width;
  CPUFT_CHECK(begin >= 0 && width > 0 && end <= n, "bad mostly-zero rows");
  k.scale(grads, c, begin);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < zero_rows.rows; ++r) {
    float* row = grads + begin + r * width;
    if (any_bits(row, width, 0x7fffffffu))
      for (int64_t i = 0; i < width; ++i) row[i] *= c;  // as k.scale: one fp32 product
  }
  k.scale(grads + end, c, n - end);
}

void zero_nonzero_rows(float* grads, const MostlyZeroRows& rows) {
  CPUFT_CHECK(rows.begin >= 0 && rows.rows >= 0 && rows.width > 0, "bad mostly-zero rows");
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows.rows; ++r) {
    float* row = grads + rows.begin + r * rows.width;
    if (any_bits(row, rows.width, 0xffffffffu))  // -0 too: the rows come back as +0 bits
      std::memset(row, 0, static_cast<size_t>(rows.width) * sizeof(float));
  }
}

}  // namespace cpuft
