// DeBERTa's pieces against scalar twins in double: the log buckets of relative positions, the
// disentangled attention (forward against HF's definition with its two separate gathers,
// backward against central differences of the twin), the convolution along packed sequences
// (against a direct convolution; its scatter as the gather's transpose), and its config.json,
// accepted and refused.
// The whole model is checked against transformers in tests/golden (golden_tiny_deberta_*).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "model/attention.h"
#include "model/disentangled_attention.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "model/sequence_conv.h"

namespace cpuft {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

// Two packed sequences of 5 and 11 tokens; D 8, H 2, head size 4.
constexpr int64_t kD = 8, kH = 2, kDh = 4;
const std::vector<int64_t> kOffsets = {0, 5, 16};

ModelConfig relative_config(int64_t buckets, int64_t max_relative, bool c2p, bool p2c) {
  ModelConfig c;
  c.family = Family::deberta_v2;
  c.hidden_size = kD;
  c.num_attention_heads = kH;
  c.relative_attention = true;
  c.content_to_position = c2p;
  c.position_to_content = p2c;
  c.position_buckets = buckets;
  c.max_relative_positions = max_relative;
  return c;
}

// HF's values (make_log_bucket_position, torch 2.15, float32) for DeBERTa-v3's 256 buckets over
// 512 positions, and for a small table.
TEST(DebertaRelativePositions, LogBucketsAreHfs) {
  EXPECT_EQ(log_bucket_position(0, 256, 512), 0);
  EXPECT_EQ(log_bucket_position(128, 256, 512), 128);
  EXPECT_EQ(log_bucket_position(-128, 256, 512), -128);
  EXPECT_EQ(log_bucket_position(129, 256, 512), 129);
  EXPECT_EQ(log_bucket_position(200, 256, 512), 169);
  EXPECT_EQ(log_bucket_position(-511, 256, 512), -255);
  EXPECT_EQ(log_bucket_position(511, 256, 512), 255);
  EXPECT_EQ(log_bucket_position(1000, 256, 512), 317);
  EXPECT_EQ(log_bucket_position(10, 8, 16), 7);
  EXPECT_EQ(log_bucket_position(-5, 8, 16), -5);
  // Odd in r: what lets one row index serve c2p and p2c (disentangled_attention.h).
  for (int64_t r = 0; r < 2000; ++r)
    ASSERT_EQ(log_bucket_position(-r, 256, 512), -log_bucket_position(r, 256, 512)) << r;
}

TEST(DebertaRelativePositions, RowsAreClampedAndMonotone) {
  const RelativePositions clamped(relative_config(0, 4, true, true), 11);
  EXPECT_EQ(clamped.span(), 4);
  EXPECT_EQ(clamped.row(0), 4);
  EXPECT_EQ(clamped.row(3), 7);
  EXPECT_EQ(clamped.row(10), 7);  // clamped at 2S - 1
  EXPECT_EQ(clamped.row(-4), 0);
  EXPECT_EQ(clamped.row(-10), 0);  // clamped at 0
  const RelativePositions bucketed(relative_config(8, 16, true, true), 64);
  for (int64_t r = -62; r <= 63; ++r) EXPECT_LE(bucketed.row(r - 1), bucketed.row(r)) << r;
}

// HF's DisentangledSelfAttention in double, written as transformers computes it: c2p gathers
// clamp(bucket(i - j) + S) from Q pk^T, p2c gathers clamp(-bucket(j - i) + S) from K pq^T and
// transposes. With dropout_p > 0 the probabilities are dropped with the kernels' masks (block
// (s, h) keyed by attention.h's block_key, element i * T + j; sample ids 0, 1).
std::vector<double> twin_forward(const std::vector<double>& qkv, const std::vector<double>& pos,
                                 const ModelConfig& c, float dropout_p = 0.0f, RngKey key = {}) {
  const int64_t sample_ids[] = {0, 1};
  const int64_t S = c.relative_span();
  const double scale =
      1.0 / std::sqrt(static_cast<double>(kDh) *
                      (1 + (c.content_to_position ? 1 : 0) + (c.position_to_content ? 1 : 0)));
  auto bucket = [&](int64_t r) {
    return c.position_buckets > 0
               ? log_bucket_position(r, c.position_buckets, c.max_relative_positions)
               : r;
  };
  auto clamp_row = [&](int64_t b) {
    return std::min<int64_t>(std::max<int64_t>(b + S, 0), 2 * S - 1);
  };
  std::vector<double> ctx(static_cast<size_t>(kOffsets.back() * kD), 0.0);
  for (size_t s = 0; s + 1 < kOffsets.size(); ++s) {
    const int64_t start = kOffsets[s], T = kOffsets[s + 1] - start;
    for (int64_t h = 0; h < kH; ++h) {
      auto q = [&](int64_t i, int64_t d) { return qkv[((start + i) * 3 * kD) + h * kDh + d]; };
      auto k = [&](int64_t i, int64_t d) { return qkv[((start + i) * 3 * kD) + kD + h * kDh + d]; };
      auto v = [&](int64_t i, int64_t d) {
        return qkv[((start + i) * 3 * kD) + 2 * kD + h * kDh + d];
      };
      auto pq = [&](int64_t r, int64_t d) { return pos[r * 2 * kD + h * kDh + d]; };
      auto pk = [&](int64_t r, int64_t d) { return pos[r * 2 * kD + kD + h * kDh + d]; };
      for (int64_t i = 0; i < T; ++i) {
        std::vector<double> score(static_cast<size_t>(T));
        double top = -1e300;
        for (int64_t j = 0; j < T; ++j) {
          double sum = 0;
          for (int64_t d = 0; d < kDh; ++d) sum += q(i, d) * k(j, d);
          if (c.content_to_position)
            for (int64_t d = 0; d < kDh; ++d) sum += q(i, d) * pk(clamp_row(bucket(i - j)), d);
          if (c.position_to_content)
            for (int64_t d = 0; d < kDh; ++d) sum += k(j, d) * pq(clamp_row(-bucket(j - i)), d);
          score[j] = sum * scale;
          top = std::max(top, score[j]);
        }
        double total = 0;
        for (double& x : score) total += (x = std::exp(x - top));
        const RngKey block = block_key(key, sample_ids, static_cast<int64_t>(s), kH, h);
        for (int64_t j = 0; j < T; ++j) {
          const bool kept =
              dropout_p == 0.0f || uniform_at(block, static_cast<uint64_t>(i * T + j)) >= dropout_p;
          const double dropped = kept ? 1.0 / (1.0 - static_cast<double>(dropout_p)) : 0.0;
          for (int64_t d = 0; d < kDh; ++d)
            ctx[(start + i) * kD + h * kDh + d] += score[j] / total * dropped * v(j, d);
        }
      }
    }
  }
  return ctx;
}

struct KernelRun {
  std::vector<float> ctx, probs, d_qkv, d_pos;
};

KernelRun run_kernel(const std::vector<float>& qkv, const std::vector<float>& pos,
                     const std::vector<float>& d_ctx, const ModelConfig& c, float dropout_p,
                     RngKey key) {
  const RelativePositions positions(c, 11);
  const int factor = 1 + (c.content_to_position ? 1 : 0) + (c.position_to_content ? 1 : 0);
  const DisentangledDims dims{AttentionDims{kD, kH, kDh}, c.content_to_position,
                              c.position_to_content,
                              1.0f / std::sqrt(static_cast<float>(kDh * factor)), &positions};
  const int64_t B = 2, N = kOffsets.back();
  std::vector<int64_t> prob_offsets(3), sample_ids = {0, 1};
  attention_prob_offsets(prob_offsets.data(), kOffsets.data(), B, kH);
  const int64_t per_thread = disentangled_scratch_floats(11);
  std::vector<float> scratch(static_cast<size_t>(per_thread * omp_get_max_threads()));
  KernelRun run;
  run.ctx.assign(static_cast<size_t>(N * kD), 0.0f);
  run.probs.assign(static_cast<size_t>(prob_offsets[B]), 0.0f);
  disentangled_attention_forward(run.ctx.data(), run.probs.data(), qkv.data(), pos.data(),
                                 kOffsets.data(), prob_offsets.data(), sample_ids.data(), B, dims,
                                 dropout_p, key, scratch.data(), per_thread);
  run.d_qkv.assign(qkv.size(), 0.0f);
  run.d_pos.assign(pos.size(), 0.0f);
  disentangled_attention_backward(
      run.d_qkv.data(), run.d_pos.data(), d_ctx.data(), qkv.data(), pos.data(), run.probs.data(),
      kOffsets.data(), prob_offsets.data(), B, dims, dropout_p, scratch.data(), per_thread);
  return run;
}

class DisentangledAttention
    : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, bool, bool>> {};

// Without dropout and with it (backward reads the forward's masks off the stored probabilities'
// sign bits; the twin draws them).
TEST_P(DisentangledAttention, ForwardAndBackwardMatchTheTwin) {
  const auto [buckets, max_relative, c2p, p2c] = GetParam();
  const ModelConfig c = relative_config(buckets, max_relative, c2p, p2c);
  const int64_t N = kOffsets.back(), S2 = 2 * c.relative_span();
  const std::vector<float> qkv = random_values(static_cast<size_t>(N * 3 * kD), 11);
  const std::vector<float> pos = random_values(static_cast<size_t>(S2 * 2 * kD), 12);
  const std::vector<float> d_ctx = random_values(static_cast<size_t>(N * kD), 13);
  const RngKey key{21, 22};
  for (const float dropout_p : {0.0f, 0.3f}) {
    SCOPED_TRACE("dropout " + std::to_string(dropout_p));
    const KernelRun run = run_kernel(qkv, pos, d_ctx, c, dropout_p, key);

    const std::vector<double> qkv64(qkv.begin(), qkv.end()), pos64(pos.begin(), pos.end());
    const std::vector<double> want = twin_forward(qkv64, pos64, c, dropout_p, key);
    double worst = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(want[i] - run.ctx[i]));
      norm = std::max(norm, std::abs(want[i]));
    }
    EXPECT_LE(worst, 2e-6 * norm);

