// AVX-512 kernels against the float reference kernels on random shapes with tails, and the vector
// math against double precision. Tolerances are in units of float epsilon (kEps = 2^-23) and
// argued next to each check.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
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

constexpr int64_t kDims[] = {1, 15, 16, 17, 31, 384, 768, 1000};
constexpr int64_t kRows[] = {1, 3, 37};

class Avx512VsReference : public ::testing::Test {
 protected:
  void SetUp() override {
    if (avx512_kernels() == nullptr) GTEST_SKIP() << "CPU lacks AVX-512";
  }
  const KernelTable& ref = reference_kernels();
  const KernelTable& simd() { return *avx512_kernels(); }
  std::mt19937 rng{42};
};

std::string shape(int64_t N, int64_t D) {
  return "N=" + std::to_string(N) + " D=" + std::to_string(D);
}

TEST_F(Avx512VsReference, Embeddings) {
  // Same additions in the same order (forward: (word + pos) + type; backward: rows in order per
  // element), so the results are bit-identical.
  for (int64_t D : kDims)
    for (int64_t N : kRows) {
      const int32_t V = 7, P = 5, K = 2;
      const FVec word = random_normal<float>(rng, V * D), pos = random_normal<float>(rng, P * D);
      const FVec type = random_normal<float>(rng, K * D), d_out = random_normal<float>(rng, N * D);
      const auto ids = random_ids(rng, N, V), pos_ids = random_ids(rng, N, P);
      const auto type_ids = random_ids(rng, N, K);
      FVec out_r(N * D), out_s(N * D);
      ref.embeddings_forward(out_r.data(), word.data(), pos.data(), type.data(), ids.data(),
                             pos_ids.data(), type_ids.data(), N, D);
      simd().embeddings_forward(out_s.data(), word.data(), pos.data(), type.data(), ids.data(),
                                pos_ids.data(), type_ids.data(), N, D);
      expect_bitwise_equal(out_s, out_r, "forward " + shape(N, D));
      FVec dw_r = random_normal<float>(rng, V * D), dp_r = random_normal<float>(rng, P * D);
      FVec dt_r = random_normal<float>(rng, K * D);
      FVec dw_s = dw_r, dp_s = dp_r, dt_s = dt_r;
      ref.embeddings_backward(dw_r.data(), dp_r.data(), dt_r.data(), d_out.data(), ids.data(),
                              pos_ids.data(), type_ids.data(), N, D);
      simd().embeddings_backward(dw_s.data(), dp_s.data(), dt_s.data(), d_out.data(), ids.data(),
                                 pos_ids.data(), type_ids.data(), N, D);
      expect_bitwise_equal(dw_s, dw_r, "d_word " + shape(N, D));
      expect_bitwise_equal(dp_s, dp_r, "d_pos " + shape(N, D));
      expect_bitwise_equal(dt_s, dt_r, "d_type " + shape(N, D));
    }
}

// Families without token types (DistilBERT) pass no type table: word + pos only, no d_type.
TEST_F(Avx512VsReference, EmbeddingsWithoutTokenTypes) {
  for (int64_t D : kDims)
    for (int64_t N : kRows) {
      const int32_t V = 7, P = 5;
      const FVec word = random_normal<float>(rng, V * D), pos = random_normal<float>(rng, P * D);
      const FVec d_out = random_normal<float>(rng, N * D);
      const auto ids = random_ids(rng, N, V), pos_ids = random_ids(rng, N, P);
      FVec out_r(N * D), out_s(N * D), sum(N * D);
      ref.embeddings_forward(out_r.data(), word.data(), pos.data(), nullptr, ids.data(),
                             pos_ids.data(), nullptr, N, D);
      simd().embeddings_forward(out_s.data(), word.data(), pos.data(), nullptr, ids.data(),
                                pos_ids.data(), nullptr, N, D);
      for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < D; ++j)
          sum[i * D + j] = word[ids[i] * D + j] + pos[pos_ids[i] * D + j];
      expect_bitwise_equal(out_r, sum, "reference forward " + shape(N, D));
      expect_bitwise_equal(out_s, out_r, "forward " + shape(N, D));
      FVec dw_r = random_normal<float>(rng, V * D), dp_r = random_normal<float>(rng, P * D);
      FVec dw_s = dw_r, dp_s = dp_r;
      ref.embeddings_backward(dw_r.data(), dp_r.data(), nullptr, d_out.data(), ids.data(),
                              pos_ids.data(), nullptr, N, D);
      simd().embeddings_backward(dw_s.data(), dp_s.data(), nullptr, d_out.data(), ids.data(),
                                 pos_ids.data(), nullptr, N, D);
      expect_bitwise_equal(dw_s, dw_r, "d_word " + shape(N, D));
      expect_bitwise_equal(dp_s, dp_r, "d_pos " + shape(N, D));
    }
}

