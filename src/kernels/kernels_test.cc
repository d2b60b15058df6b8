// Table-level properties, checked on every available table (reference, and AVX-512 if the CPU has
// it): fused vs composed kernels, dropout, accumulate/overwrite semantics, AdamW against a double
// computation, thread-count independence, and the CPUFT_FORCE_ISA choice.
#include "kernels/kernels.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/test_util.h"

namespace cpuft {
namespace {

using testing::expect_bitwise_equal;
using testing::expect_close;
using testing::kEps;
using testing::random_ids;
using testing::random_normal;
using testing::random_uniform;
using FVec = std::vector<float>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<const KernelTable*> tables() {
  std::vector<const KernelTable*> out = {&reference_kernels()};
  if (avx512_kernels() != nullptr) out.push_back(avx512_kernels());
  return out;
}

TEST(Fused, AddLayerNormEqualsAddThenLayerNorm) {
  std::mt19937 rng(10);
  for (const KernelTable* t : tables())
    for (int64_t D : {1, 17, 768}) {
      const int64_t N = 5;
      const FVec a = random_normal<float>(rng, N * D), b = random_normal<float>(rng, N * D);
      const FVec gamma = random_uniform<float>(rng, D, 0.5, 1.5);
      const FVec beta = random_normal<float>(rng, D);
      FVec y1(N * D), s1(N * D), mu1(N), rs1(N), y2(N * D), s2(N * D), mu2(N), rs2(N);
      t->add_layer_norm_forward(y1.data(), s1.data(), mu1.data(), rs1.data(), a.data(), b.data(),
                                gamma.data(), beta.data(), 1e-12f, N, D);
      for (int64_t k = 0; k < N * D; ++k) s2[k] = a[k] + b[k];
      t->layer_norm_forward(y2.data(), mu2.data(), rs2.data(), s2.data(), gamma.data(), beta.data(),
                            1e-12f, N, D);
      // Same operations on the same sums: identical.
      const std::string what = std::string(t->isa) + " D=" + std::to_string(D);
      expect_bitwise_equal(s1, s2, "s " + what);
      expect_bitwise_equal(y1, y2, "y " + what);
      expect_bitwise_equal(mu1, mu2, "mean " + what);
      expect_bitwise_equal(rs1, rs2, "rstd " + what);
    }
}

std::vector<uint16_t> bf16_bits(const std::vector<bf16>& v) {
  std::vector<uint16_t> out;
  for (const bf16& b : v) out.push_back(b.bits);
  return out;
}

// Runs check(table, N, C, what) in every table, at 1 and 3 threads, for (N, C) shapes with tails
// and above the parallel threshold.
template <typename Check>
void for_each_fused_case(Check check) {
  for (const KernelTable* t : tables())
    for (const auto& [N, C] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {3, 17}, {37, 768}, {20, 3072}, {300, 200}})
      for (int threads : {1, 3}) {
        const int saved = omp_get_max_threads();
        omp_set_num_threads(threads);
        check(*t, N, C,
              std::string(t->isa) + " N=" + std::to_string(N) + " C=" + std::to_string(C) +
                  " threads " + std::to_string(threads));
        omp_set_num_threads(saved);
      }
}

// The bf16 GELU forms are defined as the unfused kernels run in turn: the same bits, in every
// table, at any thread count; the bias gradient accumulates; the bf16 output's masked tail writes
// nothing past the end.
TEST(Fused, GeluBf16FormsEqualTheUnfusedKernelsInTurn) {
  std::mt19937 rng(12);
  for_each_fused_case([&](const KernelTable& t, int64_t N, int64_t C, const std::string& what) {
    const int64_t n = N * C;
    const FVec x = random_normal<float>(rng, n, 0, 3), d_y = random_normal<float>(rng, n);
    const FVec d_b0 = random_normal<float>(rng, C);

    FVec act(n);
    std::vector<bf16> want(n), got(n + 32, bf16{0xDEAD});
    t.gelu_forward(act.data(), x.data(), n);
    t.round_to_bf16(want.data(), act.data(), n);
    t.gelu_forward_bf16(got.data(), x.data(), n);
    for (int64_t i = n; i < n + 32; ++i) EXPECT_EQ(got[i].bits, 0xDEAD) << what;
    got.resize(n);
    EXPECT_EQ(bf16_bits(got), bf16_bits(want)) << "forward " << what;

    FVec d_x(n), d_b_want = d_b0, d_b_got = d_b0;
    t.gelu_backward(d_x.data(), d_y.data(), x.data(), n);
    t.round_to_bf16(want.data(), d_x.data(), n);
    t.bias_backward(d_b_want.data(), d_x.data(), N, C);
    got.assign(n + 32, bf16{0xDEAD});
    t.gelu_backward_bf16(got.data(), d_b_got.data(), d_y.data(), x.data(), N, C);
    for (int64_t i = n; i < n + 32; ++i) EXPECT_EQ(got[i].bits, 0xDEAD) << what;
    got.resize(n);
    EXPECT_EQ(bf16_bits(got), bf16_bits(want)) << "backward " << what;
    expect_bitwise_equal(d_b_got, d_b_want, "bias gradient " + what);
  });
}

// bias_backward_bf16 is bias_backward and round_to_bf16 run in turn, bit for bit, including the
// values the rounding treats apart (NaN, infinities, subnormals, ties).
TEST(Fused, BiasBackwardBf16EqualsTheUnfusedKernelsInTurn) {
  std::mt19937 rng(13);
  for_each_fused_case([&](const KernelTable& t, int64_t N, int64_t C, const std::string& what) {
    const int64_t n = N * C;
    FVec d_y = random_normal<float>(rng, n);
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::denorm_min(),
                              1.0f + 0x1p-8f,  // a tie: rounds to even
                              -0.0f};
    for (std::size_t i = 0; i < std::size(specials) && i < static_cast<std::size_t>(n); ++i)
      d_y[(i * 7919) % n] = specials[i];
    const FVec d_b0 = random_normal<float>(rng, C);

    std::vector<bf16> want(n), got(n + 32, bf16{0xDEAD});
    FVec d_b_want = d_b0, d_b_got = d_b0;
    t.bias_backward(d_b_want.data(), d_y.data(), N, C);
    t.round_to_bf16(want.data(), d_y.data(), n);
    t.bias_backward_bf16(got.data(), d_b_got.data(), d_y.data(), N, C);
    for (int64_t i = n; i < n + 32; ++i) EXPECT_EQ(got[i].bits, 0xDEAD) << what;
    got.resize(n);
    EXPECT_EQ(bf16_bits(got), bf16_bits(want)) << what;
    expect_bitwise_equal(d_b_got, d_b_want, "bias gradient " + what);
  });
}