    // Gradients of L = <ctx, d_ctx> by central differences of the twin (its masks fixed).
    auto loss = [&](const std::vector<double>& q, const std::vector<double>& p) {
      const std::vector<double> out = twin_forward(q, p, c, dropout_p, key);
      double sum = 0;
      for (size_t i = 0; i < out.size(); ++i) sum += out[i] * d_ctx[i];
      return sum;
    };
    const double h = 1e-5;
    auto check = [&](std::vector<double> q, std::vector<double> p, bool of_pos,
                     const std::vector<float>& analytic, const char* what) {
      std::vector<double>& x = of_pos ? p : q;
      double err = 0, scale = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        x[i] = keep + h;
        const double up = loss(q, p);
        x[i] = keep - h;
        const double down = loss(q, p);
        x[i] = keep;
        const double numeric = (up - down) / (2 * h);
        err = std::max(err, std::abs(numeric - analytic[i]));
        scale = std::max(scale, std::abs(numeric));
      }
      EXPECT_GT(scale, 0.0) << what;
      EXPECT_LE(err, 1e-4 * scale) << what;
    };
    check(qkv64, pos64, false, run.d_qkv, "d_qkv");
    if (c2p || p2c) {
      check(qkv64, pos64, true, run.d_pos, "d_pos");
    } else {
      for (float x : run.d_pos) ASSERT_EQ(x, 0.0f);
    }
  }
}

