// Reference kernels (T = double) against central finite differences. Every backward is a
// vector-Jacobian product, checked through the scalar L = sum(r * y) with a random r: then
// dL/dinput is exactly what the backward returns for d_y = r.
//
// Tolerance: with h = 1e-6 the central difference has truncation error ~h^2 |f'''| ~ 1e-12 and
// rounding error ~1e-16 |L| / h ~ 1e-10 for |L| ~ 1, so 1e-6 relative (absolute below 1) is far
// above both, and far below any real mistake (a wrong term is O(0.1) or more).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/reference/activations.h"
#include "kernels/reference/convert.h"
#include "kernels/reference/embeddings.h"
#include "kernels/reference/layer_norm.h"
#include "kernels/reference/losses.h"
#include "kernels/reference/softmax.h"
#include "kernels/test_util.h"

namespace cpuft {
namespace {

using testing::random_ids;
using testing::random_normal;
using testing::random_uniform;
using Vec = std::vector<double>;

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central differences of loss() with respect to every element of `input`, against `analytic`.
void expect_gradient(Vec& input, const Vec& analytic, const std::function<double()>& loss,
                     const std::string& what) {
  ASSERT_EQ(input.size(), analytic.size()) << what;
  constexpr double h = 1e-6;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const double saved = input[i];
    input[i] = saved + h;
    const double plus = loss();
    input[i] = saved - h;
    const double minus = loss();
    input[i] = saved;
    const double fd = (plus - minus) / (2 * h);
    EXPECT_NEAR(analytic[i], fd, 1e-6 * std::max(1.0, std::abs(fd))) << what << " [" << i << "]";
  }
}

TEST(ReferenceGrad, LayerNorm) {
  std::mt19937 rng(1);
  const int64_t N = 3, D = 7;
  const float eps = 1e-5f;
  Vec x = random_normal<double>(rng, N * D, 0.5, 2.0);
  Vec gamma = random_uniform<double>(rng, D, 0.5, 1.5);
  Vec beta = random_normal<double>(rng, D);
  const Vec r = random_normal<double>(rng, N * D);
  Vec y(N * D), mean(N), rstd(N);
  auto loss = [&] {
    reference::layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                                  beta.data(), eps, N, D);
    return dot(r, y);
  };
  loss();
  Vec d_x(N * D), d_gamma(D, 0.0), d_beta(D, 0.0);
  reference::layer_norm_backward(d_x.data(), d_gamma.data(), d_beta.data(), r.data(), x.data(),
                                 mean.data(), rstd.data(), gamma.data(), N, D);
  expect_gradient(x, d_x, loss, "d_x");
  expect_gradient(gamma, d_gamma, loss, "d_gamma");
  expect_gradient(beta, d_beta, loss, "d_beta");
}

TEST(ReferenceGrad, LayerNormForwardMatchesDefinition) {
  // Biased variance and eps inside the square root, as torch.nn.LayerNorm; a row whose variance
  // (1e-6) is comparable to eps would expose eps misplaced.
  const double x[4] = {1.0, 1.001, 0.999, 1.002};
  const double gamma[4] = {1, 1, 1, 1}, beta[4] = {0, 0, 0, 0};
  double y[4], mean, rstd;
  const float eps = 1e-6f;
  reference::layer_norm_forward(y, &mean, &rstd, x, gamma, beta, eps, 1, 4);
  const double mu = (1.0 + 1.001 + 0.999 + 1.002) / 4;
  double var = 0;
  for (double v : x) var += (v - mu) * (v - mu) / 4;
  EXPECT_NEAR(mean, mu, 1e-15);
  EXPECT_NEAR(rstd, 1 / std::sqrt(var + static_cast<double>(eps)), 1e-9 * rstd);
  EXPECT_NEAR(y[3], (x[3] - mu) * rstd, 1e-12);
}

TEST(ReferenceGrad, Gelu) {
  std::mt19937 rng(2);
  Vec x = random_uniform<double>(rng, 41, -5.0, 5.0);
  x[0] = 0.0;
  x[1] = -0.7518;  // near the minimum of GELU, where the derivative crosses zero
  const Vec r = random_normal<double>(rng, x.size());
  Vec y(x.size()), d_x(x.size());
  auto loss = [&] {
    reference::gelu_forward(y.data(), x.data(), static_cast<int64_t>(x.size()));
    return dot(r, y);
  };
  reference::gelu_backward(d_x.data(), r.data(), x.data(), static_cast<int64_t>(x.size()));
  expect_gradient(x, d_x, loss, "gelu d_x");
  // And the forward is the erf formula: GELU(1) = 0.5 * (1 + erf(1/sqrt 2)) = 0.8413447460685429.
  double one = 1.0, g1;
  reference::gelu_forward(&g1, &one, 1);
  EXPECT_NEAR(g1, 0.8413447460685429, 1e-15);
}

