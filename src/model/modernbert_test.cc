// ModernBERT's pieces against scalar twins in double: rotary embeddings (forward, and backward as
// its adjoint), sliding-window attention (forward against a masked softmax, backward against
// finite differences), and its config.json in both transformers generations' spellings. The whole
// model is checked against transformers in tests/golden (golden_tiny_modernbert_*).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "model/attention.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "model/rotary.h"

namespace cpuft {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

// Two packed sequences of 5 and 11 tokens; D 16, H 2, head size 8.
constexpr int64_t kD = 16, kH = 2, kDh = 8;
const std::vector<int64_t> kOffsets = {0, 5, 16};

TEST(Rotary, ForwardIsHfsRotationPerSequence) {
  const AttentionDims dims{kD, kH, kDh};
  const RotaryTable table(10000.0, kDh, 16);
  const int64_t N = kOffsets.back();
  std::vector<float> qkv = random_values(static_cast<size_t>(N * 3 * kD), 1);
  const std::vector<float> before = qkv;
  rotary_forward(qkv.data(), kOffsets.data(), 2, dims, table);
  double worst = 0;
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t i = kOffsets[s]; i < kOffsets[s + 1]; ++i) {
      const double position = static_cast<double>(i - kOffsets[s]);
      for (int64_t col = 0; col < 3 * kD; ++col) {
        const int64_t part = col / kD, j = col % kDh;  // query, key or value; pair index
        const double x = before[i * 3 * kD + col];
        double want = x;  // values are not rotated
        if (part < 2) {
          const int64_t pair = j % (kDh / 2);
          const double inv_freq = 1.0 / std::pow(10000.0, 2.0 * static_cast<double>(pair) / kDh);
          const double angle = position * inv_freq;
          // HF: x * cos + rotate_half(x) * sin, rotate_half(x) = (-x2, x1)
          const double partner = before[i * 3 * kD + col + (j < kDh / 2 ? kDh / 2 : -kDh / 2)];
          want = x * std::cos(angle) + (j < kDh / 2 ? -partner : partner) * std::sin(angle);
        }
        worst = std::max(worst, std::abs(want - qkv[i * 3 * kD + col]));
      }
    }
  EXPECT_LE(worst, 2e-6);
}

// backward is the transpose of forward: <R x, y> = <x, R^T y>.
TEST(Rotary, BackwardIsTheAdjoint) {
  const AttentionDims dims{kD, kH, kDh};
  const RotaryTable table(160000.0, kDh, 16);
  const size_t n = static_cast<size_t>(kOffsets.back() * 3 * kD);
  std::vector<float> x = random_values(n, 2), y = random_values(n, 3);
  std::vector<float> rx = x, rty = y;
  rotary_forward(rx.data(), kOffsets.data(), 2, dims, table);
  rotary_backward(rty.data(), kOffsets.data(), 2, dims, table);
  double left = 0, right = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    left += static_cast<double>(rx[i]) * y[i];
    right += static_cast<double>(x[i]) * rty[i];
    norm += std::abs(static_cast<double>(x[i]) * y[i]);
  }
  EXPECT_LE(std::abs(left - right), 1e-6 * norm);
  // And it is not the identity: a test of an unrotated backward would fail.
  std::vector<float> ry = y;
  rotary_forward(ry.data(), kOffsets.data(), 2, dims, table);
  double moved = 0;
  for (size_t i = 0; i < n; ++i) moved += std::abs(static_cast<double>(ry[i]) - rty[i]);
  EXPECT_GT(moved, 1.0);
}

// Scalar twin: ctx = softmax(mask(Q K^T / sqrt(Dh))) V per sequence and head, in double.
std::vector<double> reference_attention(const std::vector<float>& qkv, int64_t window) {
  const int64_t N = kOffsets.back();
  std::vector<double> ctx(static_cast<size_t>(N * kD), 0.0);
  for (int64_t s = 0; s + 1 < static_cast<int64_t>(kOffsets.size()); ++s)
    for (int64_t h = 0; h < kH; ++h)
      for (int64_t i = kOffsets[s]; i < kOffsets[s + 1]; ++i) {
        std::vector<double> score;
        std::vector<int64_t> keys;
        for (int64_t j = kOffsets[s]; j < kOffsets[s + 1]; ++j) {
          if (window >= 0 && std::abs(i - j) > window) continue;
          double dot = 0;
          for (int64_t d = 0; d < kDh; ++d)
            dot += static_cast<double>(qkv[i * 3 * kD + h * kDh + d]) *
                   qkv[j * 3 * kD + kD + h * kDh + d];
          score.push_back(dot / std::sqrt(static_cast<double>(kDh)));
          keys.push_back(j);
        }
        double top = -1e300, sum = 0;
        for (double v : score) top = std::max(top, v);
        for (double& v : score) sum += (v = std::exp(v - top));
        for (size_t k = 0; k < keys.size(); ++k)
          for (int64_t d = 0; d < kDh; ++d)
            ctx[i * kD + h * kDh + d] +=
                score[k] / sum * qkv[keys[k] * 3 * kD + 2 * kD + h * kDh + d];
      }
  return ctx;
}