// (position_buckets, max_relative_positions, c2p, p2c): log buckets reached by the 11-token
// sequence (|r| up to 10 > 4), plain distances clamped at S = 4, one term alone, none.
INSTANTIATE_TEST_SUITE_P(Configs, DisentangledAttention,
                         ::testing::Values(std::make_tuple(8, 16, true, true),
                                           std::make_tuple(0, 4, true, true),
                                           std::make_tuple(8, 16, true, false),
                                           std::make_tuple(8, 16, false, true),
                                           std::make_tuple(0, 4, false, false)));

// DeBERTa-v3-base's config.json as the hub has it.
const char* kV3Base = R"({
  "model_type": "deberta-v2", "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
  "intermediate_size": 3072, "max_position_embeddings": 512, "relative_attention": true,
  "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": true,
  "pos_att_type": "p2c|c2p", "layer_norm_eps": 1e-7, "max_relative_positions": -1,
  "position_biased_input": false, "num_attention_heads": 12, "num_hidden_layers": 12,
  "type_vocab_size": 0, "vocab_size": 128100})";

TEST(DebertaConfig, V3BaseIsReadAsHfDoes) {
  const ModelConfig c = parse_model_config(kV3Base, "config.json");
  EXPECT_EQ(c.family, Family::deberta_v2);
  EXPECT_TRUE(c.relative_attention);
  EXPECT_TRUE(c.content_to_position);
  EXPECT_TRUE(c.position_to_content);
  EXPECT_FALSE(c.absolute_positions);
  EXPECT_TRUE(c.relative_norm);
  EXPECT_EQ(c.position_buckets, 256);
  EXPECT_EQ(c.max_relative_positions, 512);  // -1: max_position_embeddings
  EXPECT_EQ(c.relative_span(), 256);
  EXPECT_EQ(c.type_vocab_size, 0);
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-7);
  EXPECT_FLOAT_EQ(c.effective_classifier_dropout(), 0.1f);  // no cls_dropout
  // 184M parameters with the head (HF's DebertaV2ForSequenceClassification, 2 labels):
  // no position or type table; rel_embeddings 512 x 768 and its LayerNorm.
  const ParamLayout layout(c);
  EXPECT_EQ(layout.find("deberta.embeddings.position_embeddings.weight"), nullptr);
  EXPECT_EQ(layout.find("deberta.embeddings.token_type_embeddings.weight"), nullptr);
  ASSERT_NE(layout.find("deberta.encoder.rel_embeddings.weight"), nullptr);
  EXPECT_EQ(layout.find("deberta.encoder.rel_embeddings.weight")->numel, 512 * 768);
  EXPECT_NE(layout.find("deberta.encoder.LayerNorm.bias"), nullptr);
  EXPECT_NE(layout.find("deberta.encoder.layer.11.attention.self.key_proj.bias"), nullptr);
  EXPECT_NE(layout.find("pooler.dense.weight"), nullptr);
  int64_t total = 0;
  for (const ParamSpec& spec : layout.specs()) total += spec.numel;
  EXPECT_EQ(total, 184423682);
}