TEST_F(Avx512VsReference, EmbeddingsBackwardLarge) {
  // Big enough for several threads, with heavily repeated ids: still bit-identical (each element
  // sums its rows in order whatever the thread that owns its columns).
  const int64_t N = 512, D = 768;
  const int32_t V = 3;
  const FVec d_out = random_normal<float>(rng, N * D);
  const auto ids = random_ids(rng, N, V), pos_ids = random_ids(rng, N, 64);
  const std::vector<int32_t> type_ids(N, 0);
  FVec dw_r(V * D, 0.f), dp_r(64 * D, 0.f), dt_r(D, 0.f);
  FVec dw_s = dw_r, dp_s = dp_r, dt_s = dt_r;
  ref.embeddings_backward(dw_r.data(), dp_r.data(), dt_r.data(), d_out.data(), ids.data(),
                          pos_ids.data(), type_ids.data(), N, D);
  simd().embeddings_backward(dw_s.data(), dp_s.data(), dt_s.data(), d_out.data(), ids.data(),
                             pos_ids.data(), type_ids.data(), N, D);
  expect_bitwise_equal(dw_s, dw_r, "d_word");
  expect_bitwise_equal(dp_s, dp_r, "d_pos");
  expect_bitwise_equal(dt_s, dt_r, "d_type");
}

