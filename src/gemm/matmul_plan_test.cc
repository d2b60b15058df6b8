// MatmulPlan, LinearPlans and strided_gemm against a naive triple loop accumulated in double.
//
// Tolerance: each output is a k-term fp32 dot product (k <= 64 here). oneDNN accumulates in fp32
// in some blocked order, so its error is bounded by about k * 2^-24 * sum|a_i b_i| (standard
// summation bound); with inputs in [-1, 1] that is < 64 * 6e-8 * k ~ 4e-6 * k absolute per unit of
// sum|a b|. We compare |got - want| <= 1e-5 * (sum|a_i b_i| + |c0| + |bias|) + 1e-6, which the
// bound satisfies with margin, while any indexing bug (wrong transpose, stride, offset, missing
// bias or accumulate) gives errors of order sum|a b| itself and fails.
#include "gemm/matmul_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"

namespace cpuft {
namespace {

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Rounds v to bf16: the stored inputs of a bf16 plan, and (widened back) the exact fp32 values the
// naive reference multiplies.
std::vector<bf16> to_bf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = round_to_bf16(v[i]);
  return out;
}
std::vector<float> widen(const std::vector<bf16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
  return out;
}

// Runs `plan` on A and B as its precision stores them. For a bf16 plan the inputs are rounded first
// and `a`, `b` become the rounded values widened back, exactly what the naive reference must
// multiply.
void run_plan(const MatmulPlan& plan, std::vector<float>& c, std::vector<float>& a,
              std::vector<float>& b, const float* bias, int64_t varying_size) {
  if (plan.desc().precision == MatmulPrecision::bf16) {
    const auto a16 = to_bf16(a), b16 = to_bf16(b);
    plan.run(c.data(), a16.data(), b16.data(), bias, varying_size);
    a = widen(a16);
    b = widen(b16);
  } else {
    plan.run(c.data(), a.data(), b.data(), bias, varying_size);
  }
}

// Element (i, j) of op(X) where X is stored row-major with leading dimension ld.
float at(const float* x, bool transposed, int64_t i, int64_t j, int64_t ld) {
  return transposed ? x[j * ld + i] : x[i * ld + j];
}

// Checks C(M,N) = alpha op(A) op(B) + beta C0 (+ bias) in double; `c0` is C before the call.
void expect_gemm(const std::vector<float>& got, const std::vector<float>& c0, const float* a,
                 bool at_, int64_t lda, const float* b, bool bt, int64_t ldb, const float* bias,
                 int64_t M, int64_t N, int64_t K, float alpha, float beta, int64_t ldc,
                 const std::string& what) {
  int failures = 0;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < K; ++p) {
        const double prod = double(at(a, at_, i, p, lda)) * double(at(b, bt, p, j, ldb));
        sum += prod;
        mag += std::abs(prod);
      }
      const double c_before = c0[i * ldc + j];
      double want = alpha * sum + beta * c_before;
      mag = std::abs(alpha) * mag + std::abs(beta * c_before);
      if (bias) {
        want += bias[j];
        mag += std::abs(bias[j]);
      }
      const double err = std::abs(double(got[i * ldc + j]) - want);
      if (err > 1e-5 * mag + 1e-6 && ++failures <= 3) {
        ADD_FAILURE() << what << ": C(" << i << "," << j << ") = " << got[i * ldc + j] << ", want "
                      << want;
      }
    }
  }
  EXPECT_EQ(failures, 0) << what;
}

const char* name(VaryingDim v) {
  return v == VaryingDim::none ? "none" : v == VaryingDim::m ? "m" : "k";
}