// conv_kernel_size 3 (v2-xlarge's): the encoder's nn.Conv1d (D, D, 3) with its bias and a
// LayerNorm, as HF names and shapes them.
TEST(DebertaConfig, ConvolutionIsLaidOutAsHfs) {
  std::string text = kV3Base;
  text.insert(text.size() - 1, R"(, "conv_kernel_size": 3, "conv_act": "gelu")");
  const ModelConfig c = parse_model_config(text, "config.json");
  EXPECT_EQ(c.conv_kernel_size, 3);
  EXPECT_EQ(c.conv_act, "gelu");
  const ParamLayout layout(c);
  const ParamSpec* w = layout.find("deberta.encoder.conv.conv.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{768, 768, 3}));
  EXPECT_EQ(layout.find("deberta.encoder.conv.conv.bias")->shape, (std::vector<int64_t>{768}));
  EXPECT_NE(layout.find("deberta.encoder.conv.LayerNorm.weight"), nullptr);
  EXPECT_NE(layout.find("deberta.encoder.conv.LayerNorm.bias"), nullptr);
  int64_t total = 0;
  for (const ParamSpec& spec : layout.specs()) total += spec.numel;
  EXPECT_EQ(total, 184423682 + 768 * 768 * 3 + 3 * 768);
  EXPECT_EQ(parse_model_config(kV3Base, "config.json").conv_kernel_size, 0);
}

// embedding_size 128 < 768: the tables are 128 wide and embed_proj (768, 128), without a bias,
// brings them to the LayerNorm's 768.
TEST(DebertaConfig, NarrowEmbeddingsAreProjectedAsHfs) {
  std::string text = kV3Base;
  text.insert(text.size() - 1, R"(, "embedding_size": 128)");
  const ModelConfig c = parse_model_config(text, "config.json");
  EXPECT_EQ(c.embedding_size, 128);
  EXPECT_TRUE(c.has_embedding_projection());
  const ParamLayout layout(c);
  EXPECT_EQ(layout.find("deberta.embeddings.word_embeddings.weight")->shape,
            (std::vector<int64_t>{128100, 128}));
  EXPECT_EQ(layout.find("deberta.embeddings.embed_proj.weight")->shape,
            (std::vector<int64_t>{768, 128}));
  EXPECT_EQ(layout.find("deberta.embeddings.embed_proj.bias"), nullptr);
  EXPECT_EQ(layout.find("deberta.embeddings.LayerNorm.weight")->shape, (std::vector<int64_t>{768}));
  int64_t total = 0;
  for (const ParamSpec& spec : layout.specs()) total += spec.numel;
  EXPECT_EQ(total, 184423682 - 128100 * (768 - 128) + 768 * 128);
  EXPECT_EQ(ParamLayout(parse_model_config(kV3Base, "config.json"))
                .find("deberta.embeddings.embed_proj.weight"),
            nullptr);
}

// The packed convolution (gather, then the (D, D k) product) against a direct convolution in
// double with zero padding at each sequence's ends, for k = 1, 3, 5 over sequences shorter and
// longer than the window; the scatter is the gather's transpose: <gather(x), y> = <x, scatter(y)>.
TEST(SequenceConv, GatherTimesWeightIsTheConvolutionAndScatterItsTranspose) {
  const std::vector<int64_t> offsets = {0, 1, 3, 10, 16};  // lengths 1, 2, 7, 6
  const int64_t B = 4, N = 16, D = 5;
  for (int64_t k : {1, 3, 5}) {
    const std::vector<float> x = random_values(static_cast<size_t>(N * D), 11);
    const std::vector<float> w = random_values(static_cast<size_t>(D * D * k), 12);  // (D, D, k)
    std::vector<float> cols(static_cast<size_t>(N * D * k), -7.0f);
    sequence_conv_gather(cols.data(), x.data(), offsets.data(), B, D, k);
    double worst = 0;
    for (int64_t s = 0; s < B; ++s)
      for (int64_t i = offsets[s]; i < offsets[s + 1]; ++i)
        for (int64_t o = 0; o < D; ++o) {
          double direct = 0, product = 0;
          for (int64_t c = 0; c < D; ++c)
            for (int64_t t = 0; t < k; ++t) {
              const int64_t j = i + t - (k - 1) / 2;
              const double wv = w[static_cast<size_t>((o * D + c) * k + t)];
              if (j >= offsets[s] && j < offsets[s + 1])
                direct += wv * x[static_cast<size_t>(j * D + c)];
              product += wv * cols[static_cast<size_t>(i * D * k + c * k + t)];
            }
          worst = std::max(worst, std::abs(direct - product));
        }
    EXPECT_LE(worst, 1e-5) << "k " << k;

    const std::vector<float> y = random_values(static_cast<size_t>(N * D * k), 13);
    std::vector<float> back(static_cast<size_t>(N * D), 0.0f);
    sequence_conv_scatter(back.data(), y.data(), offsets.data(), B, D, k);
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < y.size(); ++i) lhs += static_cast<double>(cols[i]) * y[i];
    for (size_t i = 0; i < x.size(); ++i) rhs += static_cast<double>(x[i]) * back[i];
    EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(lhs)) << "k " << k;
    // Each element against its sum in double, to float rounding of its up to k terms (the terms
    // are added one by one into the destination, so a second scatter is 2x the first only up to
    // that rounding: the order, and a compiler's vectorisation, decide the last bits).
    std::vector<double> want(back.size(), 0.0), size(back.size(), 0.0);
    for (int64_t s = 0; s < B; ++s)
      for (int64_t i = offsets[s]; i < offsets[s + 1]; ++i)
        for (int64_t c = 0; c < D; ++c)
          for (int64_t t = 0; t < k; ++t) {
            const int64_t j = i + t - (k - 1) / 2;
            if (j < offsets[s] || j >= offsets[s + 1]) continue;
            const double term = y[static_cast<size_t>(i * D * k + c * k + t)];
            want[static_cast<size_t>(j * D + c)] += term;
            size[static_cast<size_t>(j * D + c)] += std::abs(term);
          }
    // It accumulates: a second scatter adds the same sums again.
    std::vector<float> twice = back;
    sequence_conv_scatter(twice.data(), y.data(), offsets.data(), B, D, k);
    for (size_t i = 0; i < back.size(); ++i) {
      const double bound = 1e-6 * (1.0 + 2.0 * size[i]);
      EXPECT_NEAR(back[i], want[i], bound) << "k " << k << " element " << i;
      EXPECT_NEAR(twice[i], 2 * want[i], 2 * bound) << "k " << k << " element " << i;
    }
  }
}