TEST(ReferenceGrad, Tanh) {
  std::mt19937 rng(3);
  Vec x = random_uniform<double>(rng, 33, -4.0, 4.0);
  const Vec r = random_normal<double>(rng, x.size());
  Vec y(x.size()), d_x(x.size());
  const auto n = static_cast<int64_t>(x.size());
  auto loss = [&] {
    reference::tanh_forward(y.data(), x.data(), n);
    return dot(r, y);
  };
  loss();
  reference::tanh_backward(d_x.data(), r.data(), y.data(), n);  // uses the forward's output
  expect_gradient(x, d_x, loss, "tanh d_x");
}

TEST(ReferenceGrad, Softmax) {
  std::mt19937 rng(4);
  const int64_t N = 3, C = 6;
  Vec x = random_normal<double>(rng, N * C, 0, 2);
  const Vec r = random_normal<double>(rng, N * C);
  Vec y(N * C), d_x(N * C);
  auto loss = [&] {
    reference::softmax_forward(y.data(), x.data(), N, C);
    return dot(r, y);
  };
  loss();
  reference::softmax_backward(d_x.data(), r.data(), y.data(), N, C);
  expect_gradient(x, d_x, loss, "softmax d_x");
  // In place (d_x aliases d_y) gives the same (y recomputed: the differences moved x last).
  loss();
  reference::softmax_backward(d_x.data(), r.data(), y.data(), N, C);
  Vec in_place = r;
  reference::softmax_backward(in_place.data(), in_place.data(), y.data(), N, C);
  EXPECT_EQ(in_place, d_x);
}

TEST(ReferenceGrad, Embeddings) {
  std::mt19937 rng(5);
  const int64_t N = 9, D = 4, V = 5, P = 4, K = 2;
  Vec word = random_normal<double>(rng, V * D), pos = random_normal<double>(rng, P * D);
  Vec type = random_normal<double>(rng, K * D);
  const auto ids = random_ids(rng, N, V), pos_ids = random_ids(rng, N, P);
  const auto type_ids = random_ids(rng, N, K);  // N > V: ids certainly repeat
  const Vec r = random_normal<double>(rng, N * D);
  Vec out(N * D);
  auto loss = [&] {
    reference::embeddings_forward(out.data(), word.data(), pos.data(), type.data(), ids.data(),
                                  pos_ids.data(), type_ids.data(), N, D);
    return dot(r, out);
  };
  Vec d_word(V * D, 0.0), d_pos(P * D, 0.0), d_type(K * D, 0.0);
  reference::embeddings_backward(d_word.data(), d_pos.data(), d_type.data(), r.data(), ids.data(),
                                 pos_ids.data(), type_ids.data(), N, D);
  expect_gradient(word, d_word, loss, "d_word");
  expect_gradient(pos, d_pos, loss, "d_pos");
  expect_gradient(type, d_type, loss, "d_type");
}

TEST(ReferenceGrad, CrossEntropy) {
  std::mt19937 rng(6);
  const int64_t N = 4, K = 3;
  const float loss_scale = 1.75f;  // d_logits carries the scale, the returned loss does not
  for (float eps : {0.0f, 0.1f, 0.6f}) {
    Vec logits = random_normal<double>(rng, N * K, 0, 2);
    const auto labels = random_ids(rng, N, static_cast<int32_t>(K));
    Vec d_logits(N * K), scratch(N * K);
    auto loss = [&] {
      return reference::cross_entropy_forward_backward(scratch.data(), logits.data(), labels.data(),
                                                       1.0f, N, K, eps);
    };
    const double value = reference::cross_entropy_forward_backward(
        d_logits.data(), logits.data(), labels.data(), loss_scale, N, K, eps);
    // The loss itself: mean of (1 - eps) (logsumexp - logit[label]) + eps mean_k(logsumexp -
    // logit[k]) (torch's CrossEntropyLoss(label_smoothing=eps)), computed here directly.
    double want = 0;
    for (int64_t i = 0; i < N; ++i) {
      double s = 0, mean = 0;
      for (int64_t k = 0; k < K; ++k) s += std::exp(logits[i * K + k]);
      for (int64_t k = 0; k < K; ++k) mean += (std::log(s) - logits[i * K + k]) / K;
      const double e = eps;  // the kernel's eps, in double (1 - eps in float would round)
      want += ((1 - e) * (std::log(s) - logits[i * K + labels[i]]) + e * mean) / N;
    }
    EXPECT_NEAR(value, want, 1e-12) << "eps " << eps;
    Vec unscaled = d_logits;
    for (auto& v : unscaled) v /= loss_scale;
    expect_gradient(logits, unscaled, loss, "d_logits eps " + std::to_string(eps));
  }
}