TEST_F(Avx512VsReference, LayerNorm) {
  for (int64_t D : kDims)
    for (int64_t N : kRows) {
      // Rows with different spreads, including one (sd 1e-3, variance 1e-6) where eps = 1e-5
      // dominates the variance.
      FVec x(N * D);
      for (int64_t i = 0; i < N; ++i) {
        const double sd = i % 3 == 0 ? 3.0 : (i % 3 == 1 ? 1e-3 : 1.0);
        const FVec row = random_normal<float>(rng, D, 1.0, sd);
        std::copy(row.begin(), row.end(), x.begin() + i * D);
      }
      const FVec gamma = random_uniform<float>(rng, D, 0.5, 1.5);
      const FVec beta = random_uniform<float>(rng, D, -0.5, 0.5);
      const float eps = 1e-5f;
      FVec y_r(N * D), y_s(N * D), mu_r(N), mu_s(N), rs_r(N), rs_s(N);
      ref.layer_norm_forward(y_r.data(), mu_r.data(), rs_r.data(), x.data(), gamma.data(),
                             beta.data(), eps, N, D);
      simd().layer_norm_forward(y_s.data(), mu_s.data(), rs_s.data(), x.data(), gamma.data(),
                                beta.data(), eps, N, D);
      // Mean and variance are sums of D terms taken in another order (16 lanes + tree vs serial):
      // rounding errors add like a random walk, ~kEps * sqrt(D) relative to the sum of |terms|.
      // So mean differs by ~kEps sqrt(D) mean|x|, rstd by ~kEps sqrt(D) relative, and y, which
      // is O(|gamma| (1 + |xhat|) + |beta|), by that relative amount plus a few roundings.
      const double c = 8 * kEps * (1 + std::sqrt(static_cast<double>(D)));
      expect_close(
          mu_s, mu_r, [&](std::size_t i) { return c * (std::abs(mu_r[i]) + 1e-3); },
          "mean " + shape(N, D));
      expect_close(
          rs_s, rs_r, [&](std::size_t i) { return c * rs_r[i]; }, "rstd " + shape(N, D));
      // Centring x - mean also carries the mean's error, kEps sqrt(D) max|x|, scaled by rstd:
      // large for the row whose spread is 1e-3 around 1 (an ill-conditioned row, either way).
      expect_close(
          y_s, y_r,
          [&](std::size_t k) {
            const std::size_t i = k / D;
            double xmax = 0;
            for (int64_t j = 0; j < D; ++j) xmax = std::max(xmax, std::abs(double{x[i * D + j]}));
            return c * (2 + std::abs(y_r[k]) + xmax * rs_r[i] * gamma[k % D]);
          },
          "y " + shape(N, D));

      // Backward on the same rows.
      const FVec d_y = random_normal<float>(rng, N * D);
      FVec dx_r(N * D), dx_s(N * D);
      FVec dg_r = random_normal<float>(rng, D), db_r = random_normal<float>(rng, D);
      FVec dg_s = dg_r, db_s = db_r;
      const FVec dg_prior = dg_r, db_prior = db_r;
      ref.layer_norm_backward(dx_r.data(), dg_r.data(), db_r.data(), d_y.data(), x.data(),
                              mu_r.data(), rs_r.data(), gamma.data(), N, D);
      simd().layer_norm_backward(dx_s.data(), dg_s.data(), db_s.data(), d_y.data(), x.data(),
                                 mu_r.data(), rs_r.data(), gamma.data(), N, D);
      // d_x = rstd (g - mean(g) - xhat mean(g xhat)): the two means are D-term sums (random
      // walk again); per row the scale of the terms is rstd * max|g| * (2 + |xhat|).
      expect_close(
          dx_s, dx_r,
          [&](std::size_t k) {
            const std::size_t i = k / D;
            double gmax = 0;
            for (int64_t j = 0; j < D; ++j)
              gmax = std::max(gmax, std::abs(double{d_y[i * D + j]} * gamma[j]));
            const double xhat = (x[k] - mu_r[i]) * double{rs_r[i]};
            return c * rs_r[i] * gmax * (2 + std::abs(xhat));
          },
          "d_x " + shape(N, D));
      // d_gamma, d_beta: N-row sums (fixed blocks vs serial) onto a prior value. Worst case of
      // recursive summation (Higham): N kEps times the sum of |terms|, plus one rounding.
      auto param_tol = [&](const FVec& prior, bool with_xhat) {
        return [&, with_xhat](std::size_t j) {
          double sum_abs = std::abs(prior[j]);
          for (int64_t i = 0; i < N; ++i) {
            const double xhat = with_xhat ? (x[i * D + j] - mu_r[i]) * double{rs_r[i]} : 1.0;
            sum_abs += std::abs(d_y[i * D + j] * xhat);
          }
          return static_cast<double>(N + 2) * kEps * sum_abs;
        };
      };
      expect_close(dg_s, dg_r, param_tol(dg_prior, true), "d_gamma " + shape(N, D));
      expect_close(db_s, db_r, param_tol(db_prior, false), "d_beta " + shape(N, D));
    }
}

TEST_F(Avx512VsReference, Gelu) {
  for (int64_t n : {1, 15, 16, 17, 31, 1000, 40000}) {  // 40000: several threads
    FVec x = random_normal<float>(rng, n, 0, 3);
    const FVec d_y = random_normal<float>(rng, n);
    FVec y_r(n), y_s(n), dx_r(n), dx_s(n);
    ref.gelu_forward(y_r.data(), x.data(), n);
    simd().gelu_forward(y_s.data(), x.data(), n);
    // The reference evaluates HF's formula in float: 1 + erf(.) is rounded to an absolute kEps/2
    // (and erff has ~1 ulp), so it is off by up to ~kEps |x| / 2 in absolute terms (large in the
    // negative tail, where it cancels); the AVX-512 version is within a few ulp of the exact value
    // (see the Accuracy tests). Tolerance: 4 kEps relative + kEps |x| absolute.
    expect_close(
        y_s, y_r,
        [&](std::size_t i) { return 4 * kEps * std::abs(y_r[i]) + kEps * std::abs(x[i]); },
        "gelu " + std::to_string(n));
    ref.gelu_backward(dx_r.data(), d_y.data(), x.data(), n);
    simd().gelu_backward(dx_s.data(), d_y.data(), x.data(), n);
    // d_x = d_y (Phi + x phi): same reasoning, on the sum of the absolute terms (the two terms
    // cancel near x = -0.75) plus the reference's kEps/2 absolute error in Phi.
    expect_close(
        dx_s, dx_r,
        [&](std::size_t i) {
          const double xd = x[i];
          const double phi = std::exp(-0.5 * xd * xd) / std::sqrt(2 * M_PI);
          const double cdf = 0.5 * std::erfc(-xd / std::sqrt(2.0));
          return std::abs(d_y[i]) * (8 * kEps * (cdf + std::abs(xd) * phi) + kEps);
        },
        "gelu backward " + std::to_string(n));
  }
}