TEST(Fused, CrossEntropyGradientIsSoftmaxMinusOnehot) {
  std::mt19937 rng(11);
  for (const KernelTable* t : tables())
    for (int64_t K : {2, 3, 17})
      for (float eps : {0.0f, 0.1f, 0.37f}) {
        const int64_t N = 6;
        const FVec logits = random_normal<float>(rng, N * K, 0, 2);
        const auto labels = random_ids(rng, N, static_cast<int32_t>(K));
        const float loss_scale = 1.0f;
        FVec d(N * K), p(N * K);
        t->cross_entropy_forward_backward(d.data(), logits.data(), labels.data(), loss_scale, N, K,
                                          eps);
        t->softmax_forward(p.data(), logits.data(), N, K);
        FVec want(N * K);
        const float g = loss_scale / static_cast<float>(N);
        // The smoothed target: (1 - eps) onehot + eps / K.
        const float off = eps / static_cast<float>(K), on = (1.0f - eps) + off;
        for (int64_t i = 0; i < N; ++i)
          for (int64_t k = 0; k < K; ++k)
            want[i * K + k] = (p[i * K + k] - (k == labels[i] ? on : off)) * g;
        // Same exps, sum and reciprocal as the softmax kernel of the same table: a couple of ulp
        // of slack only for the differing order of operations in the final product.
        expect_close(
            d, want, [&](std::size_t k) { return 2 * kEps * (std::abs(want[k]) + g * kEps); },
            std::string(t->isa) + " K=" + std::to_string(K) + " eps=" + std::to_string(eps));
      }
}