struct WindowedAttention {
  explicit WindowedAttention(int64_t window)
      : dims{kD, kH, kDh, window},
        prob_offsets(3),
        sample_ids{0, 1},
        per_thread(attention_scratch_floats(11)),
        scratch(static_cast<size_t>(per_thread * omp_get_max_threads())) {
    attention_prob_offsets(prob_offsets.data(), kOffsets.data(), 2, kH);
    probs.resize(static_cast<size_t>(prob_offsets.back()));
  }
  std::vector<float> forward(const std::vector<float>& qkv, float dropout_p = 0.0f) {
    std::vector<float> ctx(static_cast<size_t>(kOffsets.back() * kD));
    attention_forward(ctx.data(), probs.data(), qkv.data(), kOffsets.data(), prob_offsets.data(),
                      sample_ids.data(), 2, dims, dropout_p, RngKey{1, 2}, scratch.data(),
                      per_thread);
    return ctx;
  }
  AttentionDims dims;
  std::vector<int64_t> prob_offsets, sample_ids;
  int64_t per_thread;
  std::vector<float> scratch, probs;
};

TEST(SlidingWindowAttention, ForwardMatchesAMaskedSoftmax) {
  const std::vector<float> qkv = random_values(static_cast<size_t>(16 * 3 * kD), 4);
  for (int64_t window : {-1, 0, 1, 3, 10}) {
    WindowedAttention a(window);
    const std::vector<float> ctx = a.forward(qkv);
    const std::vector<double> want = reference_attention(qkv, window);
    double worst = 0;
    for (size_t i = 0; i < ctx.size(); ++i) worst = std::max(worst, std::abs(ctx[i] - want[i]));
    EXPECT_LE(worst, 1e-5) << "window " << window;
    // Outside the band every probability is exactly 0 (sequence 1: 11 tokens).
    if (window < 0) continue;
    const float* p = a.probs.data() + a.prob_offsets[1];
    for (int64_t i = 0; i < 11; ++i)
      for (int64_t j = 0; j < 11; ++j)
        if (std::abs(i - j) > window) {
          ASSERT_EQ(p[i * 11 + j], 0.0f) << i << "," << j;
        }
  }
  // A window of 3 differs from full attention on these sequences (the test can fail).
  WindowedAttention full(-1), local(3);
  const std::vector<float> a = full.forward(qkv), b = local.forward(qkv);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
  EXPECT_GT(diff, 1e-2);
}

// The worst gap between attention_backward's d_qkv and central differences of L = sum(ctx * w)
// for a fixed random w, over every `stride`-th input. With dropout the key fixes the mask, so L
// is a smooth function of qkv all the same.
double worst_finite_difference_gap(int64_t window, float dropout_p, uint32_t seed, size_t stride) {
  std::vector<float> qkv = random_values(static_cast<size_t>(16 * 3 * kD), seed);
  const std::vector<float> w = random_values(static_cast<size_t>(16 * kD), seed + 1);
  WindowedAttention a(window);
  a.forward(qkv, dropout_p);
  std::vector<float> d_qkv(qkv.size());
  attention_backward(d_qkv.data(), w.data(), qkv.data(), a.probs.data(), kOffsets.data(),
                     a.prob_offsets.data(), a.sample_ids.data(), 2, a.dims, dropout_p, RngKey{1, 2},
                     a.scratch.data(), a.per_thread);
  auto loss = [&](const std::vector<float>& x) {
    WindowedAttention b(window);
    const std::vector<float> ctx = b.forward(x, dropout_p);
    double l = 0;
    for (size_t i = 0; i < ctx.size(); ++i) l += static_cast<double>(ctx[i]) * w[i];
    return l;
  };
  double worst = 0;
  for (size_t i = 0; i < qkv.size(); i += stride) {
    const float keep = qkv[i], step = 1e-2f;
    qkv[i] = keep + step;
    const double up = loss(qkv);
    qkv[i] = keep - step;
    const double down = loss(qkv);
    qkv[i] = keep;
    worst = std::max(worst, std::abs((up - down) / (2 * step) - d_qkv[i]));
  }
  return worst;
}