TEST_F(Avx512VsReference, Tanh) {
  for (int64_t n : {1, 15, 16, 17, 31, 1000, 40000}) {
    const FVec x = random_normal<float>(rng, n, 0, 2);
    const FVec d_y = random_normal<float>(rng, n);
    FVec y_r(n), y_s(n), dx_r(n), dx_s(n);
    ref.tanh_forward(y_r.data(), x.data(), n);
    simd().tanh_forward(y_s.data(), x.data(), n);
    // tanhf is within 1 ulp, the vector tanh within 3 (Accuracy test): 4 ulp ~ 4 kEps relative.
    expect_close(
        y_s, y_r, [&](std::size_t i) { return 4 * kEps * std::abs(y_r[i]) + 1e-30; },
        "tanh " + std::to_string(n));
    ref.tanh_backward(dx_r.data(), d_y.data(), y_r.data(), n);
    simd().tanh_backward(dx_s.data(), d_y.data(), y_r.data(), n);
    expect_bitwise_equal(dx_s, dx_r, "tanh backward " + std::to_string(n));  // same 3 operations
  }
}

TEST_F(Avx512VsReference, Softmax) {
  for (int64_t C : kDims)
    for (int64_t N : kRows) {
      FVec x = random_normal<float>(rng, N * C, 0, 3);
      // Masked keys: HF adds a large negative number (finfo.min) to them.
      for (int64_t k = 0; k < N * C; k += 5) x[k] = -3.4028235e38f;
      x[0] = 0.5f;  // at least one unmasked key per... first row; others may be all-masked.
      FVec y_r(N * C), y_s(N * C);
      ref.softmax_forward(y_r.data(), x.data(), N, C);
      simd().softmax_forward(y_s.data(), x.data(), N, C);
      // exp: <= 1 ulp (expf) vs <= 2 ulp (vector); the row sum is a C-term sum of positive terms
      // in another order (random walk, kEps sqrt(C) relative); one rounding for the product.
      const double c = kEps * (8 + 4 * std::sqrt(static_cast<double>(C)));
      expect_close(
          y_s, y_r, [&](std::size_t i) { return c * y_r[i] + 1e-37; }, "softmax " + shape(N, C));
      // In place gives the same as out of place.
      FVec in_place = x;
      simd().softmax_forward(in_place.data(), in_place.data(), N, C);
      expect_bitwise_equal(in_place, y_s, "softmax in place " + shape(N, C));

      const FVec d_y = random_normal<float>(rng, N * C);
      FVec dx_r(N * C), dx_s(N * C);
      ref.softmax_backward(dx_r.data(), d_y.data(), y_r.data(), N, C);
      simd().softmax_backward(dx_s.data(), d_y.data(), y_r.data(), N, C);
      // d_x = y (d_y - dot): dot is a C-term sum; error ~ kEps sqrt(C) sum|d_y y|.
      expect_close(
          dx_s, dx_r,
          [&](std::size_t k) {
            const std::size_t i = k / C;
            double s = 0;
            for (int64_t j = 0; j < C; ++j) s += std::abs(d_y[i * C + j] * y_r[i * C + j]);
            return c * y_r[k] * (std::abs(d_y[k]) + s) + 1e-37;
          },
          "softmax backward " + shape(N, C));
    }
}