// The smoothed loss against torch's definition written out in double: (1 - eps) nll + eps times
// the mean over the classes of -log_softmax; eps = 0 gives plain cross-entropy bit for bit.
TEST(Losses, LabelSmoothingLossIsTorchs) {
  std::mt19937 rng(12);
  for (const KernelTable* t : tables())
    for (int64_t K : {2, 3, 17}) {
      const int64_t N = 7;
      const FVec logits = random_normal<float>(rng, N * K, 0, 3);
      const auto labels = random_ids(rng, N, static_cast<int32_t>(K));
      for (float eps : {0.0f, 0.1f, 0.5f, 1.0f}) {
        double want = 0;
        for (int64_t i = 0; i < N; ++i) {
          const float* z = logits.data() + i * K;
          double mx = z[0], s = 0, mean_neg_logp = 0;
          for (int64_t k = 1; k < K; ++k) mx = std::max(mx, static_cast<double>(z[k]));
          for (int64_t k = 0; k < K; ++k) s += std::exp(z[k] - mx);
          const double lse = mx + std::log(s);
          for (int64_t k = 0; k < K; ++k) mean_neg_logp += (lse - z[k]) / static_cast<double>(K);
          want += ((1.0 - eps) * (lse - z[labels[i]]) + eps * mean_neg_logp) / N;
        }
        FVec d(N * K);
        const float loss = t->cross_entropy_forward_backward(d.data(), logits.data(), labels.data(),
                                                             1.f, N, K, eps);
        // Per row: a float logsumexp (a few ulp of |terms| <= ~15) and float differences.
        EXPECT_NEAR(loss, want, 64 * kEps * (1 + std::abs(want)))
            << t->isa << " K=" << K << " eps=" << eps;
        if (eps == 0.0f) {
          FVec d0(N * K);
          const float plain = t->cross_entropy_forward_backward(d0.data(), logits.data(),
                                                                labels.data(), 1.f, N, K, 0.0f);
          EXPECT_EQ(loss, plain);
        }
        // Each row of the gradient sums to zero (both the softmax and the target sum to 1).
        for (int64_t i = 0; i < N; ++i) {
          double row = 0;
          for (int64_t k = 0; k < K; ++k) row += d[i * K + k];
          EXPECT_NEAR(row, 0.0, 4.0 * static_cast<double>(K) * kEps / N)
              << t->isa << " K=" << K << " eps=" << eps;
        }
      }
    }
}

TEST(Losses, LabelOutOfRangeThrows) {
  for (const KernelTable* t : tables()) {
    FVec logits(6, 0.f), d(6);
    const int32_t bad_high[2] = {0, 3}, bad_low[2] = {-1, 0};
    EXPECT_THROW(
        t->cross_entropy_forward_backward(d.data(), logits.data(), bad_high, 1.f, 2, 3, 0.f), Error)
        << t->isa;
    EXPECT_THROW(
        t->cross_entropy_forward_backward(d.data(), logits.data(), bad_low, 1.f, 2, 3, 0.f), Error)
        << t->isa;
    const int32_t good[2] = {2, 0};
    // Uniform logits: loss = log 3.
    EXPECT_NEAR(t->cross_entropy_forward_backward(d.data(), logits.data(), good, 1.f, 2, 3, 0.f),
                std::log(3.0), 4 * kEps);
    // Uniform logits: every -log_softmax is log 3, so smoothing leaves the loss at log 3.
    EXPECT_NEAR(t->cross_entropy_forward_backward(d.data(), logits.data(), good, 1.f, 2, 3, 0.2f),
                std::log(3.0), 4 * kEps);
  }
}

TEST(Dropout, ZeroIsIdentity) {
  std::mt19937 rng(12);
  for (const KernelTable* t : tables()) {
    FVec x = random_normal<float>(rng, 1001);
    x[3] = kNaN;  // a copy, not a multiplication by 1 (NaN kept, and -0 stays -0)
    x[4] = -0.0f;
    FVec y(x.size()), d(x.size());
    t->dropout_forward(y.data(), x.data(), 0.0f, RngKey{1, 2}, 1001);
    expect_bitwise_equal(y, x, std::string(t->isa) + " forward");
    t->dropout_backward(d.data(), x.data(), 0.0f, RngKey{1, 2}, 1001);
    expect_bitwise_equal(d, x, std::string(t->isa) + " backward");
    FVec in_place = x;
    t->dropout_forward(in_place.data(), in_place.data(), 0.0f, RngKey{1, 2}, 1001);
    expect_bitwise_equal(in_place, x, std::string(t->isa) + " in place");
  }
}