TEST(SlidingWindowAttention, BackwardMatchesFiniteDifferences) {
  EXPECT_LE(worst_finite_difference_gap(2, 0.0f, 5, 7), 2e-3);
}

// With dropout on the probabilities. Backward reads the mask off the kept probabilities (no new
// draw); with a window, masked probabilities are exactly 0 there.
TEST(Attention, BackwardWithDropoutMatchesFiniteDifferences) {
  for (int64_t window : {-1, 3})
    EXPECT_LE(worst_finite_difference_gap(window, 0.3f, 9, 5), 2e-3) << "window " << window;
}

// attention_forward/backward with probs == nullptr (SequenceClassifier keeps no probabilities):
// backward recomputes each block's probabilities with the forward's code, so forward and backward
// give the same bits as with stored probabilities, with dropout and with a window. (Swapping the
// dropout key of the recomputing backward makes d_qkv differ: the comparison can fail.)
TEST(Attention, RecomputedProbabilitiesGiveTheSameBits) {
  const std::vector<float> qkv = random_values(static_cast<size_t>(16 * 3 * kD), 7);
  const std::vector<float> d_ctx = random_values(static_cast<size_t>(16 * kD), 8);
  for (int64_t window : {-1, 3}) {
    WindowedAttention stored(window);
    const int64_t per_thread = attention_scratch_floats(11);
    std::vector<float> scratch(static_cast<size_t>(per_thread * omp_get_max_threads()));
    const float p_drop = 0.25f;
    const RngKey key{3, 4};
    std::vector<float> ctx_a(static_cast<size_t>(16 * kD)), ctx_b(ctx_a.size());
    attention_forward(ctx_a.data(), stored.probs.data(), qkv.data(), kOffsets.data(),
                      stored.prob_offsets.data(), stored.sample_ids.data(), 2, stored.dims, p_drop,
                      key, scratch.data(), per_thread);
    attention_forward(ctx_b.data(), nullptr, qkv.data(), kOffsets.data(),
                      stored.prob_offsets.data(), stored.sample_ids.data(), 2, stored.dims, p_drop,
                      key, scratch.data(), per_thread);
    ASSERT_EQ(ctx_a, ctx_b) << "window " << window;
    std::vector<float> d_a(qkv.size()), d_b(qkv.size()), d_other(qkv.size());
    attention_backward(d_a.data(), d_ctx.data(), qkv.data(), stored.probs.data(), kOffsets.data(),
                       stored.prob_offsets.data(), stored.sample_ids.data(), 2, stored.dims, p_drop,
                       key, scratch.data(), per_thread);
    attention_backward(d_b.data(), d_ctx.data(), qkv.data(), nullptr, kOffsets.data(),
                       stored.prob_offsets.data(), stored.sample_ids.data(), 2, stored.dims, p_drop,
                       key, scratch.data(), per_thread);
    EXPECT_EQ(d_a, d_b) << "window " << window;
    attention_backward(d_other.data(), d_ctx.data(), qkv.data(), nullptr, kOffsets.data(),
                       stored.prob_offsets.data(), stored.sample_ids.data(), 2, stored.dims, p_drop,
                       RngKey{3, 5}, scratch.data(), per_thread);
    EXPECT_NE(d_a, d_other) << "another dropout key must change the gradients";
  }
}

