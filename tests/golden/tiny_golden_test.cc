// The whole model against Hugging Face on a tiny random BERT (fixtures committed, run on every CI
// run): logits and loss, every parameter gradient by HF name, and parameters after 3 AdamW steps
// with weight decay, gradient clipping and a warmup schedule.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/buffer.h"
#include "golden/golden_model.h"
#include "golden/golden_util.h"
#include "io/bert_checkpoint.h"
#include "model/bert_model.h"
#include "model/param_layout.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"

namespace cpuft {
namespace {

using namespace golden;

void check_forward_and_gradients(const std::string& fixture) {
  TinyGolden t(fixture);
  const float loss = t.model.forward(t.p, t.batch, StepContext{});
  const std::vector<float> logits = t.file.read_f32("output.logits");
  ASSERT_EQ(static_cast<int64_t>(logits.size()), t.batch.num_sequences() * t.config.num_labels);
  EXPECT_LE(relative_max(t.model.logits(), logits.data(), static_cast<int64_t>(logits.size())),
            1e-5);
  const float hf_loss = t.file.read_f32("output.loss")[0];
  EXPECT_NEAR(loss, hf_loss, 1e-5 * std::abs(hf_loss));

  t.model.backward(t.p, t.g);
  const double global_norm = t.file.read_f32("grad_norm.step0")[0];
  const std::vector<std::string> zero = zero_true_grad(t.file);
  EXPECT_EQ(zero.size(), static_cast<size_t>(t.config.num_hidden_layers));
  for (const ParamSpec& spec : t.layout.specs()) {
    const std::vector<float> hf_grad = t.file.read_f32("grad." + spec.name);
    const float* ours = t.grads.data() + spec.offset;
    const double error =
        relative_l2(ours, hf_grad.data(), spec.numel) * l2(hf_grad.data(), spec.numel);
    EXPECT_LE(error, kGradRelTolerance * l2(hf_grad.data(), spec.numel) +
                         kGradFloorOfGlobalNorm * global_norm)
        << spec.name;
    // Where the exact gradient is zero, ours must be rounding noise too.
    if (contains(zero, spec.name)) {
      EXPECT_LE(l2(ours, spec.numel), kGradFloorOfGlobalNorm * global_norm) << spec.name;
    }
  }
}

void check_three_adamw_steps(const std::string& fixture) {
  TinyGolden t(fixture);
  const auto records = t.train_three_steps();
  bool clipped = false;
  for (int step = 0; step < 3; ++step) {
    const float hf_loss = t.file.read_f32(str("loss.step", step))[0];
    const float hf_norm = t.file.read_f32(str("grad_norm.step", step))[0];
    EXPECT_NEAR(records[step].loss, hf_loss, 1e-5 * std::abs(hf_loss)) << "step " << step;
    EXPECT_NEAR(records[step].grad_norm, hf_norm, 1e-4 * hf_norm) << "step " << step;
    clipped = clipped || records[step].grad_norm > t.max_grad_norm();
  }
  EXPECT_TRUE(clipped) << "the fixture should exercise gradient clipping";
  double lr_sum = 0;
  for (int step = 0; step < 3; ++step) lr_sum += t.lr_schedule().lr(step);
  const std::vector<std::string> zero = zero_true_grad(t.file);
  for (const ParamSpec& spec : t.layout.specs()) {
    const std::vector<float> hf = t.file.read_f32("step3." + spec.name);
    const std::vector<float> init = t.file.read_f32("init." + spec.name);
    const float* ours = t.params.data() + spec.offset;
    if (contains(zero, spec.name)) {
      // AdamW divides the gradient by its own RMS, so rounding noise becomes steps of up to ~lr
      // whose signs differ between implementations: both stay within the summed lr of init.
      for (int64_t i = 0; i < spec.numel; ++i) {
        EXPECT_LE(std::abs(ours[i] - init[i]), lr_sum) << spec.name << "[" << i << "]";
        EXPECT_LE(std::abs(hf[i] - init[i]), lr_sum) << spec.name << "[" << i << "]";
      }
      continue;
    }
    EXPECT_LE(relative_l2(ours, hf.data(), spec.numel), 1e-5) << spec.name;
    // The steps must have moved every tensor, or the comparison above proves nothing.
    EXPECT_GT(relative_l2(init.data(), hf.data(), spec.numel), 1e-4) << spec.name;
  }
}

TEST(TinyGoldenClassification, LogitsLossAndEveryGradient) {
  check_forward_and_gradients("golden_tiny_cls.safetensors");
}
TEST(TinyGoldenClassification, ThreeAdamWStepsWithClipping) {
  check_three_adamw_steps("golden_tiny_cls.safetensors");
}
TEST(TinyGoldenRegression, LogitsLossAndEveryGradient) {
  check_forward_and_gradients("golden_tiny_reg.safetensors");
}
TEST(TinyGoldenRegression, ThreeAdamWStepsWithClipping) {
  check_three_adamw_steps("golden_tiny_reg.safetensors");
}

// Packing must not change a sequence's result: the same sequences in another order, or alone,
// give the same logits (attention never crosses sequence boundaries).
TEST(TinyGoldenClassification, PackingOrderDoesNotMatter) {
  TinyGolden t("golden_tiny_cls.safetensors");
  t.model.forward(t.p, t.batch, StepContext{}, false);
  const int64_t B = t.batch.num_sequences(), K = t.config.num_labels;
  const std::vector<float> together(t.model.logits(), t.model.logits() + B * K);
  for (int64_t s = 0; s < B; ++s) {
    Batch alone;
    const int64_t begin = t.batch.seq_offsets[s], end = t.batch.seq_offsets[s + 1];
    alone.add_sequence({t.batch.input_ids.data() + begin, static_cast<size_t>(end - begin)},
                       {t.batch.token_type_ids.data() + begin, static_cast<size_t>(end - begin)});
    t.model.forward(t.p, alone, StepContext{}, false);
    EXPECT_LE(relative_max(t.model.logits(), together.data() + s * K, K), 1e-6) << "sequence " << s;
  }
}

}  // namespace
}  // namespace cpuft