TEST(Dropout, MaskFractionScaleAndBackward) {
  std::mt19937 rng(13);
  const int64_t n = 200000;
  for (const KernelTable* t : tables())
    for (float p : {0.1f, 0.5f}) {
      const FVec x = random_uniform<float>(rng, n, 0.5, 1.5);  // never 0: kept <=> y != 0
      const FVec d_y = random_uniform<float>(rng, n, 0.5, 1.5);
      FVec y(n), d_x(n);
      const RngKey key{2024, dropout_stream(3, 5, 1)};
      t->dropout_forward(y.data(), x.data(), p, key, n);
      t->dropout_backward(d_x.data(), d_y.data(), p, key, n);
      const float scale = static_cast<float>(1.0 / (1.0 - p));
      int64_t kept = 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool keep = uniform_at(key, static_cast<uint64_t>(i)) >= p;
        kept += keep;
        ASSERT_EQ(y[i], keep ? x[i] * scale : 0.f) << t->isa << " i=" << i;
        ASSERT_EQ(d_x[i] != 0.f, keep) << t->isa << " backward mask differs at " << i;
        ASSERT_EQ(d_x[i], keep ? d_y[i] * scale : 0.f) << t->isa << " i=" << i;
      }
      // The mask read off the forward's output instead of drawn again: the same, as x is never 0.
      FVec d_kept(n);
      t->dropout_backward_kept(d_kept.data(), d_y.data(), y.data(), p, n);
      expect_bitwise_equal(d_kept, d_x, std::string(t->isa) + " backward from the kept values");
      // Binomial(n, 1-p): standard deviation sqrt(p(1-p)/n) <= 0.0012; allow 5 of them.
      const double frac = static_cast<double>(kept) / n;
      EXPECT_NEAR(frac, 1.0 - p, 5 * std::sqrt(p * (1.0 - p) / n)) << t->isa;
      // In place gives the same; another stream gives another mask.
      FVec in_place = x;
      t->dropout_forward(in_place.data(), in_place.data(), p, key, n);
      expect_bitwise_equal(in_place, y, std::string(t->isa) + " in place");
      FVec other(n);
      t->dropout_forward(other.data(), x.data(), p, RngKey{2024, key.stream + 1}, n);
      EXPECT_NE(other, y) << t->isa;
    }
}

// Attention's probabilities (>= 0, exact zeros among them) keep their dropout mask in their sign
// bits: the marking forward's y is dropout_forward's, the mask is the drawn one, and unmarking
// gives back the probabilities and y bit for bit, without the key.
TEST(Dropout, MarkedProbabilitiesGiveBackTheMaskWithoutDrawingIt) {
  std::mt19937 rng(19);
  const int64_t n = 4099;
  for (const KernelTable* t : tables())
    for (float p : {0.1f, 0.5f}) {
      FVec x = random_uniform<float>(rng, n, 0.0, 1.0);
      for (int64_t i = 0; i < n; i += 97) x[i] = 0.0f;
      for (int64_t i = 50; i < n; i += 101) x[i] = 1e-40f;  // denormal
      const RngKey key{77, dropout_stream(1, 2, 3)};
      const std::string what = std::string(t->isa) + " p=" + std::to_string(p);
      FVec want(n), y(n), marked = x;
      t->dropout_forward(want.data(), x.data(), p, key, n);
      t->dropout_forward_marking(y.data(), marked.data(), p, key, n);
      expect_bitwise_equal(y, want, "forward " + what);
      for (int64_t i = 0; i < n; ++i) {
        const bool keep = uniform_at(key, static_cast<uint64_t>(i)) >= p;
        ASSERT_EQ(std::signbit(marked[i]), !keep) << what << " i=" << i;
        ASSERT_EQ(std::bit_cast<uint32_t>(std::fabs(marked[i])), std::bit_cast<uint32_t>(x[i]))
            << what << " i=" << i;
      }
      FVec y_again(n), x_again(n);
      t->dropout_unmark(y_again.data(), x_again.data(), marked.data(), p, n);
      expect_bitwise_equal(y_again, want, "unmarked y " + what);
      expect_bitwise_equal(x_again, x, "unmarked x " + what);
    }
  // p == 0: a copy; nothing is marked.
  for (const KernelTable* t : tables()) {
    const FVec x = random_uniform<float>(rng, 100, 0.0, 1.0);
    FVec y(100), marked = x;
    t->dropout_forward_marking(y.data(), marked.data(), 0.0f, RngKey{1, 2}, 100);
    expect_bitwise_equal(y, x, std::string(t->isa) + " p = 0 copies");
    expect_bitwise_equal(marked, x, std::string(t->isa) + " p = 0 marks nothing");
  }
}