TEST_F(Avx512VsReference, Dropout) {
  // The mask must be bit-identical: same Philox words, same exact comparison.
  const RngKey keys[] = {{0, 0}, {12345, dropout_stream(7, 3, 2)}, {~0ull, ~0ull}};
  for (const RngKey key : keys)
    for (float p : {0.1f, 0.5f, 0.9f})
      for (int64_t n : {1, 15, 63, 64, 65, 1000, 100003}) {
        const FVec x = random_normal<float>(rng, n);
        FVec y_r(n), y_s(n), dx_r(n), dx_s(n);
        ref.dropout_forward(y_r.data(), x.data(), p, key, n);
        simd().dropout_forward(y_s.data(), x.data(), p, key, n);
        const std::string what = "p=" + std::to_string(p) + " n=" + std::to_string(n);
        expect_bitwise_equal(y_s, y_r, "dropout " + what);
        ref.dropout_backward(dx_r.data(), x.data(), p, key, n);
        simd().dropout_backward(dx_s.data(), x.data(), p, key, n);
        expect_bitwise_equal(dx_s, dx_r, "dropout backward " + what);
        // The mask read off kept values that hold zeros of both signs, NaN, infinities and
        // denormals (nonzero here: this test does not set denormals-are-zero).
        FVec kept = y_r;
        for (int64_t i = 0; i < n; i += 5) {
          constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
          constexpr float kInf = std::numeric_limits<float>::infinity();
          const float specials[] = {0.0f, -0.0f, kNaN, -kNaN, kInf, 1e-40f, -1e-40f};
          kept[i] = specials[(i / 5) % 7];
        }
        ref.dropout_backward_kept(dx_r.data(), x.data(), kept.data(), p, n);
        simd().dropout_backward_kept(dx_s.data(), x.data(), kept.data(), p, n);
        expect_bitwise_equal(dx_s, dx_r, "dropout backward from kept values " + what);
      }
  // The marking forward and the unmarking, on inputs of every sign and class: the same bits.
  for (float p : {0.0f, 0.1f, 0.5f})
    for (int64_t n : {1, 15, 64, 65, 1000}) {
      FVec x = random_normal<float>(rng, n);
      for (int64_t i = 0; i < n; i += 3) {
        constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
        constexpr float kInf = std::numeric_limits<float>::infinity();
        const float specials[] = {0.0f, -0.0f, kNaN, -kNaN, kInf, -kInf, 1e-40f, -1e-40f};
        x[i] = specials[(i / 3) % 8];
      }
      const RngKey key{99, dropout_stream(4, 5, 6)};
      const std::string what = "p=" + std::to_string(p) + " n=" + std::to_string(n);
      FVec y_r(n), y_s(n), m_r = x, m_s = x;
      ref.dropout_forward_marking(y_r.data(), m_r.data(), p, key, n);
      simd().dropout_forward_marking(y_s.data(), m_s.data(), p, key, n);
      expect_bitwise_equal(y_s, y_r, "dropout marking y " + what);
      expect_bitwise_equal(m_s, m_r, "dropout marking x " + what);
      FVec u_r(n), u_s(n), a_r(n), a_s(n);
      ref.dropout_unmark(u_r.data(), a_r.data(), m_r.data(), p, n);
      simd().dropout_unmark(u_s.data(), a_s.data(), m_r.data(), p, n);
      expect_bitwise_equal(u_s, u_r, "dropout unmark y " + what);
      expect_bitwise_equal(a_s, a_r, "dropout unmark x " + what);
    }
  // p == 0 copies d_y whatever kept holds.
  const FVec d_y = random_normal<float>(rng, 100), zeros(100, 0.0f);
  for (const KernelTable* t : {&ref, &simd()}) {
    FVec d_x(100);
    t->dropout_backward_kept(d_x.data(), d_y.data(), zeros.data(), 0.0f, 100);
    expect_bitwise_equal(d_x, d_y, std::string(t->isa) + " dropout backward from kept, p = 0");
  }
}

TEST_F(Avx512VsReference, BiasBackward) {
  for (int64_t C : kDims)
    for (int64_t N : {int64_t{1}, int64_t{3}, int64_t{37}, int64_t{300}}) {
      const FVec d_y = random_normal<float>(rng, N * C);
      FVec db_r = random_normal<float>(rng, C);
      FVec db_s = db_r;
      const FVec prior = db_r;
      ref.bias_backward(db_r.data(), d_y.data(), N, C);
      simd().bias_backward(db_s.data(), d_y.data(), N, C);
      // N-term sums in another order: Higham's worst case, (N + 1) kEps sum|terms|, each side.
      expect_close(
          db_s, db_r,
          [&](std::size_t j) {
            double s = std::abs(prior[j]);
            for (int64_t i = 0; i < N; ++i) s += std::abs(d_y[i * C + j]);
            return 2 * static_cast<double>(N + 1) * kEps * s;
          },
          "bias_backward " + shape(N, C));
    }
}