// transformers 5.x writes layer_types and rope_parameters; 4.x configs (the published checkpoints)
// global_attn_every_n_layers and the two thetas.
TEST(ModernBertConfig, ReadsBothGenerationsOfFields) {
  const ModelConfig v5 = parse_model_config(R"({"model_type": "modernbert", "vocab_size": 99,
      "hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "intermediate_size": 24,
      "layer_types": ["full_attention", "sliding_attention", "sliding_attention"],
      "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1000.0},
                          "sliding_attention": {"rope_type": "default", "rope_theta": 50.0}},
      "local_attention": 8, "classifier_pooling": "mean", "norm_eps": 1e-6,
      "mlp_dropout": 0.1, "attention_dropout": 0.2, "embedding_dropout": 0.3,
      "pad_token_id": 0})",
                                            "v5.json");
  EXPECT_EQ(v5.family, Family::modernbert);
  EXPECT_EQ(v5.sliding_layers, (std::vector<bool>{false, true, true}));
  EXPECT_DOUBLE_EQ(v5.global_rope_theta, 1000.0);
  EXPECT_DOUBLE_EQ(v5.local_rope_theta, 50.0);
  EXPECT_EQ(v5.sliding_half_window(), 4);
  EXPECT_TRUE(v5.mean_pooling);
  EXPECT_DOUBLE_EQ(v5.layer_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(v5.hidden_dropout_prob, 0.1);
  EXPECT_DOUBLE_EQ(v5.attention_probs_dropout_prob, 0.2);
  EXPECT_DOUBLE_EQ(v5.embedding_dropout, 0.3);

  const ModelConfig v4 = parse_model_config(R"({"model_type": "modernbert", "vocab_size": 50368,
      "hidden_size": 768, "num_hidden_layers": 22, "num_attention_heads": 12,
      "intermediate_size": 1152, "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0,
      "local_rope_theta": 10000.0, "local_attention": 128, "classifier_pooling": "mean",
      "norm_bias": false, "attention_bias": false, "mlp_bias": false, "classifier_bias": false,
      "reference_compile": true, "rope_scaling": null})",
                                            "v4.json");
  EXPECT_EQ(v4.pad_token_id, 50283);
  EXPECT_EQ(v4.max_position_embeddings, 8192);
  EXPECT_DOUBLE_EQ(v4.layer_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(v4.hidden_dropout_prob, 0.0);
  EXPECT_DOUBLE_EQ(v4.global_rope_theta, 160000.0);
  EXPECT_EQ(v4.sliding_half_window(), 64);
  for (int64_t l = 0; l < 22; ++l) EXPECT_EQ(v4.sliding_layers[l], l % 3 != 0) << l;
  // ModernBERT-base with 2 labels: transformers 5.24 counts 149,606,402 parameters
  // (sum(p.numel() for p in ModernBertForSequenceClassification(ModernBertConfig()).parameters())).
  EXPECT_EQ(parameter_count(v4), 149606402.0);
  const ParamLayout layout(v4);
  EXPECT_EQ(layout.find("model.layers.0.attn_norm.weight"), nullptr);
  EXPECT_NE(layout.find("model.layers.1.attn_norm.weight"), nullptr);
  EXPECT_EQ(layout.at("model.layers.5.mlp.Wi.weight").shape, (std::vector<int64_t>{2304, 768}));
  EXPECT_EQ(layout.at("model.layers.5.attn.Wqkv.weight").shape, (std::vector<int64_t>{2304, 768}));
}

TEST(ModernBertConfig, UnsupportedOptionsNameTheField) {
  const std::string base = R"({"model_type": "modernbert", "vocab_size": 99, "hidden_size": 32,
      "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 24, "pad_token_id": 0)";
  auto error = [&](const std::string& extra) -> std::string {
    try {
      parse_model_config(base + ", " + extra + "}", "cfg.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error(R"("norm_bias": true)").find("field 'norm_bias' is true"), std::string::npos);
  EXPECT_NE(error(R"("attention_bias": true)").find("'attention_bias'"), std::string::npos);
  EXPECT_NE(error(R"("mlp_bias": true)").find("'mlp_bias'"), std::string::npos);
  EXPECT_NE(error(R"("classifier_bias": true)").find("'classifier_bias'"), std::string::npos);
  EXPECT_NE(error(R"("hidden_activation": "silu")").find("'hidden_activation'"), std::string::npos);
  EXPECT_NE(error(R"("classifier_pooling": "max")").find("'classifier_pooling'"),
            std::string::npos);
  EXPECT_NE(error(R"("layer_types": ["full_attention"])").find("'layer_types'"), std::string::npos);
  EXPECT_NE(
      error(R"("layer_types": ["full_attention", "chunked_attention"])").find("'layer_types'"),
      std::string::npos);
  EXPECT_NE(
      error(R"("rope_parameters": {"full_attention": {"rope_type": "yarn"}})").find("'rope_type'"),
      std::string::npos);
  EXPECT_NE(error(R"("rope_scaling": {"type": "linear", "factor": 2.0})").find("'rope_scaling'"),
            std::string::npos);
  EXPECT_NE(error(R"("num_attention_heads": 32)").find("even head size"), std::string::npos);
}

}  // namespace
}  // namespace cpuft