// Element-wise kernels may run in place (output == input): same result as out of place.
TEST(InPlace, ElementwiseKernels) {
  std::mt19937 rng(17);
  const int64_t n = 1037;
  const FVec x = random_normal<float>(rng, n, 0, 2), d_y = random_normal<float>(rng, n);
  for (const KernelTable* t : tables()) {
    const std::string isa = t->isa;
    auto check = [&](const char* name, auto out_of_place, auto in_place) {
      FVec want(n);
      out_of_place(want.data());
      FVec got = in_place();
      expect_bitwise_equal(got, want, isa + " " + name);
    };
    check(
        "gelu_forward", [&](float* o) { t->gelu_forward(o, x.data(), n); },
        [&] {
          FVec b = x;
          t->gelu_forward(b.data(), b.data(), n);
          return b;
        });
    check(
        "gelu_backward d_x == d_y", [&](float* o) { t->gelu_backward(o, d_y.data(), x.data(), n); },
        [&] {
          FVec b = d_y;
          t->gelu_backward(b.data(), b.data(), x.data(), n);
          return b;
        });
    check(
        "gelu_backward d_x == x", [&](float* o) { t->gelu_backward(o, d_y.data(), x.data(), n); },
        [&] {
          FVec b = x;
          t->gelu_backward(b.data(), d_y.data(), b.data(), n);
          return b;
        });
    check(
        "dropout_backward_kept d_x == d_y",
        [&](float* o) { t->dropout_backward_kept(o, d_y.data(), x.data(), 0.3f, n); },
        [&] {
          FVec b = d_y;
          t->dropout_backward_kept(b.data(), b.data(), x.data(), 0.3f, n);
          return b;
        });
    check(
        "tanh_forward", [&](float* o) { t->tanh_forward(o, x.data(), n); },
        [&] {
          FVec b = x;
          t->tanh_forward(b.data(), b.data(), n);
          return b;
        });
    check(
        "tanh_backward d_x == d_y", [&](float* o) { t->tanh_backward(o, d_y.data(), x.data(), n); },
        [&] {
          FVec b = d_y;
          t->tanh_backward(b.data(), b.data(), x.data(), n);
          return b;
        });
    check(
        "tanh_backward d_x == y", [&](float* o) { t->tanh_backward(o, d_y.data(), x.data(), n); },
        [&] {
          FVec b = x;
          t->tanh_backward(b.data(), d_y.data(), b.data(), n);
          return b;
        });
    check(
        "scale",
        [&](float* o) {
          for (int64_t i = 0; i < n; ++i) o[i] = x[i] * 0.3f;
        },
        [&] {
          FVec b = x;
          t->scale(b.data(), 0.3f, n);
          return b;
        });
  }
}

// Parameter gradients accumulate onto what is there; activation gradients overwrite (d_x is
// poisoned with NaN first, so any read of it, or any element left unwritten, shows).
TEST(Accumulation, ParameterGradsAccumulateActivationGradsOverwrite) {
  std::mt19937 rng(14);
  const int64_t N = 6, D = 19;
  for (const KernelTable* t : tables()) {
    const std::string isa = t->isa;
    // LayerNorm.
    const FVec x = random_normal<float>(rng, N * D), d_y = random_normal<float>(rng, N * D);
    const FVec gamma = random_uniform<float>(rng, D, 0.5, 1.5), beta = random_normal<float>(rng, D);
    FVec y(N * D), mu(N), rs(N);
    t->layer_norm_forward(y.data(), mu.data(), rs.data(), x.data(), gamma.data(), beta.data(),
                          1e-5f, N, D);
    FVec dx0(N * D, 0.f), dg0(D, 0.f), db0(D, 0.f);
    t->layer_norm_backward(dx0.data(), dg0.data(), db0.data(), d_y.data(), x.data(), mu.data(),
                           rs.data(), gamma.data(), N, D);
    const FVec prior_g = random_normal<float>(rng, D), prior_b = random_normal<float>(rng, D);
    FVec dx1(N * D, kNaN), dg1 = prior_g, db1 = prior_b;
    t->layer_norm_backward(dx1.data(), dg1.data(), db1.data(), d_y.data(), x.data(), mu.data(),
                           rs.data(), gamma.data(), N, D);
    expect_bitwise_equal(dx1, dx0, isa + " layer_norm d_x overwritten");
    FVec want_g(D), want_b(D);
    for (int64_t j = 0; j < D; ++j) {
      want_g[j] = prior_g[j] + dg0[j];
      want_b[j] = prior_b[j] + db0[j];
    }
    // Equal up to the rounding of where the prior joins the sum: (N + 1) kEps sum|.|.
    auto tol = [&](const FVec& prior, const FVec& g0) {
      return [&](std::size_t j) {
        return static_cast<double>(N + 2) * kEps * (std::abs(prior[j]) + std::abs(g0[j]) + 1.0);
      };
    };
    expect_close(dg1, want_g, tol(prior_g, dg0), isa + " d_gamma accumulates");
    expect_close(db1, want_b, tol(prior_b, db0), isa + " d_beta accumulates");

    // Bias gradient.
    FVec dbias0(D, 0.f), dbias1 = prior_b;
    t->bias_backward(dbias0.data(), d_y.data(), N, D);
    t->bias_backward(dbias1.data(), d_y.data(), N, D);
    for (int64_t j = 0; j < D; ++j) want_b[j] = prior_b[j] + dbias0[j];
    expect_close(dbias1, want_b, tol(prior_b, dbias0), isa + " bias grad accumulates");

    // Embeddings: accumulate, exactly (each element gets prior + rows in order).
    const int32_t V = 4;
    const auto ids = random_ids(rng, N, V);
    const std::vector<int32_t> zeros(N, 0);
    FVec dw = random_normal<float>(rng, V * D), dp(D, 0.f), dt(D, 0.f);
    FVec want_w = dw;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < D; ++j) want_w[ids[i] * D + j] += d_y[i * D + j];
    t->embeddings_backward(dw.data(), dp.data(), dt.data(), d_y.data(), ids.data(), zeros.data(),
                           zeros.data(), N, D);
    expect_bitwise_equal(dw, want_w, isa + " embeddings accumulate");

    // Element-wise backwards overwrite.
    const int64_t n = N * D;
    auto check_overwrite = [&](const char* name, auto call) {
      FVec clean(n, 0.f), poisoned(n, kNaN);
      call(clean.data());
      call(poisoned.data());
      expect_bitwise_equal(poisoned, clean, isa + " " + name + " overwrites");
    };
    check_overwrite("gelu_backward",
                    [&](float* d) { t->gelu_backward(d, d_y.data(), x.data(), n); });
    check_overwrite("tanh_backward",
                    [&](float* d) { t->tanh_backward(d, d_y.data(), y.data(), n); });
    check_overwrite("softmax_backward",
                    [&](float* d) { t->softmax_backward(d, d_y.data(), y.data(), N, D); });
    check_overwrite("dropout_backward", [&](float* d) {
      t->dropout_backward(d, d_y.data(), 0.3f, RngKey{5, 6}, n);
    });
    check_overwrite("dropout_backward_kept",
                    [&](float* d) { t->dropout_backward_kept(d, d_y.data(), x.data(), 0.3f, n); });
    const auto labels = random_ids(rng, N, static_cast<int32_t>(D));
    check_overwrite("cross_entropy", [&](float* d) {
      t->cross_entropy_forward_backward(d, x.data(), labels.data(), 1.f, N, D, 0.1f);
    });
    check_overwrite("mse", [&](float* d) {
      // n predictions; only the first n written, all must be.
      t->mse_forward_backward(d, x.data(), d_y.data(), 1.f, n);
    });
  }
}