TEST_F(Avx512VsReference, CrossEntropy) {
  for (float eps : {0.0f, 0.1f})
    for (int64_t K : {1, 2, 3, 15, 16, 17, 1000})
      for (int64_t N : kRows) {
        const FVec logits = random_normal<float>(rng, N * K, 0, 3);
        const auto labels = random_ids(rng, N, static_cast<int32_t>(K));
        FVec d_r(N * K), d_s(N * K);
        const float loss_scale = 3.0f;
        const float loss_r = ref.cross_entropy_forward_backward(
            d_r.data(), logits.data(), labels.data(), loss_scale, N, K, eps);
        const float loss_s = simd().cross_entropy_forward_backward(
            d_s.data(), logits.data(), labels.data(), loss_scale, N, K, eps);
        // Loss per row: max + log(sum) - z[label], sum of K exps (kEps sqrt(K) relative), log
        // (1 ulp): absolute error ~kEps sqrt(K) + ulp(|terms|) with |terms| up to ~10. The
        // smoothing term is a mean of K such differences, each off by the same logsumexp error.
        const double c = kEps * (8 + 4 * std::sqrt(static_cast<double>(K)));
        const std::string what = shape(N, K) + " eps " + std::to_string(eps);
        EXPECT_NEAR(loss_s, loss_r, c * 16) << what;
        // d = (p - target) * scale / N with p relative error as softmax's.
        const double g = loss_scale / static_cast<double>(N);
        expect_close(
            d_s, d_r, [&](std::size_t k) { return g * (c * std::abs(d_r[k] / g) + 2 * kEps); },
            "d_logits " + what);
      }
}

TEST_F(Avx512VsReference, Mse) {
  for (int64_t N : {1, 3, 15, 16, 17, 37, 1000}) {
    const FVec pred = random_normal<float>(rng, N), target = random_normal<float>(rng, N);
    FVec d_r(N), d_s(N);
    const float loss_r = ref.mse_forward_backward(d_r.data(), pred.data(), target.data(), 2.f, N);
    const float loss_s =
        simd().mse_forward_backward(d_s.data(), pred.data(), target.data(), 2.f, N);
    // The loss is summed in double both ways: only the final rounding to float can differ.
    EXPECT_NEAR(loss_s, loss_r, 2 * kEps * std::abs(loss_r)) << N;
    expect_bitwise_equal(d_s, d_r, "d_pred " + std::to_string(N));  // same two operations
  }
}

TEST_F(Avx512VsReference, AdamW) {
  // Same float operations in the same order (no FMA contraction): bit-identical, with and without
  // a gradient scale, the zeroing of the gradient and the bf16 copy of the new weights.
  AdamWStep step;
  step.lr = 2e-5f;
  step.weight_decay = 0.01f;
  for (int64_t n : {1, 15, 16, 17, 1000, 40000}) {
    FVec w_r = random_normal<float>(rng, n, 0, 0.05), m_r = random_normal<float>(rng, n, 0, 1e-3);
    FVec v_r = random_uniform<float>(rng, n, 0, 1e-6);
    const FVec g = random_normal<float>(rng, n, 0, 1e-3);
    FVec w_s = w_r, m_s = m_r, v_s = v_r;
    // 16 sentinels past the end: the masked tail store of the copy must not touch them.
    std::vector<bf16> b_r(n), b_s(n + 16, bf16{0xDEAD});
    for (int t = 1; t <= 3; ++t) {
      step.bias_correction1 = 1 - std::pow(step.beta1, static_cast<float>(t));
      step.bias_correction2 = 1 - std::pow(step.beta2, static_cast<float>(t));
      step.grad_scale = t == 2 ? 0.37f : 1.0f;
      step.zero_grad = t == 3;
      FVec g_r = g, g_s = g;
      ref.adamw_update(w_r.data(), m_r.data(), v_r.data(), g_r.data(),
                       t == 3 ? b_r.data() : nullptr, step, n);
      simd().adamw_update(w_s.data(), m_s.data(), v_s.data(), g_s.data(),
                          t == 3 ? b_s.data() : nullptr, step, n);
      expect_bitwise_equal(g_s, g_r, "g " + std::to_string(n));
      if (t == 3) expect_bitwise_equal(g_s, FVec(n, 0.0f), "zeroed g " + std::to_string(n));
    }
    expect_bitwise_equal(w_s, w_r, "w " + std::to_string(n));
    expect_bitwise_equal(m_s, m_r, "m " + std::to_string(n));
    expect_bitwise_equal(v_s, v_r, "v " + std::to_string(n));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b_s[i].bits, b_r[i].bits) << n << " [" << i << "]";
    for (int64_t i = n; i < n + 16; ++i) EXPECT_EQ(b_s[i].bits, 0xDEAD) << n;
  }
}

