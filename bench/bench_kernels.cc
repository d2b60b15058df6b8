// bench_kernels: the memory-bound kernels of a BERT step at BERT-base shapes (N = 4096 tokens),
// each first checked against the scalar reference table, then timed, and reported as GB/s of
// compulsory traffic (bytes each kernel must read and write once) against this machine's measured
// memory bandwidth (a STREAM-like triad over buffers far larger than the caches).
//   usage: cpuft_bench_kernels [reps=9]      (threads: OMP_NUM_THREADS)
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "core/fp_env.h"
#include "core/timer.h"
#include "kernels/kernels.h"

namespace cpuft {
namespace {

using Buffer = AlignedBuffer<float>;

void fill(Buffer& b, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (size_t i = 0; i < b.size(); ++i) b[i] = dist(rng);
}

double median_seconds(int reps, const std::function<void()>& run) {
  run();  // warm
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    Stopwatch watch;
    run();
    t.push_back(watch.seconds());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Triad a = b + s * c over 3 x 256 MB: bytes moved = 3 x 4 x n (write-allocate not counted).
double triad_bandwidth_gbs(int reps) {
  const size_t n = size_t{64} << 20;
  Buffer a(n), b(n), c(n);
  fill(b, 1);
  fill(c, 2);
  const double s = median_seconds(reps, [&] {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
  });
  return 3.0 * 4.0 * static_cast<double>(n) / s / 1e9;
}

// Largest |fast - reference| / (1 + |reference|); aborts above `tolerance`.
void validate(const char* name, const Buffer& fast, const Buffer& ref, size_t n, double tolerance) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i)
    worst = std::max(worst, std::abs(static_cast<double>(fast[i]) - ref[i]) /
                                (1.0 + std::abs(static_cast<double>(ref[i]))));
  if (worst > tolerance) {
    std::fprintf(stderr, "%s: avx512 differs from reference by %g (> %g)\n", name, worst,
                 tolerance);
    std::exit(1);
  }
}

int run(int reps) {
  enable_flush_denormals_all_threads();
  const KernelTable& fast = kernels();
  const KernelTable& ref = reference_kernels();
  const int64_t N = 4096, D = 768, F = 3072, T = 128, P = 110'000'000 / 16 * 16;
  const double bandwidth = triad_bandwidth_gbs(reps);
  std::printf("kernels %s, %d threads; measured triad bandwidth %.1f GB/s\n", fast.isa,
              omp_get_max_threads(), bandwidth);
  std::printf("%-22s %12s %10s %10s %8s\n", "kernel", "shape", "ms", "GB/s", "% bw");
  auto report = [&](const char* name, const std::string& shape, double seconds, double bytes) {
    const double gbs = bytes / seconds / 1e9;
    std::printf("%-22s %12s %10.3f %10.1f %7.0f%%\n", name, shape.c_str(), seconds * 1e3, gbs,
                100 * gbs / bandwidth);
  };

  Buffer x(N * F), y(N * F), y_ref(N * F), d_y(N * F), d_x(N * F), d_x_ref(N * F);
  Buffer gamma(D), beta(D), mean(N), rstd(N), mean_ref(N), rstd_ref(N), dg(D), db(D);
  fill(x, 1, -3, 3);
  fill(d_y, 2);
  fill(gamma, 3, 0.5f, 1.5f);
  fill(beta, 4);

  // LayerNorm forward (N, D): read x, write y (+ stats).
  fast.layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(),
                          1e-12f, N, D);
  ref.layer_norm_forward(y_ref.data(), mean_ref.data(), rstd_ref.data(), x.data(), gamma.data(),
                         beta.data(), 1e-12f, N, D);
  validate("layer_norm_forward", y, y_ref, N * D, 1e-5);
  report("layer_norm_forward", "4096x768",
         median_seconds(reps,
                        [&] {
                          fast.layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(),
                                                  gamma.data(), beta.data(), 1e-12f, N, D);
                        }),
         2.0 * 4 * N * D);
  // LayerNorm backward: read d_y, x, write d_x.
  fast.layer_norm_backward(d_x.data(), dg.data(), db.data(), d_y.data(), x.data(), mean.data(),
                           rstd.data(), gamma.data(), N, D);
  ref.layer_norm_backward(d_x_ref.data(), dg.data(), db.data(), d_y.data(), x.data(), mean.data(),
                          rstd.data(), gamma.data(), N, D);
  validate("layer_norm_backward", d_x, d_x_ref, N * D, 1e-4);
  report("layer_norm_backward", "4096x768",
         median_seconds(reps,
                        [&] {
                          fast.layer_norm_backward(d_x.data(), dg.data(), db.data(), d_y.data(),
                                                   x.data(), mean.data(), rstd.data(), gamma.data(),
                                                   N, D);
                        }),
         3.0 * 4 * N * D);
  // GELU forward/backward (N, F).
  fast.gelu_forward(y.data(), x.data(), N * F);
  ref.gelu_forward(y_ref.data(), x.data(), N * F);
  validate("gelu_forward", y, y_ref, N * F, 1e-6);
  report("gelu_forward", "4096x3072",
         median_seconds(reps, [&] { fast.gelu_forward(y.data(), x.data(), N * F); }),
         2.0 * 4 * N * F);
  fast.gelu_backward(d_x.data(), d_y.data(), x.data(), N * F);
  ref.gelu_backward(d_x_ref.data(), d_y.data(), x.data(), N * F);
  validate("gelu_backward", d_x, d_x_ref, N * F, 1e-5);
  report("gelu_backward", "4096x3072",
         median_seconds(reps, [&] { fast.gelu_backward(d_x.data(), d_y.data(), x.data(), N * F); }),
         3.0 * 4 * N * F);
  // Attention softmax: 12 heads x 32 sequences of 128 -> 49152 rows of 128.
  const int64_t rows = 12 * N, C = T;
  fast.softmax_forward(y.data(), x.data(), rows, C);
  ref.softmax_forward(y_ref.data(), x.data(), rows, C);
  validate("softmax_forward", y, y_ref, rows * C, 1e-6);
  report("softmax_forward", "49152x128",
         median_seconds(reps, [&] { fast.softmax_forward(y.data(), x.data(), rows, C); }),
         2.0 * 4 * rows * C);
  // Dropout (N, D), p = 0.1.
  const RngKey key{42, 7};
  fast.dropout_forward(y.data(), x.data(), 0.1f, key, N * D);
  ref.dropout_forward(y_ref.data(), x.data(), 0.1f, key, N * D);
  validate("dropout_forward", y, y_ref, N * D, 0);
  report("dropout_forward", "4096x768",
         median_seconds(reps, [&] { fast.dropout_forward(y.data(), x.data(), 0.1f, key, N * D); }),
         2.0 * 4 * N * D);
  // Bias gradient: column sums of (N, F).
  Buffer bias(F), bias_ref(F);
  fast.bias_backward(bias.data(), d_y.data(), N, F);
  ref.bias_backward(bias_ref.data(), d_y.data(), N, F);
  validate("bias_backward", bias, bias_ref, F, 1e-4);
  report("bias_backward", "4096x3072",
         median_seconds(reps, [&] { fast.bias_backward(bias.data(), d_y.data(), N, F); }),
         1.0 * 4 * N * F);
  // A linear's output gradient under --bf16: its bias gradient and its rounding, as two kernels and
  // as bias_backward_bf16's one pass, at BERT-base's (4096 x 768) and MiniLM's shape at a packed
  // MRPC batch (1760 x 384). Traffic: read d_y once, write its bf16 rounding.
  for (const auto& [tokens, width] : {std::pair<int64_t, int64_t>{N, D}, {1760, 384}}) {
    const int64_t n = tokens * width;
    std::vector<bf16> rounded(n), rounded_ref(n);
    Buffer sums(width), sums_ref(width);
    fast.bias_backward_bf16(rounded.data(), sums.data(), d_y.data(), tokens, width);
    ref.bias_backward_bf16(rounded_ref.data(), sums_ref.data(), d_y.data(), tokens, width);
    validate("bias_backward_bf16", sums, sums_ref, width, 1e-4);
    for (int64_t i = 0; i < n; ++i)
      if (rounded[i].bits != rounded_ref[i].bits) {
        std::fprintf(stderr, "bias_backward_bf16: rounding differs from reference at %lld\n",
                     static_cast<long long>(i));
        std::exit(1);
      }
    const std::string shape = std::to_string(tokens) + "x" + std::to_string(width);
    report("round + bias_backward", shape,
           median_seconds(reps,
                          [&] {
                            fast.round_to_bf16(rounded.data(), d_y.data(), n);
                            fast.bias_backward(sums.data(), d_y.data(), tokens, width);
                          }),
           6.0 * static_cast<double>(n));
    report("bias_backward_bf16", shape,
           median_seconds(reps,
                          [&] {
                            fast.bias_backward_bf16(rounded.data(), sums.data(), d_y.data(), tokens,
                                                    width);
                          }),
           6.0 * static_cast<double>(n));
  }
  // AdamW over BERT-base's ~110M parameters: read w, m, v, g; write w, m, v.
  Buffer w(P), m(P), v(P), g(P), w_ref(P), m_ref(P), v_ref(P);
  fill(w, 5);
  fill(g, 6, -1e-3f, 1e-3f);
  AdamWStep step;
  step.lr = 2e-5f;
  step.weight_decay = 0.01f;
  step.bias_correction1 = 0.1f;
  step.bias_correction2 = 0.001f;
  std::copy_n(w.data(), P, w_ref.data());
  fast.adamw_update(w.data(), m.data(), v.data(), g.data(), nullptr, step, P);
  ref.adamw_update(w_ref.data(), m_ref.data(), v_ref.data(), g.data(), nullptr, step, P);
  validate("adamw_update", w, w_ref, P, 0);
  report("adamw_update", "110M",
         median_seconds(
             reps,
             [&] { fast.adamw_update(w.data(), m.data(), v.data(), g.data(), nullptr, step, P); }),
         7.0 * 4 * static_cast<double>(P));
  // The word table of bert-base-cased (28,996 x 768) with 38% of its rows touched (the share of
  // all-MiniLM-L6-v2's vocabulary MRPC's train set holds): the whole update against
  // adamw_update_sparse, without and with weight decay. GB/s: the whole update's traffic over the
  // time.
  const int64_t vocab = 28996, width = 768, table = vocab * width;
  Buffer g_table(table);
  fill(g_table, 7, -1e-3f, 1e-3f);
  for (int64_t r = 0; r < vocab; ++r)
    if ((r * 2654435761u) % 100 >= 38) std::fill_n(g_table.data() + r * width, width, 0.0f);
  for (const float decay : {0.0f, 0.01f}) {
    step.weight_decay = decay;
    std::fill_n(m.data(), table, 0.0f);
    std::fill_n(v.data(), table, 0.0f);
    std::fill_n(m_ref.data(), table, 0.0f);
    std::fill_n(v_ref.data(), table, 0.0f);
    std::copy_n(w.data(), table, w_ref.data());
    fast.adamw_update_sparse(w.data(), m.data(), v.data(), g_table.data(), nullptr, step, table);
    ref.adamw_update_sparse(w_ref.data(), m_ref.data(), v_ref.data(), g_table.data(), nullptr, step,
                            table);
    validate("adamw_update_sparse", w, w_ref, static_cast<size_t>(table), 0);
    validate("adamw_update_sparse m", m, m_ref, static_cast<size_t>(table), 0);
    const std::string shape = decay == 0 ? "table wd 0" : "table wd.01";
    report("adamw_update (whole)", shape,
           median_seconds(reps,
                          [&] {
                            fast.adamw_update(w.data(), m.data(), v.data(), g_table.data(), nullptr,
                                              step, table);
                          }),
           7.0 * 4 * static_cast<double>(table));
    report("adamw_update_sparse", shape,
           median_seconds(reps,
                          [&] {
                            fast.adamw_update_sparse(w.data(), m.data(), v.data(), g_table.data(),
                                                     nullptr, step, table);
                          }),
           7.0 * 4 * static_cast<double>(table));
  }
  return 0;
}

}  // namespace
}  // namespace cpuft

int main(int argc, char** argv) {
  return cpuft::run(argc > 1 ? std::atoi(argv[1]) : 9);
}