// The update pass's extras are the separate passes they replace: scaling the gradients (the clip),
// the update, rounding the new weights to bf16, zeroing the gradients; the same bits in every
// table.
TEST(Fused, AdamWPassEqualsScaleUpdateRoundAndZeroInTurn) {
  std::mt19937 rng(17);
  for (const KernelTable* t : tables())
    for (int64_t n : {1, 17, 1000, 70000}) {
      const FVec w0 = random_normal<float>(rng, n, 0, 0.05);
      const FVec m0 = random_normal<float>(rng, n, 0, 1e-3),
                 v0 = random_uniform<float>(rng, n, 0, 1e-6);
      const FVec g0 = random_normal<float>(rng, n, 0, 1e-3);
      AdamWStep step;
      step.lr = 2e-5f;
      step.weight_decay = 0.01f;
      step.bias_correction1 = 0.19f;
      step.bias_correction2 = 0.002f;
      const float coef = 0.4137f;
      FVec w1 = w0, m1 = m0, v1 = v0, g1 = g0;
      std::vector<bf16> b1(n), b2(n);
      t->scale(g1.data(), coef, n);
      t->adamw_update(w1.data(), m1.data(), v1.data(), g1.data(), nullptr, step, n);
      t->round_to_bf16(b1.data(), w1.data(), n);
      std::fill(g1.begin(), g1.end(), 0.0f);
      FVec w2 = w0, m2 = m0, v2 = v0, g2 = g0;
      step.grad_scale = coef;
      step.zero_grad = true;
      t->adamw_update(w2.data(), m2.data(), v2.data(), g2.data(), b2.data(), step, n);
      const std::string what = std::string(t->isa) + " n=" + std::to_string(n);
      expect_bitwise_equal(w2, w1, "w " + what);
      expect_bitwise_equal(m2, m1, "m " + what);
      expect_bitwise_equal(v2, v1, "v " + what);
      expect_bitwise_equal(g2, g1, "g " + what);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b2[i].bits, b1[i].bits) << what << " [" << i << "]";
    }
}