// adamw_update_sparse: bit-identical to the reference on tables of touched and untouched rows,
// touched rows with untouched elements (vectors of both kinds of lanes), elements whose g is 0 but
// whose m is -0 or whose v is -0 or nonzero (touched), and with the gradient zeroed at the last
// step.
TEST_F(Avx512VsReference, AdamWSparse) {
  for (const int64_t width : {1, 15, 16, 17, 384}) {
    const int64_t rows = 40, n = rows * width;
    FVec w_r = random_normal<float>(rng, n, 0, 0.05), w_s = w_r;
    FVec m_r(n, 0.0f), v_r(n, 0.0f), m_s(n, 0.0f), v_s(n, 0.0f);
    // Moments that make an element touched although its g is 0: m = -0, v = -0, v alone nonzero.
    for (int64_t i = 2; i < n; i += 11) {
      (i % 3 == 0 ? m_r : v_r)[static_cast<size_t>(i)] = i % 2 == 0 ? -0.0f : 1e-7f;
      m_s[static_cast<size_t>(i)] = m_r[static_cast<size_t>(i)];
      v_s[static_cast<size_t>(i)] = v_r[static_cast<size_t>(i)];
    }
    std::vector<bf16> b_r(n), b_s(n);
    for (int t = 1; t <= 3; ++t) {
      AdamWStep step;
      step.lr = 2e-5f;
      step.weight_decay = t == 2 ? 0.0f : 0.01f;
      step.zero_grad = t == 3;
      step.bias_correction1 = 1 - std::pow(step.beta1, static_cast<float>(t));
      step.bias_correction2 = 1 - std::pow(step.beta2, static_cast<float>(t));
      FVec g = random_normal<float>(rng, n, 0, 1e-3);
      for (int64_t r = 0; r < rows; ++r)  // every third row touched at this step
        if ((r + t) % 3 != 0) std::fill(g.begin() + r * width, g.begin() + (r + 1) * width, 0.0f);
      for (int64_t i = 0; i < n; i += 7) g[i] = 0.0f;  // and never some elements of the others
      FVec g_r = g, g_s = g;
      ref.adamw_update_sparse(w_r.data(), m_r.data(), v_r.data(), g_r.data(), b_r.data(), step, n);
      simd().adamw_update_sparse(w_s.data(), m_s.data(), v_s.data(), g_s.data(), b_s.data(), step,
                                 n);
      expect_bitwise_equal(g_s, g_r, "g " + std::to_string(width));
    }
    expect_bitwise_equal(w_s, w_r, "w " + std::to_string(width));
    expect_bitwise_equal(m_s, m_r, "m " + std::to_string(width));
    expect_bitwise_equal(v_s, v_r, "v " + std::to_string(width));
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(b_s[i].bits, b_r[i].bits) << width << " [" << i << "]";
  }
}

TEST_F(Avx512VsReference, SumSquaresAndScale) {
  for (int64_t n : {0, 1, 15, 16, 17, 1000, 200003}) {
    FVec x = random_normal<float>(rng, n);
    // Both accumulate exact float squares in double: the sums differ by ~n * 2^-53 relative.
    const double r = ref.sum_squares(x.data(), n), s = simd().sum_squares(x.data(), n);
    EXPECT_NEAR(s, r, 1e-12 * r) << n;
    FVec x_r = x, x_s = x;
    ref.scale(x_r.data(), 0.37f, n);
    simd().scale(x_s.data(), 0.37f, n);
    expect_bitwise_equal(x_s, x_r, "scale " + std::to_string(n));
  }
}