// Every layout (transposes, accumulate, bias, which dimension varies, several actual sizes) against
// the naive product. bf16: inputs rounded to bf16, the reference fed their exact widened values,
// with the same fp32-accumulation tolerance (products of two bf16 numbers are exact in fp32); the
// layouts the ladder cannot express must be refused at construction for bf16.
void check_every_layout(MatmulPrecision precision) {
  constexpr int64_t kM = 37, kN = 19, kK = 23;
  const bool bf16_inputs = precision == MatmulPrecision::bf16;
  uint32_t seed = bf16_inputs ? 100 : 1;
  int tested = 0;
  for (VaryingDim varying : {VaryingDim::none, VaryingDim::m, VaryingDim::k}) {
    for (bool at_ : {false, true}) {
      for (bool bt : {false, true}) {
        for (bool acc : {false, true}) {
          for (bool bias : {false, true}) {
            if (acc && bias) continue;  // not supported by design (see MatmulDesc)
            const MatmulDesc desc{.m = kM,
                                  .n = kN,
                                  .k = kK,
                                  .a_transposed = at_,
                                  .b_transposed = bt,
                                  .accumulate = acc,
                                  .bias = bias,
                                  .varying = varying,
                                  .precision = precision};
            const std::string layout = std::string("varying=") + name(varying) +
                                       " at=" + std::to_string(at_) + " bt=" + std::to_string(bt) +
                                       " acc=" + std::to_string(acc) +
                                       " bias=" + std::to_string(bias);
            const bool expressible =
                !(varying == VaryingDim::m && at_) && !(varying == VaryingDim::k && (!at_ || bt));
            if (bf16_inputs && !expressible) {
              EXPECT_THROW(MatmulPlan{desc}, Error) << layout;
              continue;
            }
            const MatmulPlan plan(desc);
            const int64_t max = varying == VaryingDim::m ? kM : kK;
            std::vector<int64_t> sizes = {0};
            if (varying != VaryingDim::none) sizes = {1, 2, 5, 16, max - 1, max, 0};
            for (int64_t s : sizes) {
              const int64_t M = varying == VaryingDim::m ? s : kM;
              const int64_t K = varying == VaryingDim::k ? s : kK;
              // Stored shapes: A (M,K) or (K,M); B (K,N) or (N,K); dense, so the leading
              // dimension is the stored width.
              auto a = random_vector(M * K, seed++);
              auto b = random_vector(K * kN, seed++);
              const auto bv = random_vector(kN, seed++);
              // C starts non-zero: checks accumulate adds to it and overwrite ignores it.
              const auto c0 = random_vector(M * kN, seed++);
              auto c = c0;
              run_plan(plan, c, a, b, bias ? bv.data() : nullptr, s);
              expect_gemm(c, c0, a.data(), at_, at_ ? M : K, b.data(), bt, bt ? K : kN,
                          bias ? bv.data() : nullptr, M, kN, K, 1.0f, acc ? 1.0f : 0.0f, kN,
                          layout + " size=" + std::to_string(s));
              ++tested;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(tested, 50);
}

TEST(MatmulPlan, AllCombinationsAgainstNaive) {
  check_every_layout(MatmulPrecision::f32);
}

TEST(MatmulPlan, Bf16AllLadderLayoutsAgainstNaive) {
  if (!cpu_has_bf16_matmul()) GTEST_SKIP() << "CPU lacks AVX512_BF16 / AMX-BF16";
  check_every_layout(MatmulPrecision::bf16);
}

// Where the CPU has bf16 instructions, oneDNN must use them (a reference or emulated bf16 kernel
// would be correct but slower than fp32); the fp32 forward plan must not be oneDNN's reference
// (non-JIT) implementation either.
// A varying K above the padded tail's size (matmul_plan.cc): sums made of ladder pieces and a last
// zero-padded piece, or of ladder pieces alone (K a rung sum), or of the padded piece alone, with
// and without accumulation and bias, fp32 and bf16, against the naive product. C starts non-zero.
TEST(MatmulPlan, VaryingKPiecesAndPaddedTailAgainstNaive) {
  constexpr int64_t kM = 20, kN = 33, kMaxK = 300;
  uint32_t seed = 500;
  for (MatmulPrecision precision : {MatmulPrecision::f32, MatmulPrecision::bf16})
    for (bool acc : {false, true})
      for (bool bias : {false, true}) {
        if (acc && bias) continue;
        if (precision == MatmulPrecision::bf16 && !cpu_has_bf16_matmul()) continue;
        const MatmulPlan plan(MatmulDesc{.m = kM,
                                         .n = kN,
                                         .k = kMaxK,
                                         .a_transposed = true,
                                         .accumulate = acc,
                                         .bias = bias,
                                         .varying = VaryingDim::k,
                                         .precision = precision});
        for (int64_t K : {1, 22, 63, 64, 65, 127, 128, 150, 192, 250, 299, 300, 40}) {
          auto a = random_vector(K * kM, seed++), b = random_vector(K * kN, seed++);
          const auto bv = random_vector(kN, seed++), c0 = random_vector(kM * kN, seed++);
          auto c = c0;
          run_plan(plan, c, a, b, bias ? bv.data() : nullptr, K);
          expect_gemm(c, c0, a.data(), true, kM, b.data(), false, kN, bias ? bv.data() : nullptr,
                      kM, kN, K, 1.0f, acc ? 1.0f : 0.0f, kN,
                      std::string(precision == MatmulPrecision::bf16 ? "bf16" : "fp32") +
                          " acc=" + std::to_string(acc) + " bias=" + std::to_string(bias) +
                          " K=" + std::to_string(K));
        }
      }
}

bool cpu_has_amx_bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("amx-bf16");
}

// Where LinearPlans asks for W packed (matmul_plan.cc gives the measurements): backward-data
// always; forward on AMX only where in > out, without AMX always. On AMX oneDNN takes the packed
// layout for every rung, so the plans pack; elsewhere a plan may still turn packing off.
TEST(LinearPlans, Bf16PackingWhereMeasuredFaster) {
  if (!cpu_has_bf16_matmul()) GTEST_SKIP() << "CPU lacks AVX512_BF16 / AMX-BF16";
  const LinearPlans up(256, 384, 1536, MatmulPrecision::bf16);
  const LinearPlans down(256, 1536, 384, MatmulPrecision::bf16);  // in > out
  EXPECT_TRUE(up.bwd_data.desc().pack_b);
  EXPECT_TRUE(down.bwd_data.desc().pack_b);
  EXPECT_TRUE(down.fwd.desc().pack_b);
  EXPECT_EQ(up.fwd.desc().pack_b, !cpu_has_amx_bf16());
  if (cpu_has_amx_bf16()) {
    EXPECT_TRUE(up.bwd_data.packs_b());
    EXPECT_TRUE(down.bwd_data.packs_b());
    EXPECT_TRUE(down.fwd.packs_b());
    EXPECT_FALSE(up.fwd.packs_b());
  }
  EXPECT_FALSE(LinearPlans(256, 384, 1536).bwd_data.packs_b());  // fp32: dnnl_sgemm
}

TEST(MatmulPlan, OnednnPicksANativeKernel) {
  const LinearPlans f32(256, 384, 1536);
  EXPECT_NE(f32.fwd.implementation().rfind("ref", 0), 0u) << f32.fwd.implementation();
  // Without bf16 instructions oneDNN 2.6 cannot even create the bf16 primitives.
  if (!cpu_has_bf16_matmul()) GTEST_SKIP() << "CPU lacks AVX512_BF16 / AMX-BF16";
  const LinearPlans b16(256, 384, 1536, MatmulPrecision::bf16);
  for (const MatmulPlan* p : {&b16.fwd, &b16.bwd_data, &b16.bwd_weights}) {
    const std::string impl = p->implementation();
    EXPECT_TRUE(impl.find("bf16") != std::string::npos || impl.find("amx") != std::string::npos)
        << impl;
  }
}

// fp32 backward-weights: gemm:jit where both of the gradient's dimensions are 768 or more
// (BERT-base's shapes, where brgemm measured up to 3x slower), the brgemm ladder below (MiniLM's,
// where it measured as fast or faster); both against the naive sum over a varying K, accumulated.
// Few tokens: the test also runs under qemu (tests/portability).
TEST(MatmulPlan, Fp32BackwardWeightsOnGemmJitFromBertBaseSizes) {
  const auto backward_weights = [](int64_t out, int64_t in) {
    return MatmulPlan(MatmulDesc{.m = out,
                                 .n = in,
                                 .k = 96,
                                 .a_transposed = true,
                                 .accumulate = true,
                                 .varying = VaryingDim::k});
  };
  const MatmulPlan bert_ffn_down = backward_weights(768, 3072);
  const MatmulPlan minilm_ffn_up = backward_weights(1536, 384);
  EXPECT_EQ(bert_ffn_down.implementation(), "dnnl_sgemm");
  EXPECT_EQ(backward_weights(768, 768).implementation(), "dnnl_sgemm");
  EXPECT_NE(minilm_ffn_up.implementation(), "dnnl_sgemm");
  EXPECT_NE(backward_weights(3072, 767).implementation(), "dnnl_sgemm");
  uint32_t seed = 900;
  for (const MatmulPlan* plan : {&bert_ffn_down, &minilm_ffn_up}) {
    const int64_t out = plan->desc().m, in = plan->desc().n;
    for (int64_t rows : {int64_t{1}, int64_t{5}}) {
      auto d_y = random_vector(rows * out, seed++), x = random_vector(rows * in, seed++);
      const auto dw0 = random_vector(out * in, seed++);
      auto d_w = dw0;
      run_plan(*plan, d_w, d_y, x, nullptr, rows);
      expect_gemm(d_w, dw0, d_y.data(), true, out, x.data(), false, in, nullptr, out, in, rows,
                  1.0f, 1.0f, in, str(plan->implementation(), " rows=", rows));
    }
  }
}

// Plans shaped like forward (B transposed, bias) and backward-data, with pack_b set, pack B at
// every run: they must read the B of each run (not a copy from an earlier one) and give the
// product, here (K of one 32-row block or less, padded or not) with the unpacked plan's very bits.
// On AMX they must pack (on other bf16 CPUs packing may turn itself off).
TEST(MatmulPlan, Bf16PackedBAgainstUnpackedAndNaive) {
  if (!cpu_has_bf16_matmul()) GTEST_SKIP() << "CPU lacks AVX512_BF16 / AMX-BF16";
  const bool amx = cpu_has_amx_bf16();
  constexpr int64_t kMaxRows = 200, kN = 80;
  for (const int64_t kK : {int64_t{96}, int64_t{97}, int64_t{2}})
    for (const bool b_transposed : {true, false}) {
      MatmulDesc desc{.m = kMaxRows,
                      .n = kN,
                      .k = kK,
                      .b_transposed = b_transposed,
                      .bias = b_transposed,
                      .varying = VaryingDim::m,
                      .precision = MatmulPrecision::bf16};
      const MatmulPlan unpacked(desc);
      desc.pack_b = true;
      const MatmulPlan packed(desc);
      if (amx) {
        EXPECT_TRUE(packed.packs_b()) << packed.implementation() << " K=" << kK;
      }
      EXPECT_FALSE(unpacked.packs_b());
      const auto bias = random_vector(kN, 40);
      const float* bias_ptr = b_transposed ? bias.data() : nullptr;
      uint32_t seed = 41;
      for (int64_t rows : {int64_t{kMaxRows}, int64_t{197}, int64_t{1}, int64_t{64}}) {
        const std::string what = "K=" + std::to_string(kK) +
                                 " b_transposed=" + std::to_string(b_transposed) +
                                 " rows=" + std::to_string(rows);
        const auto a = to_bf16(random_vector(rows * kK, seed++));
        const auto b = to_bf16(random_vector(kK * kN, seed++));  // a new B every run
        std::vector<float> got(rows * kN, -1.0f), want(rows * kN, -2.0f);
        packed.run(got.data(), a.data(), b.data(), bias_ptr, rows);
        unpacked.run(want.data(), a.data(), b.data(), bias_ptr, rows);
        EXPECT_EQ(got, want) << what;
        std::vector<float> af = widen(a), bf = widen(b);
        expect_gemm(got, std::vector<float>(rows * kN, 0.0f), af.data(), false, kK, bf.data(),
                    b_transposed, b_transposed ? kK : kN, bias_ptr, rows, kN, kK, 1.0f, 0.0f, kN,
                    what);
      }
    }
}

// The count the step's tests rely on (step/train_step_test.cc): plans add their primitives when
// created, running them adds none.
TEST(MatmulPlan, CountsThePrimitivesItCreatesAndRunCreatesNone) {
  const int64_t before = onednn_primitives_created();
  const LinearPlans plans(64, 32, 48);
  const int64_t created = onednn_primitives_created();
  EXPECT_GT(created, before);
  const auto x = random_vector(40 * 32, 70), w = random_vector(48 * 32, 71);
  const auto b = random_vector(48, 72), d_y = random_vector(40 * 48, 73);
  std::vector<float> y(40 * 48), d_x(40 * 32), d_w(48 * 32);
  plans.forward(y.data(), x.data(), w.data(), b.data(), 40);
  plans.backward_data(d_x.data(), d_y.data(), w.data(), 40);
  plans.backward_weights(d_w.data(), d_y.data(), x.data(), 40);
  EXPECT_EQ(onednn_primitives_created(), created);
}

TEST(MatmulPlan, PrecisionMismatchThrows) {
  if (!cpu_has_bf16_matmul()) GTEST_SKIP() << "CPU lacks AVX512_BF16 / AMX-BF16";
  const MatmulPlan f32(MatmulDesc{.m = 4, .n = 4, .k = 4});
  const MatmulPlan b16(MatmulDesc{.m = 4, .n = 4, .k = 4, .precision = MatmulPrecision::bf16});
  std::vector<float> c(16, 0.0f);
  const std::vector<bf16> h(16, bf16{0x3F80});
  EXPECT_THROW(f32.run(c.data(), h.data(), h.data(), nullptr), Error);
  EXPECT_THROW(b16.run(c.data(), c.data(), c.data(), nullptr), Error);
  b16.run(c.data(), h.data(), h.data(), nullptr);
  EXPECT_EQ(c[0], 4.0f);  // four products 1 * 1
}

TEST(MatmulPlan, VaryingSizeAboveMaximumThrows) {
  const MatmulPlan pm(MatmulDesc{.m = 8, .n = 4, .k = 4, .varying = VaryingDim::m});
  const MatmulPlan pk(MatmulDesc{
      .m = 4, .n = 4, .k = 8, .a_transposed = true, .accumulate = true, .varying = VaryingDim::k});
  std::vector<float> buf(64, 0.0f);
  EXPECT_THROW(pm.run(buf.data(), buf.data(), buf.data(), nullptr, 9), Error);
  EXPECT_THROW(pk.run(buf.data(), buf.data(), buf.data(), nullptr, 9), Error);
  EXPECT_THROW(pm.run(buf.data(), buf.data(), buf.data(), nullptr, -1), Error);
  EXPECT_NO_THROW(pm.run(buf.data(), buf.data(), buf.data(), nullptr, 8));
}

TEST(MatmulPlan, MovedPlanStillRuns) {
  MatmulPlan p(MatmulDesc{.m = 5, .n = 3, .k = 2});
  MatmulPlan q(std::move(p));
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, b = {1, 0, 2, 0, 1, 3};
  std::vector<float> c(15, -1.0f);
  q.run(c.data(), a.data(), b.data(), nullptr);
  expect_gemm(c, std::vector<float>(15, 0.0f), a.data(), false, 2, b.data(), false, 3, nullptr, 5,
              3, 2, 1.0f, 0.0f, 3, "moved");
}

TEST(LinearPlans, ForwardBackwardAgainstNaive) {
  constexpr int64_t kMaxRows = 45, kIn = 24, kOut = 17;
  const LinearPlans plans(kMaxRows, kIn, kOut);
  const auto w = random_vector(kOut * kIn, 11);  // (out, in) as nn.Linear stores it
  const auto bias = random_vector(kOut, 12);
  for (int64_t rows : {int64_t{1}, int64_t{13}, int64_t{32}, kMaxRows}) {
    const auto x = random_vector(rows * kIn, 13);
    const auto d_y = random_vector(rows * kOut, 14);
    // y = x W^T + b
    const std::vector<float> y0(rows * kOut, 7.0f);
    auto y = y0;
    plans.forward(y.data(), x.data(), w.data(), bias.data(), rows);
    expect_gemm(y, y0, x.data(), false, kIn, w.data(), true, kIn, bias.data(), rows, kOut, kIn,
                1.0f, 0.0f, kOut, "forward");
    // d_x = d_y W (overwritten)
    const std::vector<float> dx0(rows * kIn, 7.0f);
    auto d_x = dx0;
    plans.backward_data(d_x.data(), d_y.data(), w.data(), rows);
    expect_gemm(d_x, dx0, d_y.data(), false, kOut, w.data(), false, kIn, nullptr, rows, kIn, kOut,
                1.0f, 0.0f, kIn, "backward_data");
    // d_W += d_y^T x (accumulated onto a non-zero gradient)
    const auto dw0 = random_vector(kOut * kIn, 15);
    auto d_w = dw0;
    plans.backward_weights(d_w.data(), d_y.data(), x.data(), rows);
    expect_gemm(d_w, dw0, d_y.data(), true, kOut, x.data(), false, kIn, nullptr, kOut, kIn, rows,
                1.0f, 1.0f, kIn, "backward_weights");
  }
}

void check_bf16_linear(int64_t kMaxRows, int64_t kIn, int64_t kOut) {
  SCOPED_TRACE(str("max rows ", kMaxRows, ", in ", kIn, ", out ", kOut));
  const LinearPlans plans(kMaxRows, kIn, kOut, MatmulPrecision::bf16);
  EXPECT_EQ(plans.precision(), MatmulPrecision::bf16);
  {  // fp32 operands only: refused, not silently run in the wrong precision
    std::vector<float> f(kMaxRows * kIn), y(kMaxRows * kOut);
    EXPECT_THROW(plans.forward(y.data(), Operand{f.data()}, Operand{f.data()}, f.data(), 1), Error);
  }
  const auto w = to_bf16(random_vector(kOut * kIn, 31));
  const auto w_wide = widen(w);
  const auto bias = random_vector(kOut, 32);
  for (int64_t rows : {int64_t{1}, int64_t{13}, int64_t{32}, int64_t{40}, kMaxRows}) {
    if (rows > kMaxRows) continue;
    const auto x = to_bf16(random_vector(rows * kIn, 33));
    const auto d_y = to_bf16(random_vector(rows * kOut, 34));
    const auto x_wide = widen(x), dy_wide = widen(d_y);
    const std::vector<float> y0(rows * kOut, 7.0f);
    auto y = y0;
    plans.forward(y.data(), Operand{nullptr, x.data()}, Operand{nullptr, w.data()}, bias.data(),
                  rows);
    expect_gemm(y, y0, x_wide.data(), false, kIn, w_wide.data(), true, kIn, bias.data(), rows, kOut,
                kIn, 1.0f, 0.0f, kOut, "bf16 forward");
    const std::vector<float> dx0(rows * kIn, 7.0f);
    auto d_x = dx0;
    plans.backward_data(d_x.data(), Operand{nullptr, d_y.data()}, Operand{nullptr, w.data()}, rows);
    expect_gemm(d_x, dx0, dy_wide.data(), false, kOut, w_wide.data(), false, kIn, nullptr, rows,
                kIn, kOut, 1.0f, 0.0f, kIn, "bf16 backward_data");
    const auto dw0 = random_vector(kOut * kIn, 35);
    auto d_w = dw0;
    plans.backward_weights(d_w.data(), Operand{nullptr, d_y.data()}, Operand{nullptr, x.data()},
                           rows);
    expect_gemm(d_w, dw0, dy_wide.data(), true, kOut, x_wide.data(), false, kIn, nullptr, kOut, kIn,
                rows, 1.0f, 1.0f, kIn, "bf16 backward_weights");
  }
}

// Odd widths too (an FFN of 37, as a tiny golden model has), and fewer rows than the plan's
// maximum: the VNNI kernels pair up K and block M, and their tails must not leak.
TEST(LinearPlans, Bf16ForwardBackwardAgainstNaive) {
  if (!cpu_has_bf16_matmul()) GTEST_SKIP() << "CPU lacks AVX512_BF16 / AMX-BF16";
  check_bf16_linear(45, 24, 17);
  check_bf16_linear(64, 37, 32);
  check_bf16_linear(64, 32, 37);
  check_bf16_linear(64, 32, 96);
}

// The attention use: Q, K, V are column slices of a (T, 3D) buffer, so lda/ldb exceed the widths,
// and C is a slice of a wider buffer too; columns outside the slice must stay untouched.
TEST(StridedGemm, LeadingDimensionsTransposesAlphaBeta) {
  constexpr int64_t M = 9, N = 7, K = 5, ld_in = 3 * 16, ldc = 11;
  const auto qkv = random_vector(16 * ld_in, 21);
  for (bool at_ : {false, true}) {
    for (bool bt : {false, true}) {
      const float* a = qkv.data() + 3;   // a column slice, offset inside a row
      const float* b = qkv.data() + 16;  // another slice
      const auto c0 = random_vector(M * ldc, 22);
      auto c = c0;
      strided_gemm(at_, bt, M, N, K, 0.5f, a, ld_in, b, ld_in, -0.75f, c.data(), ldc);
      const std::string what = "at=" + std::to_string(at_) + " bt=" + std::to_string(bt);
      expect_gemm(c, c0, a, at_, ld_in, b, bt, ld_in, nullptr, M, N, K, 0.5f, -0.75f, ldc, what);
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = N; j < ldc; ++j) EXPECT_EQ(c[i * ldc + j], c0[i * ldc + j]) << what;
      }
    }
  }
}

TEST(Onednn, VersionString) {
  const std::string v = onednn_version_string();
  EXPECT_NE(v.find('.'), std::string::npos) << v;
  EXPECT_NE(v.find("cpu runtime"), std::string::npos) << v;
}

}  // namespace
}  // namespace cpuft