// share_att_key false (HF's default when the field is absent): every layer has pos_query_proj
// (for p2c) and pos_key_proj (for c2p) of its own, D x D and D each; with c2p alone, only the key.
TEST(DebertaConfig, SeparatePositionProjectionsAreLaidOutAsHfs) {
  auto layout_of = [](const std::string& from, const std::string& to) {
    std::string text = kV3Base;
    text.replace(text.find(from), from.size(), to);
    return ParamLayout(parse_model_config(text, "config.json"));
  };
  auto total = [](const ParamLayout& layout) {
    int64_t sum = 0;
    for (const ParamSpec& spec : layout.specs()) sum += spec.numel;
    return sum;
  };
  const std::string shared = R"("share_att_key": true)";
  for (const std::string& separate :
       {std::string(R"("share_att_key": false)"), std::string(R"("share_att_key_absent": true)")}) {
    const ParamLayout layout = layout_of(shared, separate);
    const std::string prefix = "deberta.encoder.layer.11.attention.self.";
    for (const char* name : {"pos_key_proj.weight", "pos_key_proj.bias", "pos_query_proj.weight",
                             "pos_query_proj.bias"})
      EXPECT_NE(layout.find(prefix + name), nullptr) << separate << " " << name;
    EXPECT_EQ(total(layout), 184423682 + 12 * 2 * (768 * 768 + 768)) << separate;
  }
  std::string c2p_only = kV3Base;
  c2p_only.replace(c2p_only.find(R"("p2c|c2p")"), 9, R"("c2p")");
  c2p_only.replace(c2p_only.find(shared), shared.size(), R"("share_att_key": false)");
  const ParamLayout layout(parse_model_config(c2p_only, "config.json"));
  EXPECT_NE(layout.find("deberta.encoder.layer.0.attention.self.pos_key_proj.weight"), nullptr);
  EXPECT_EQ(layout.find("deberta.encoder.layer.0.attention.self.pos_query_proj.weight"), nullptr);
  EXPECT_EQ(total(layout), 184423682 + 12 * (768 * 768 + 768));
  // The layer's own query and key weights, shared: no projection of their own.
  EXPECT_EQ(ParamLayout(parse_model_config(kV3Base, "config.json"))
                .find("deberta.encoder.layer.0.attention.self.pos_key_proj.weight"),
            nullptr);
}