TEST(ReferenceGrad, Mse) {
  std::mt19937 rng(7);
  const int64_t N = 5;
  const float loss_scale = 0.5f;
  Vec pred = random_normal<double>(rng, N), target = random_normal<double>(rng, N);
  Vec d_pred(N), scratch(N);
  auto loss = [&] {
    return reference::mse_forward_backward(scratch.data(), pred.data(), target.data(), 1.0f, N);
  };
  const double value =
      reference::mse_forward_backward(d_pred.data(), pred.data(), target.data(), loss_scale, N);
  double want = 0;
  for (int64_t i = 0; i < N; ++i) want += (pred[i] - target[i]) * (pred[i] - target[i]) / N;
  EXPECT_NEAR(value, want, 1e-12);
  for (auto& v : d_pred) v /= loss_scale;
  expect_gradient(pred, d_pred, loss, "d_pred");
}

// fp32 -> bf16 rounding against its definition, written independently of the bit trick: the two
// bf16 neighbours of x (truncation and one step up in magnitude) compared in double, ties to the
// neighbour with an even last bit. Random bit patterns cover every exponent, subnormals, the
// overflow to infinity and NaNs.
TEST(ReferenceBf16, RoundsToNearestEvenOnRandomBitPatterns) {
  std::mt19937 rng(7);
  std::vector<float> x(200000);
  for (float& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  std::vector<bf16> y(x.size());
  reference::round_to_bf16(y.data(), x.data(), static_cast<int64_t>(x.size()));
  int failures = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const uint32_t u = std::bit_cast<uint32_t>(x[i]);
    uint16_t want = 0;
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(to_float(y[i]))) << std::hex << u;
      EXPECT_EQ(y[i].bits & 0x8000u, (u >> 16) & 0x8000u) << "NaN keeps its sign";
      continue;
    }
    const uint16_t down = static_cast<uint16_t>(u >> 16);
    const uint16_t up = static_cast<uint16_t>(down + 1);  // next magnitude (may be infinity)
    // IEEE: past the largest finite bf16, infinity stands where 2^128 would be.
    const double lo = to_float(bf16{down});
    const double hi = std::isinf(to_float(bf16{up})) ? std::copysign(0x1p128, double(x[i]))
                                                     : double(to_float(bf16{up}));
    const double d_lo = std::abs(double(x[i]) - lo), d_hi = std::abs(hi - double(x[i]));
    want = d_lo < d_hi ? down : d_hi < d_lo ? up : (down % 2 == 0 ? down : up);
    if (y[i].bits != want && ++failures <= 5)
      ADD_FAILURE() << std::hex << "x bits 0x" << u << ": got 0x" << y[i].bits << ", want 0x"
                    << want;
  }
  EXPECT_EQ(failures, 0);
}

TEST(ReferenceBf16, KnownValues) {
  const auto bits = [](float v) { return round_to_bf16(v).bits; };
  EXPECT_EQ(bits(1.0f), 0x3F80);
  EXPECT_EQ(bits(-2.0f), 0xC000);
  EXPECT_EQ(bits(-0.0f), 0x8000);
  EXPECT_EQ(bits(1.0f + 0x1p-8f), 0x3F80);                     // tie, even neighbour below
  EXPECT_EQ(bits(1.0f + 3 * 0x1p-8f), 0x3F82);                 // tie, even neighbour above
  EXPECT_EQ(bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);          // just above the tie
  EXPECT_EQ(bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to infinity
  EXPECT_EQ(bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(bits(0x1p-133f), 0x0001);  // the smallest bf16 subnormal survives
  EXPECT_EQ(bits(std::numeric_limits<float>::quiet_NaN()) & 0x7FC0, 0x7FC0);
  EXPECT_EQ(to_float(bf16{0x3F80}), 1.0f);
  EXPECT_EQ(to_float(round_to_bf16(3.140625f)), 3.140625f);  // exactly representable: unchanged
}

}  // namespace
}  // namespace cpuft