// adamw_update_sparse against adamw_update over a table, in every table, with and without
// weight decay, over three steps: rows touched at every step, at the first only (their moments
// keep decaying), from the third on, and never (one holding a -0 gradient element, one a -0
// weight). The same bits everywhere but at the -0 weight, which without weight decay stays -0 in
// the sparse update (it is left out) and comes back +0 from the whole update; with weight decay
// both decay it to +0.
TEST(AdamWSparse, TheWholeUpdateWhereTouchedTheDecayWhereNot) {
  std::mt19937 rng(23);
  for (const KernelTable* t : tables())
    for (const int64_t width : {5, 16, 40}) {
      const int64_t rows = 9, n = rows * width;
      const FVec w0 = random_normal<float>(rng, n, 0, 0.05);
      const FVec g0 = random_normal<float>(rng, n, 0, 1e-3);
      auto touched = [](int64_t r, int step) {
        return r == 2 || r == 7 || (r == 0 && step == 0) || (r == 5 && step >= 2);
      };
      for (const float weight_decay : {0.0f, 0.01f}) {
        const std::string what = std::string(t->isa) + " width " + std::to_string(width) + " wd " +
                                 std::to_string(weight_decay);
        FVec w1 = w0, w2 = w0, m1(n, 0.0f), m2(n, 0.0f), v1(n, 0.0f), v2(n, 0.0f);
        const int64_t minus_zero = 3 * width + 1;
        w1[minus_zero] = w2[minus_zero] = -0.0f;
        // The copies start as the rounding of the weights (Bf16Weights): an untouched row's stays.
        std::vector<bf16> b1(n), b2(n);
        for (int64_t i = 0; i < n; ++i) b1[i] = b2[i] = round_to_bf16(w1[i]);
        for (int step = 1; step <= 3; ++step) {
          AdamWStep s;
          s.lr = 1e-3f;
          s.weight_decay = weight_decay;
          s.bias_correction1 = 1 - std::pow(s.beta1, static_cast<float>(step));
          s.bias_correction2 = 1 - std::pow(s.beta2, static_cast<float>(step));
          s.grad_scale = step == 2 ? 0.5f : 1.0f;
          FVec g(n, 0.0f);
          for (int64_t i = 0; i < n; ++i)
            if (touched(i / width, step - 1)) g[i] = g0[i];
          g[4 * width] = -0.0f;
          FVec g1 = g, g2 = g;
          t->adamw_update(w1.data(), m1.data(), v1.data(), g1.data(), b1.data(), s, n);
          t->adamw_update_sparse(w2.data(), m2.data(), v2.data(), g2.data(), b2.data(), s, n);
          expect_bitwise_equal(m2, m1, "m " + what);
          expect_bitwise_equal(v2, v1, "v " + what);
          expect_bitwise_equal(g2, g1, "g " + what);
          for (int64_t i = 0; i < n; ++i) {
            if (i == minus_zero) continue;
            ASSERT_EQ(std::bit_cast<uint32_t>(w2[i]), std::bit_cast<uint32_t>(w1[i]))
                << what << " step " << step << " [" << i << "]";
            ASSERT_EQ(b2[i].bits, b1[i].bits) << what << " [" << i << "]";
          }
          EXPECT_EQ(std::signbit(w2[minus_zero]), weight_decay == 0.0f) << what;
          EXPECT_FALSE(std::signbit(w1[minus_zero])) << what;
        }
      }
    }
}

// torch.optim.AdamW, written out in double for three steps with the bias corrections from the
// step count; the float kernels must follow within float rounding.
TEST(AdamW, ThreeStepsMatchDoubleComputation) {
  std::mt19937 rng(15);
  const int64_t n = 37;
  // The hyper-parameters as torch holds them: Python doubles, 1 - beta formed in double.
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
  const FVec w0 = random_normal<float>(rng, n, 0, 0.5);
  std::vector<FVec> grads;
  for (int t = 0; t < 3; ++t) grads.push_back(random_normal<float>(rng, n, 0, 0.1));
  std::vector<double> w(w0.begin(), w0.end()), m(n, 0.0), v(n, 0.0);
  for (int t = 1; t <= 3; ++t) {
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    for (int64_t i = 0; i < n; ++i) {
      const double g = grads[t - 1][i];
      w[i] *= 1 - lr * wd;
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      w[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + eps);
    }
  }
  for (const KernelTable* t : tables()) {
    FVec wf = w0, mf(n, 0.f), vf(n, 0.f);
    for (int s = 1; s <= 3; ++s) {
      AdamWStep step;
      step.lr = static_cast<float>(lr);
      step.weight_decay = static_cast<float>(wd);
      step.beta1 = static_cast<float>(b1);
      step.beta2 = static_cast<float>(b2);
      step.one_minus_beta1 = static_cast<float>(1 - b1);
      step.one_minus_beta2 = static_cast<float>(1 - b2);
      step.eps = static_cast<float>(eps);
      step.bias_correction1 = static_cast<float>(1 - std::pow(b1, s));
      step.bias_correction2 = static_cast<float>(1 - std::pow(b2, s));
      FVec g = grads[s - 1];
      t->adamw_update(wf.data(), mf.data(), vf.data(), g.data(), nullptr, step, n);
    }
    // w ~ 0.5 moves by ~1e-3 a step: a few roundings of w per step, each kEps |w|, plus the
    // update's relative error (~1e-6 from float beta/eps/bias corrections) times 3e-3.
    expect_close(
        wf, w, [&](std::size_t i) { return 8 * kEps * std::abs(w[i]) + 1e-8; },
        std::string(t->isa) + " w");
    // m, v: each step a few float roundings (and 1 - beta rounded once): ~1e-6 relative.
    expect_close(
        mf, m, [&](std::size_t i) { return 2e-6 * std::abs(m[i]) + 1e-12; },
        std::string(t->isa) + " m");
    expect_close(
        vf, v, [&](std::size_t i) { return 2e-6 * std::abs(v[i]) + 1e-15; },
        std::string(t->isa) + " v");
  }
}