TEST(DebertaConfig, UnsupportedOptionsAreRefusedNamingTheField) {
  auto with = [](const std::string& field) {
    std::string text = kV3Base;
    text.insert(text.size() - 1, ", " + field);
    return text;
  };
  auto refused = [&](const std::string& field, const std::string& named) {
    try {
      parse_model_config(with(field), "config.json");
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << field << " was accepted";
  };
  refused(R"("conv_kernel_size": 2)", "conv_kernel_size");  // even: HF's rows would not match
  refused(R"("conv_kernel_size": 3, "conv_groups": 4)", "conv_groups");
  refused(R"("conv_kernel_size": 3, "conv_act": "swish")", "conv_act");
  refused(R"("pooler_hidden_size": 1024)", "pooler_hidden_size");
  refused(R"("pooler_hidden_act": "tanh")", "pooler_hidden_act");
  refused(R"("attention_head_size": 32)", "attention_head_size");
  std::string p2p = kV3Base;
  p2p.replace(p2p.find(R"("p2c|c2p")"), 9, R"("p2c|p2p")");
  try {
    parse_model_config(p2p, "config.json");
    ADD_FAILURE() << "p2p was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pos_att_type"), std::string::npos) << e.what();
  }
  std::string norm = kV3Base;
  norm.replace(norm.find(R"("layer_norm")"), 12, R"("batch_norm")");
  EXPECT_THROW(parse_model_config(norm, "config.json"), Error);
}

}  // namespace
}  // namespace cpuft
