// The whole model against Hugging Face on a tiny random BERT (fixtures committed, run on every CI
// run): logits and loss, every element of every parameter gradient by HF name, and every parameter
// element after 3 AdamW steps with weight decay, gradient clipping and a warmup schedule. What each
// comparison proves: docs/ARCHITECTURE.md, "Golden tolerances, argued".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "core/buffer.h"
#include "golden/golden_model.h"
#include "golden/golden_util.h"
#include "golden/projection.h"
#include "io/hf_checkpoint.h"
#include "model/disentangled_attention.h"
#include "model/family.h"
#include "model/param_layout.h"
#include "model/sequence_classifier.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"

namespace cpuft {
namespace {

using namespace golden;

// Parameters after the 3 steps, per tensor, outside the unused rows (checked exactly instead):
// ||ours - HF|| <= kUpdateTolerance ||HF - init||, the error relative to the update itself (the
// weights move by ~lr = 1e-3 per step, 0.5-7% of their own size). HF float32 is 3.2e-5 from a
// float64 rerun in this measure (the rounding of the stored weights, ~2^-24 |w| per step against
// updates of ~lr), cpuft 2.9e-5 from HF.
constexpr double kUpdateTolerance = 1e-3;

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
  const double global_norm = l2(t.grads.data(), t.layout.total_floats());
  const std::vector<std::string> zero = zero_true_grad(t.file);
  // Fixture precondition: every layer's key bias (ModernBERT has no biases; in DeBERTa with p2c
  // the key bias adds b_k . pq[row(i - j)] to the scores, which varies along a row: not 0), and
  // DeBERTa's pos_key_proj bias where it exists (q_i . b_pk on every score of row i).
  const bool no_key_bias = t.config.family == Family::modernbert ||
                           (t.config.family == Family::deberta_v2 && t.config.position_to_content);
  const bool pos_key_bias = t.config.family == Family::deberta_v2 &&
                            t.config.separate_position_projections() &&
                            t.config.content_to_position;
  ASSERT_EQ(zero.size(), static_cast<size_t>(t.config.num_hidden_layers) *
                             ((no_key_bias ? 0 : 1) + (pos_key_bias ? 1 : 0)));
  const std::vector<UnusedRows> unused = unused_embedding_rows(t.layout, t.config, t.batch);
  Worst worst{fixture + " gradients, relative L2 per tensor", kGradTolerance};
  Worst noise{fixture + " key.bias gradient / global gradient norm", kZeroGradBound};
  for (const ParamSpec& spec : t.layout.specs()) {
    const float* ours = t.grads.data() + spec.offset;
    if (contains(zero, spec.name)) {
      // Exactly zero in exact arithmetic: ours must be rounding noise (HF's is, too: 6e-9 to 6e-8).
      EXPECT_LE(l2(ours, spec.numel), kZeroGradBound * global_norm) << spec.name;
      noise.see(l2(ours, spec.numel) / global_norm, spec.name);
      continue;
    }
    const std::vector<float> hf_grad = t.file.read_f32("grad." + spec.name);
    ASSERT_GT(l2(hf_grad.data(), spec.numel), 0) << spec.name;
    const double error = relative_l2(ours, hf_grad.data(), spec.numel);
    EXPECT_LE(error, kGradTolerance) << spec.name;
    worst.see(error, spec.name);
    // Rows no token looks up: exactly zero, as HF's are.
    if (const UnusedRows* u = find_unused(unused, spec)) {
      for (int64_t r : u->rows)
        for (int64_t i = r * u->row_size; i < (r + 1) * u->row_size; ++i)
          ASSERT_EQ(ours[i], 0.0f) << spec.name << " row " << r;
    }
  }
  worst.print();
  noise.print();
}

void check_three_adamw_steps(const std::string& fixture) {
  TinyGolden t(fixture);
  ZeroGradientWatch watch(t);
  const auto records = t.train_three_steps(watch.observer());
  bool clipped = false;
  for (int step = 0; step < 3; ++step) {
    const float hf_loss = t.file.read_f32(str("loss.step", step))[0];
    const float hf_norm = t.file.read_f32(str("grad_norm.step", step))[0];
    EXPECT_NEAR(records[step].loss, hf_loss, 1e-5 * std::abs(hf_loss)) << "step " << step;
    EXPECT_NEAR(records[step].grad_norm, hf_norm, 1e-4 * hf_norm) << "step " << step;
    clipped = clipped || records[step].grad_norm > t.max_grad_norm();
  }
  EXPECT_TRUE(clipped) << "the fixture should exercise gradient clipping";

  const std::vector<std::string> zero = zero_true_grad(t.file);
  Worst worst{fixture + " parameters after 3 steps, relative L2 of the update", kUpdateTolerance};
  for (const ParamSpec& spec : t.layout.specs()) {
    if (contains(zero, spec.name)) continue;  // key.bias: check_key_bias_updates below
    const std::vector<float> hf = t.file.read_f32("step3." + spec.name);
    const float* ours = t.params.data() + spec.offset;
    const float* init = watch.init.data() + spec.offset;
    const std::vector<bool> skip = unused_mask(find_unused(watch.unused, spec), spec);
    double diff = 0, update = 0;
    for (int64_t i = 0; i < spec.numel; ++i) {
      if (skip[static_cast<size_t>(i)]) continue;
      diff += std::pow(static_cast<double>(ours[i]) - hf[i], 2);
      update += std::pow(static_cast<double>(hf[i]) - init[i], 2);
    }
    ASSERT_GT(update, 0) << spec.name;  // fixture precondition: HF's steps moved the tensor
    EXPECT_LE(std::sqrt(diff / update), kUpdateTolerance) << spec.name;
    worst.see(std::sqrt(diff / update), spec.name);
  }
  worst.print();
  // Unused embedding rows: the decay-only values, as HF's (full tensors in the fixture).
  EXPECT_GT(watch.unused_row_count(), 0) << "the fixture has no unused embedding rows";
  std::vector<std::vector<float>> hf_step3;
  for (const UnusedRows& u : watch.unused)
    hf_step3.push_back(t.file.read_f32("step3." + u.spec->name));
  watch.check_decay_only([&](const ParamSpec& spec, int64_t i) {
    for (size_t k = 0; k < watch.unused.size(); ++k)
      if (watch.unused[k].spec == &spec) return static_cast<double>(hf_step3[k][i]);
    return static_cast<double>(NAN);
  });
  watch.check_key_bias_updates();
  watch.print_gradient_bound();
}

// --label_smoothing_factor 0.1 on the tiny classification fixture: HF Trainer's LabelSmoother on
// the same weights and batch (golden_tiny_cls_label_smoothing.safetensors, written by
// tools/make_label_smoothing_golden.py), at the tolerances of the plain loss above.
TEST(TinyGoldenClassification, LabelSmoothingLossAndEveryGradient) {
  TinyGolden t("golden_tiny_cls.safetensors");
  const SafetensorsFile hf =
      SafetensorsFile::open(fixture_path("golden_tiny_cls_label_smoothing.safetensors"));
  const float eps = metadata_json(hf, "label_smoothing_factor").get<float>();
  ASSERT_EQ(eps, 0.1f);
  t.model.set_loss_options(LossOptions{eps});
  const float loss = t.model.forward(t.p, t.batch, StepContext{});
  const std::vector<float> logits = hf.read_f32("output.logits");
  ASSERT_EQ(static_cast<int64_t>(logits.size()), t.batch.num_sequences() * t.config.num_labels);
  EXPECT_LE(relative_max(t.model.logits(), logits.data(), static_cast<int64_t>(logits.size())),
            1e-5);
  const float hf_loss = hf.read_f32("output.loss")[0];
  EXPECT_NEAR(loss, hf_loss, 1e-5 * std::abs(hf_loss));
  // The smoothing must show at this tolerance: the plain loss is 3.5e-3 away.
  EXPECT_GT(std::abs(t.file.read_f32("output.loss")[0] - hf_loss), 100 * 1e-5 * hf_loss);

  t.model.backward(t.p, t.g);
  const double global_norm = l2(t.grads.data(), t.layout.total_floats());
  const std::vector<std::string> zero = zero_true_grad(t.file);
  Worst worst{"label smoothing gradients, relative L2 per tensor", kGradTolerance};
  for (const ParamSpec& spec : t.layout.specs()) {
    const float* ours = t.grads.data() + spec.offset;
    if (contains(zero, spec.name)) {
      EXPECT_LE(l2(ours, spec.numel), kZeroGradBound * global_norm) << spec.name;
      continue;
    }
    const std::vector<float> hf_grad = hf.read_f32("grad." + spec.name);
    ASSERT_GT(l2(hf_grad.data(), spec.numel), 0) << spec.name;
    const double error = relative_l2(ours, hf_grad.data(), spec.numel);
    EXPECT_LE(error, kGradTolerance) << spec.name;
    worst.see(error, spec.name);
  }
  worst.print();
}

TEST(TinyGoldenRegression, LabelSmoothingIsRefused) {
  TinyGolden t("golden_tiny_reg.safetensors");
  EXPECT_THROW(t.model.set_loss_options(LossOptions{0.1f}), Error);
  t.model.set_loss_options(LossOptions{0.0f});  // no smoothing: fine
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

// The other families (model/family.h), each a tiny random model of its own config with the same
// checks: golden_tiny_<family>_<cls|reg>.safetensors.
class TinyGoldenFamily : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyGoldenFamily, LogitsLossAndEveryGradient) {
  check_forward_and_gradients(GetParam());
}
TEST_P(TinyGoldenFamily, ThreeAdamWStepsWithClipping) {
  check_three_adamw_steps(GetParam());
}
INSTANTIATE_TEST_SUITE_P(
    Families, TinyGoldenFamily,
    ::testing::Values(
        "golden_tiny_distilbert_cls.safetensors", "golden_tiny_distilbert_reg.safetensors",
        "golden_tiny_distilbert_sinusoidal_cls.safetensors", "golden_tiny_roberta_cls.safetensors",
        "golden_tiny_roberta_reg.safetensors", "golden_tiny_xlm_roberta_cls.safetensors",
        "golden_tiny_electra_cls.safetensors", "golden_tiny_electra_reg.safetensors",
        "golden_tiny_modernbert_cls.safetensors", "golden_tiny_modernbert_mean.safetensors",
        "golden_tiny_modernbert_mean_reg.safetensors", "golden_tiny_deberta_cls.safetensors",
        "golden_tiny_deberta_reg.safetensors", "golden_tiny_deberta_separate.safetensors",
        "golden_tiny_deberta_conv.safetensors", "golden_tiny_deberta_proj.safetensors"),
    [](const ::testing::TestParamInfo<const char*>& param) {
      std::string name = param.param;
      name = name.substr(12, name.find('.') - 12);  // "golden_tiny_" ... ".safetensors"
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

// The position ids the model counts (model/family.h) are the ones transformers used, for the
// families whose positions start after padding_idx (the fixtures record them).
class TinyGoldenPositions : public ::testing::TestWithParam<const char*> {};
TEST_P(TinyGoldenPositions, PositionIdsAreHfs) {
  TinyGolden t(GetParam());
  ASSERT_NE(t.file.find("batch.position_ids"), nullptr) << "the fixture records HF's positions";
  const std::vector<int64_t> hf = t.file.read_i64("batch.position_ids");
  const std::vector<int64_t> mask = t.file.read_i64("input.attention_mask");
  std::vector<int32_t> ours(static_cast<size_t>(t.batch.num_tokens()));
  fill_position_ids(ours.data(), t.batch.input_ids.data(), t.batch.seq_offsets.data(),
                    t.batch.num_sequences(), family_spec(t.config.family).positions,
                    static_cast<int32_t>(t.config.pad_token_id));
  std::vector<int32_t> real;  // HF's at the real (mask 1) tokens
  for (size_t i = 0; i < hf.size(); ++i)
    if (mask[i] != 0) real.push_back(static_cast<int32_t>(hf[i]));
  EXPECT_EQ(ours, real);
  EXPECT_TRUE(std::find(t.batch.input_ids.begin(), t.batch.input_ids.end(),
                        t.config.pad_token_id) != t.batch.input_ids.end())
      << "the fixture should hold a padding token among the real ones";
}

INSTANTIATE_TEST_SUITE_P(AfterPaddingIdx, TinyGoldenPositions,
                         ::testing::Values("golden_tiny_roberta_cls.safetensors",
                                           "golden_tiny_roberta_reg.safetensors",
                                           "golden_tiny_xlm_roberta_cls.safetensors"));

// Packing must not change a sequence's result: the same sequences in another order, or alone,
// give the same logits (attention never crosses sequence boundaries).
class TinyGoldenPacking : public ::testing::TestWithParam<const char*> {};
TEST_P(TinyGoldenPacking, PackingOrderDoesNotMatter) {
  TinyGolden t(GetParam());
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
// BERT, ModernBERT with both poolings (rotary positions restart in every sequence; the sliding
// windows never reach into a neighbour) and DeBERTa (relative positions and the rows of the
// relative embeddings a batch reaches depend on its longest sequence, never the result).
INSTANTIATE_TEST_SUITE_P(Fixtures, TinyGoldenPacking,
                         ::testing::Values("golden_tiny_cls.safetensors",
                                           "golden_tiny_modernbert_cls.safetensors",
                                           "golden_tiny_modernbert_mean.safetensors",
                                           "golden_tiny_deberta_cls.safetensors",
                                           "golden_tiny_deberta_reg.safetensors",
                                           "golden_tiny_deberta_separate.safetensors",
                                           "golden_tiny_deberta_conv.safetensors",
                                           "golden_tiny_deberta_proj.safetensors"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string name = param.param;
                           return name.substr(12, name.find('.') - 12);
                         });

// DeBERTa's relative position buckets are transformers' (make_log_bucket_position, recorded by
// tools/make_deberta_goldens.py for DeBERTa-v3-base's 256 buckets over 512 positions) at every
// distance a 1024-token sequence has: a float32 log of another rounding would move a ceil.
TEST(TinyGoldenDeberta, LogBucketsAreHfsAtEveryDistance) {
  const SafetensorsFile file =
      SafetensorsFile::open(fixture_path("golden_tiny_deberta_cls.safetensors"));
  const std::vector<int64_t> hf = file.read_i64("relative.buckets_256_512");
  ASSERT_EQ(hf.size(), size_t{2047});
  for (int64_t r = -1023; r <= 1023; ++r)
    ASSERT_EQ(log_bucket_position(r, 256, 512), hf[static_cast<size_t>(r + 1023)]) << "r " << r;
}

// The sign scheme of the projections (tests/golden/projection.h) against the values
// tools/make_goldens.py asserts for its own implementation: FNV-1a 64, SplitMix64's first output
// from seed 0, and the projections of (1, 2, 3, 4, 5) under the name "kat" (exact integers).
TEST(GoldenProjections, KnownAnswers) {
  EXPECT_EQ(fnv1a64(""), 0xCBF29CE484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xAF63DC4C8601EC8Cull);
  EXPECT_EQ(splitmix64_mix(kSplitMixGamma), 0xE220A8397B1DCDAFull);
  const float x[] = {1, 2, 3, 4, 5};
  Projector projector("kat");
  projector.add(x, 0, 5);
  const Projections p = projector.result();
  double checksum = 0;
  for (int k = 0; k < kProjections; ++k) checksum += (k + 1) * p[k];
  EXPECT_EQ(p[0], 1.0);
  EXPECT_EQ(p[255], -7.0);
  EXPECT_EQ(checksum, 11308.0);
}

}  // namespace
}  // namespace cpuft
