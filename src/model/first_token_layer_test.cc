// The first-token layer against its twin, the full encoder layer: with dropout on at all three
// sites, its output must be the full layer's first-token rows, and its backward (from a gradient
// on those rows only) the full layer's input gradient and parameter gradients.
#include "model/first_token_layer.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "model/attention.h"

namespace cpuft {
namespace {

constexpr int64_t D = 32, H = 4, F = 64;
const std::vector<int64_t> kLengths = {7, 1, 12, 3, 9};  // one sequence of a single token

std::vector<float> random_vector(int64_t n, uint64_t stream, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        scale * (2.0f * uniform_at(RngKey{7, stream}, static_cast<uint64_t>(i)) - 1.0f);
  return v;
}

double relative_l2(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// One layer's parameters (or gradients) in one flat buffer.
struct LayerBuffer {
  std::vector<float> data;
  LayerParams p{};
  LayerBuffer(uint64_t stream, float scale) {
    const int64_t sizes[12] = {3 * D * D, 3 * D, D * D, D, D, D, F * D, F, D * F, D, D, D};
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    data = scale == 0 ? std::vector<float>(static_cast<size_t>(total), 0.0f)
                      : random_vector(total, stream, scale);
    float* fields[12];
    float* at = data.data();
    for (int i = 0; i < 12; ++i) {
      fields[i] = at;
      at += sizes[i];
    }
    p = LayerParams{fields[0], fields[1], fields[2], fields[3], fields[4],  fields[5],
                    fields[6], fields[7], fields[8], fields[9], fields[10], fields[11]};
    if (scale != 0)  // LayerNorm weights near 1, as trained ones are
      for (float* w : {p.attn_ln_w, p.ffn_ln_w})
        for (int64_t i = 0; i < D; ++i) w[i] += 1.0f;
  }
  // (name, pointer, size) of each tensor, for comparisons.
  struct Tensor {
    const char* name;
    const float* data;
    int64_t n;
  };
  std::vector<Tensor> tensors() const {
    return {{"qkv_w", p.qkv_w, 3 * D * D},       {"qkv_b", p.qkv_b, 3 * D},
            {"attn_out_w", p.attn_out_w, D * D}, {"attn_out_b", p.attn_out_b, D},
            {"attn_ln_w", p.attn_ln_w, D},       {"attn_ln_b", p.attn_ln_b, D},
            {"ffn_in_w", p.ffn_in_w, F * D},     {"ffn_in_b", p.ffn_in_b, F},
            {"ffn_out_w", p.ffn_out_w, D * F},   {"ffn_out_b", p.ffn_out_b, D},
            {"ffn_ln_w", p.ffn_ln_w, D},         {"ffn_ln_b", p.ffn_ln_b, D}};
  }
};

struct Fixture {
  int64_t B = static_cast<int64_t>(kLengths.size()), N = 0, T = 0, probs = 0;
  std::vector<int64_t> seq_offsets{0}, prob_offsets, sample_ids;

  Fixture() {
    for (int64_t len : kLengths) {
      seq_offsets.push_back(seq_offsets.back() + len);
      T = std::max(T, len);
      probs += H * len * len;
    }
    N = seq_offsets.back();
    prob_offsets.resize(static_cast<size_t>(B + 1));
    attention_prob_offsets(prob_offsets.data(), seq_offsets.data(), B, H);
    for (int64_t s = 0; s < B; ++s) sample_ids.push_back(100 + 3 * s);  // not 0..B-1
  }
  PackedBatch batch() const {
    return PackedBatch{N, B, seq_offsets.data(), prob_offsets.data(), sample_ids.data()};
  }
};

// Owns the float buffers of one test.
struct Buffers {
  std::vector<std::vector<float>> owned;
  float* get(int64_t n) {
    owned.emplace_back(static_cast<size_t>(n), 0.0f);
    return owned.back().data();
  }
};

void run_twins(float dropout) {
  Fixture f;
  const int64_t N = f.N, B = f.B, T = f.T;
  const PackedBatch batch = f.batch();
  const EncoderDims dims{AttentionDims{D, H, D / H}, F, 1e-12f, dropout, dropout, dropout};
  const RngKey keys[3] = {RngKey{11, 1}, RngKey{11, 2}, RngKey{11, 3}};
  const LayerBuffer params(1, 0.2f);
  const std::vector<float> x = random_vector(N * D, 2, 1.0f);

  Buffers buf;
  EncoderScratch scratch{};
  for (float*& p : scratch.nd) p = buf.get(N * D);
  scratch.nf = buf.get(N * F);
  scratch.n3d = buf.get(N * 3 * D);
  scratch.attention_per_thread = attention_scratch_floats(T);
  scratch.attention = buf.get(scratch.attention_per_thread * omp_get_max_threads());
  const EncoderPlans plans{LinearPlans(N, D, 3 * D), LinearPlans(N, D, D), LinearPlans(N, D, F),
                           LinearPlans(N, F, D)};
  const FirstTokenPlans first_plans{LinearPlans(N, D, 2 * D), LinearPlans(B, D, D)};

  // The full layer.
  LayerActivations full{};
  full.qkv = buf.get(N * 3 * D);
  full.probs = buf.get(f.probs);
  full.ctx = buf.get(N * D);
  full.s1 = buf.get(N * D);
  full.ln1_mean = buf.get(N);
  full.ln1_rstd = buf.get(N);
  full.h1 = buf.get(N * D);
  full.ffn_pre = buf.get(N * F);
  full.ffn_act = buf.get(N * F);
  full.s2 = buf.get(N * D);
  full.ln2_mean = buf.get(N);
  full.ln2_rstd = buf.get(N);
  full.out = buf.get(N * D);
  encoder_layer_forward(full, x.data(), params.p, nullptr, plans, batch, dims, keys, scratch);

  // The first-token layer.
  FirstTokenActivations first{};
  first.x_first = buf.get(B * D);
  first.kv = buf.get(N * 2 * D);
  first.q = buf.get(B * D);
  first.probs = buf.get(H * N);
  first.ctx = buf.get(B * D);
  first.s1 = buf.get(B * D);
  first.ln1_mean = buf.get(B);
  first.ln1_rstd = buf.get(B);
  first.h1 = buf.get(B * D);
  first.ffn_pre = buf.get(B * F);
  first.ffn_act = buf.get(B * F);
  first.s2 = buf.get(B * D);
  first.ln2_mean = buf.get(B);
  first.ln2_rstd = buf.get(B);
  first.out = buf.get(B * D);
  first_token_layer_forward(first, x.data(), params.p, nullptr, plans, first_plans, batch, dims,
                            keys, scratch);

  std::vector<float> full_first(static_cast<size_t>(B * D));
  for (int64_t s = 0; s < B; ++s)
    std::copy_n(full.out + f.seq_offsets[s] * D, D, full_first.data() + s * D);
  EXPECT_LE(relative_l2(first.out, full_first.data(), B * D), 1e-6) << "forward";

  // Backward from a gradient on the first tokens only.
  const std::vector<float> d_first = random_vector(B * D, 3, 1.0f);
  std::vector<float> d_full_out(static_cast<size_t>(N * D), 0.0f);
  for (int64_t s = 0; s < B; ++s)
    std::copy_n(d_first.data() + s * D, D, d_full_out.data() + f.seq_offsets[s] * D);
  std::vector<float> d_x_full(static_cast<size_t>(N * D)), d_x_first(static_cast<size_t>(N * D));
  LayerBuffer g_full(0, 0.0f), g_first(0, 0.0f);
  encoder_layer_backward(d_x_full.data(), d_full_out.data(), x.data(), full, params.p, g_full.p,
                         nullptr, plans, batch, dims, keys, scratch);
  first_token_layer_backward(d_x_first.data(), d_first.data(), x.data(), first, params.p, g_first.p,
                             nullptr, plans, first_plans, batch, dims, keys, scratch);
  EXPECT_LE(relative_l2(d_x_first.data(), d_x_full.data(), N * D), 1e-6) << "input gradient";
  const auto want = g_full.tensors(), got = g_first.tensors();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_LE(relative_l2(got[i].data, want[i].data, want[i].n), 1e-6) << want[i].name;

  // The comparison sees dropout: the same layer without it gives another output.
  if (dropout > 0) {
    const EncoderDims no_dropout{dims.attention, F, dims.layer_norm_eps, 0, 0, 0};
    first_token_layer_forward(first, x.data(), params.p, nullptr, plans, first_plans, batch,
                              no_dropout, keys, scratch);
    EXPECT_GT(relative_l2(first.out, full_first.data(), B * D), 1e-3);
  }
}

TEST(FirstTokenLayer, MatchesTheFullLayerOnFirstTokens) {
  run_twins(0.0f);
}

TEST(FirstTokenLayer, MatchesTheFullLayerWithDropoutAtEverySite) {
  run_twins(0.25f);
}

}  // namespace
}  // namespace cpuft