// The AVX-512 reductions must not depend on the number of threads, and must work inside another
// parallel region (where the inner team is a single thread).
TEST(Threads, SameResultsForAnyThreadCountAndNested) {
  const KernelTable* t = avx512_kernels();
  if (t == nullptr) GTEST_SKIP() << "CPU lacks AVX-512";
  std::mt19937 rng(16);
  const int64_t N = 300, D = 384;  // N * D above the parallel threshold
  const FVec x = random_normal<float>(rng, N * D), d_y = random_normal<float>(rng, N * D);
  const FVec gamma = random_uniform<float>(rng, D, 0.5, 1.5), beta = random_normal<float>(rng, D);
  FVec y(N * D), mu(N), rs(N);
  t->layer_norm_forward(y.data(), mu.data(), rs.data(), x.data(), gamma.data(), beta.data(), 1e-5f,
                        N, D);
  struct Result {
    FVec dx, dg, db, dbias;
    double ss;
  };
  auto run = [&] {
    Result r{FVec(N * D), FVec(D, 0.f), FVec(D, 0.f), FVec(D, 0.f), 0};
    t->layer_norm_backward(r.dx.data(), r.dg.data(), r.db.data(), d_y.data(), x.data(), mu.data(),
                           rs.data(), gamma.data(), N, D);
    t->bias_backward(r.dbias.data(), d_y.data(), N, D);
    r.ss = t->sum_squares(x.data(), N * D);
    return r;
  };
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Result one = run();
  omp_set_num_threads(3);  // more threads than this machine's cores is fine
  const Result three = run();
  omp_set_num_threads(saved);
  std::vector<Result> nested(2);
#pragma omp parallel for num_threads(2)
  for (int k = 0; k < 2; ++k) nested[k] = run();
  for (const Result* r : std::vector<const Result*>{&three, &nested[0], &nested[1]}) {
    expect_bitwise_equal(r->dx, one.dx, "d_x");
    expect_bitwise_equal(r->dg, one.dg, "d_gamma");
    expect_bitwise_equal(r->db, one.db, "d_beta");
    expect_bitwise_equal(r->dbias, one.dbias, "d_bias");
    EXPECT_EQ(r->ss, one.ss);
  }
}

TEST(Dispatch, ForceIsaValues) {
  EXPECT_STREQ(select_kernel_table(nullptr, true).isa, "avx512");
  EXPECT_STREQ(select_kernel_table(nullptr, false).isa, "reference");
  EXPECT_STREQ(select_kernel_table("", true).isa, "avx512");  // empty = unset
  EXPECT_STREQ(select_kernel_table("reference", true).isa, "reference");
  EXPECT_STREQ(select_kernel_table("reference", false).isa, "reference");
  EXPECT_STREQ(select_kernel_table("avx512", true).isa, "avx512");
  EXPECT_THROW(select_kernel_table("avx512", false), Error);
  EXPECT_THROW(select_kernel_table("avx2", true), Error);
  EXPECT_THROW(select_kernel_table("Reference", true), Error);  // exact spelling only
  try {
    select_kernel_table("sse", true);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CPUFT_FORCE_ISA"), std::string::npos) << e.what();
  }
}

TEST(Dispatch, Tables) {
  EXPECT_STREQ(reference_kernels().isa, "reference");
  EXPECT_EQ(avx512_kernels() != nullptr, cpu_has_avx512());
  if (avx512_kernels() != nullptr) {
    EXPECT_STREQ(avx512_kernels()->isa, "avx512");
  }
  // kernels() follows the environment of this process.
  const char* force = std::getenv("CPUFT_FORCE_ISA");
  const std::string want = force != nullptr && std::string(force) == "reference"
                               ? "reference"
                               : (cpu_has_avx512() ? "avx512" : "reference");
  EXPECT_EQ(std::string(kernels().isa), want);
  EXPECT_EQ(&kernels(), &kernels());  // chosen once
}

}  // namespace
}  // namespace cpuft