// Bit for bit: both round in integer arithmetic; random bit patterns include subnormals,
// infinities, NaNs and values that overflow to infinity.
TEST_F(Avx512VsReference, RoundToBf16) {
  for (int64_t n : {0, 1, 15, 16, 17, 1000, 200003}) {
    FVec x(static_cast<size_t>(n));
    for (float& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    // 32 sentinels past the end: the masked tail store must not touch them.
    std::vector<bf16> y_r(x.size()), y_s(x.size() + 32, bf16{0xDEAD});
    ref.round_to_bf16(y_r.data(), x.data(), n);
    simd().round_to_bf16(y_s.data(), x.data(), n);
    for (size_t i = x.size(); i < y_s.size(); ++i) EXPECT_EQ(y_s[i].bits, 0xDEAD) << "n=" << n;
    int failures = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (y_s[i].bits != y_r[i].bits && ++failures <= 5)
        ADD_FAILURE() << "n=" << n << " [" << i << "]: 0x" << std::hex << y_s[i].bits << " vs 0x"
                      << y_r[i].bits;
    }
    EXPECT_EQ(failures, 0) << n;
  }
}

// ---- Accuracy of the vector math against double precision, on dense grids. ----

TEST_F(Avx512VsReference, GeluAccuracy) {
  // Exact GELU to ~1e-6 relative on [-12, 12] (x Phi(x) > 1e-32 there, normal floats), including
  // the negative tail where HF's float formula itself cancels. 480001 points.
  const int64_t n = 480001;
  FVec x(n), y(n), d(n);
  const FVec ones(n, 1.0f);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(-12.0 + 24.0 * static_cast<double>(i) / static_cast<double>(n - 1));
  simd().gelu_forward(y.data(), x.data(), n);
  simd().gelu_backward(d.data(), ones.data(), x.data(), n);
  double worst = 0, worst_d = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double xd = x[i];
    const double cdf = 0.5 * std::erfc(-xd / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * xd * xd) / std::sqrt(2 * M_PI);
    const double want = xd * cdf;
    if (want != 0) worst = std::max(worst, std::abs(y[i] - want) / std::abs(want));
    // Derivative: relative to the sum of the absolute terms (they cancel near x = -0.75).
    worst_d = std::max(worst_d, std::abs(d[i] - (cdf + xd * pdf)) / (cdf + std::abs(xd) * pdf));
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_LT(worst_d, 1e-6);
  std::printf("gelu max relative error %.3g, derivative %.3g\n", worst, worst_d);
}

TEST_F(Avx512VsReference, TanhAndExpAccuracy) {
  const int64_t n = 400001;
  FVec x(n), y(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(-10.0 + 20.0 * static_cast<double>(i) / static_cast<double>(n - 1));
  simd().tanh_forward(y.data(), x.data(), n);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double want = std::tanh(double{x[i]});
    if (want != 0) worst = std::max(worst, std::abs(y[i] - want) / std::abs(want));
  }
  EXPECT_LT(worst, 3 * kEps);
  std::printf("tanh max relative error %.3g (%.2f eps)\n", worst, worst / kEps);
  // exp, seen through softmax rows [t, 0] with t in [-87, 0]: y0 / y1 = e^t.
  const int64_t rows = 20001;
  FVec z(2 * rows), p(2 * rows);
  for (int64_t i = 0; i < rows; ++i) {
    z[2 * i] = static_cast<float>(-87.0 * static_cast<double>(i) / static_cast<double>(rows - 1));
    z[2 * i + 1] = 0.0f;
  }
  simd().softmax_forward(p.data(), z.data(), rows, 2);
  double worst_exp = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const double want = std::exp(double{z[2 * i]});
    const double got = double{p[2 * i]} / double{p[2 * i + 1]};
    worst_exp = std::max(worst_exp, std::abs(got - want) / want);
  }
  // exp's error plus three roundings (the sum, the reciprocal, the products) and the ratio.
  EXPECT_LT(worst_exp, 6 * kEps);
  std::printf("exp (via softmax) max relative error %.3g (%.2f eps)\n", worst_exp,
              worst_exp / kEps);
}

TEST_F(Avx512VsReference, SoftmaxEdgeValues) {
  // -inf keys give exactly 0; a row of one element gives 1.
  FVec x = {0.f, -INFINITY, 1.f, -INFINITY, 2.f};
  FVec y(5);
  simd().softmax_forward(y.data(), x.data(), 1, 5);
  EXPECT_EQ(y[1], 0.f);
  EXPECT_EQ(y[3], 0.f);
  EXPECT_NEAR(y[4], std::exp(2.0) / (1 + std::exp(1.0) + std::exp(2.0)), 4 * kEps);
  float one = 123.f, out;
  simd().softmax_forward(&out, &one, 1, 1);
  EXPECT_EQ(out, 1.f);
}

}  // namespace
}  // namespace cpuft
