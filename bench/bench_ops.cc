// bench_ops: GEMM throughput of the linear layers of BERT-base and MiniLM through MatmulPlan, as
// GFLOP/s and as a fraction of this machine's measured fp32 FMA peak.
//
// Every timed product is first checked against a double-precision dot product on a sample of its
// outputs; a mismatch aborts, so a fast wrong kernel cannot produce a figure.
//   usage: cpuft_bench_ops [min_reps=7]     (threads: OMP_NUM_THREADS)
//          cpuft_bench_ops --bf16-packing [min_reps=7]
// The second form times the bf16 forward and backward-data products of BERT-base's and MiniLM's
// linears at a packed MRPC batch's 1730 tokens with B packed once per run (MatmulDesc::pack_b)
// against B read as stored, each call after 256 MiB of other memory was touched (in the step the
// weights come from memory, not cache). Both are validated; they may differ in the last bits
// (oneDNN may split a long K differently for the two layouts).
#include <immintrin.h>
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gemm/matmul_plan.h"
#include "kernels/peak_probe.h"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Gemm {
  const char* pass;
  int64_t M, N, K;
  bool at, bt;  // stored layouts of A and B, for the reference
  float beta;
};

// Compares `samples` random outputs of C with a double dot product of the stored inputs.
void validate(const char* what, const float* c, const float* c_before, const float* a,
              const float* b, const float* bias, const Gemm& g) {
  std::mt19937 gen(7);
  for (int s = 0; s < 64; ++s) {
    const int64_t i = std::uniform_int_distribution<int64_t>(0, g.M - 1)(gen);
    const int64_t j = std::uniform_int_distribution<int64_t>(0, g.N - 1)(gen);
    double sum = 0, mag = 0;
    for (int64_t p = 0; p < g.K; ++p) {
      const double av = g.at ? a[p * g.M + i] : a[i * g.K + p];
      const double bv = g.bt ? b[j * g.K + p] : b[p * g.N + j];
      sum += av * bv;
      mag += std::abs(av * bv);
    }
    double want = sum + g.beta * c_before[i * g.N + j] + (bias ? bias[j] : 0.0);
    mag += std::abs(c_before[i * g.N + j]) + (bias ? std::abs(bias[j]) : 0.0);
    // fp32 sums of K terms: error <~ K * 6e-8 * mag; 1e-5 * mag covers K <= ~4096 blocked sums.
    if (std::abs(c[i * g.N + j] - want) > 1e-5 * mag + 1e-6) {
      std::fprintf(stderr, "VALIDATION FAILED %s %s C(%ld,%ld)=%g want %g\n", what, g.pass, long(i),
                   long(j), double(c[i * g.N + j]), want);
      std::abort();
    }
  }
}

// Times several variants of the same product in interleaved rounds (A B C A B C ...) so that load
// from other processes on this shared machine hits them alike; returns each variant's median.
// `before`, when given, runs untimed before each timed call.
std::vector<double> median_times(const std::vector<std::function<void()>>& fs, int reps,
                                 const std::function<void()>& before = nullptr) {
  double slowest = 0;
  for (const auto& f : fs) {  // warm-up: page faults, caches; also sizes the repeat count
    if (before) before();
    const double start = now_s();
    f();
    slowest = std::max(slowest, now_s() - start);
  }
  // Short products get more rounds (>= ~0.5 s per variant) so that one preemption does not decide.
  reps = std::max(reps, static_cast<int>(std::min(200.0, 0.5 / std::max(slowest, 1e-6))));
  std::vector<std::vector<double>> t(fs.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t v = 0; v < fs.size(); ++v) {
      if (before) before();
      const double start = now_s();
      fs[v]();
      t[v].push_back(now_s() - start);
    }
  }
  std::vector<double> med;
  for (auto& tv : t) {
    std::sort(tv.begin(), tv.end());
    med.push_back(tv[tv.size() / 2]);
  }
  return med;
}

// Minor page faults of this process so far: a kernel that gets fresh memory from the OS on every
// call pays ~11 us per 4 KiB page on these machines (docs/gemm.md), which timing alone can hide.
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

double load_average() {
  double l = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

void fill(std::vector<float>& v, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (float& x : v) x = d(gen);
}

// Reads 256 MiB on every thread's core (each its slice), so that the next product finds neither
// its weights nor its inputs in any core's cache. Reads: writes would leave dirty lines to be
// written back during the timed call.
void evict_caches() {
  static const std::vector<unsigned char> other(size_t{256} << 20, 1);
  static volatile unsigned sink = 0;
  const int64_t lines = static_cast<int64_t>(other.size() / 64);
  unsigned sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
  for (int64_t i = 0; i < lines; ++i) sum += other[static_cast<size_t>(i) * 64];
  sink = sink + sum;
}

int bf16_packing_table(int reps) {
  if (!cpuft::cpu_has_bf16_matmul()) {
    std::printf("this CPU has no bf16 matmul instructions: nothing to time\n");
    return 0;
  }
  constexpr int64_t kMaxRows = 4096, kTokens = 1730;
  struct Linear {
    const char* name;
    int64_t in, out;
  };
  const Linear linears[] = {{"qkv", 768, 2304},         {"attn_out", 768, 768},
                            {"ffn_up", 768, 3072},      {"ffn_down", 3072, 768},
                            {"mini qkv", 384, 1152},    {"mini attn_out", 384, 384},
                            {"mini ffn_up", 384, 1536}, {"mini ffn_down", 1536, 384}};
  std::printf(
      "bf16, %d OpenMP threads, T = %ld tokens, caches evicted before each call, median\n"
      "of >= %d interleaved runs: ms (GFLOP/s)\n",
      omp_get_max_threads(), long(kTokens), reps);
  std::printf("%-13s %-9s %20s %20s\n", "linear", "pass", "B as stored", "B packed per run");
  auto rounded = [](int64_t n, uint32_t seed) {
    std::vector<float> v(n);
    fill(v, seed);
    std::vector<cpuft::bf16> out(n);
    for (int64_t i = 0; i < n; ++i) out[i] = cpuft::round_to_bf16(v[i]);
    return out;
  };
  for (const Linear& l : linears) {
    const auto w = rounded(l.in * l.out, 2);
    const auto x = rounded(kTokens * l.in, 1), d_y = rounded(kTokens * l.out, 4);
    std::vector<float> bias(l.out), c_plain(kTokens * std::max(l.in, l.out)),
        c_packed(c_plain.size());
    fill(bias, 3);
    for (const bool fwd : {true, false}) {
      cpuft::MatmulDesc d = fwd ? cpuft::MatmulDesc{.m = kMaxRows,
                                                    .n = l.out,
                                                    .k = l.in,
                                                    .b_transposed = true,
                                                    .bias = true,
                                                    .varying = cpuft::VaryingDim::m,
                                                    .precision = cpuft::MatmulPrecision::bf16}
                                : cpuft::MatmulDesc{.m = kMaxRows,
                                                    .n = l.in,
                                                    .k = l.out,
                                                    .varying = cpuft::VaryingDim::m,
                                                    .precision = cpuft::MatmulPrecision::bf16};
      d.pack_b = false;
      const cpuft::MatmulPlan plain(d);
      d.pack_b = true;
      const cpuft::MatmulPlan packed(d);
      if (!packed.packs_b()) {
        std::printf("%-13s %-9s oneDNN keeps B as stored here (%s): nothing to compare\n", l.name,
                    fwd ? "fwd" : "bwd_data", packed.implementation().c_str());
        continue;
      }
      const cpuft::bf16* a = fwd ? x.data() : d_y.data();
      const float* b_bias = fwd ? bias.data() : nullptr;
      auto run_plain = [&] { plain.run(c_plain.data(), a, w.data(), b_bias, kTokens); };
      auto run_packed = [&] { packed.run(c_packed.data(), a, w.data(), b_bias, kTokens); };
      run_plain();
      run_packed();
      std::vector<float> a32(kTokens * d.k), w32(w.size());
      for (size_t i = 0; i < a32.size(); ++i) a32[i] = cpuft::to_float(a[i]);
      for (size_t i = 0; i < w32.size(); ++i) w32[i] = cpuft::to_float(w[i]);
      const std::vector<float> zeros(c_plain.size(), 0.0f);
      validate("bf16", c_plain.data(), zeros.data(), a32.data(), w32.data(), b_bias,
               Gemm{fwd ? "fwd" : "bwd_data", kTokens, d.n, d.k, false, fwd, 0.0f});
      validate("bf16 packed", c_packed.data(), zeros.data(), a32.data(), w32.data(), b_bias,
               Gemm{fwd ? "fwd" : "bwd_data", kTokens, d.n, d.k, false, fwd, 0.0f});
      const auto med = median_times({run_plain, run_packed}, reps, evict_caches);
      const double flop = 2.0 * double(kTokens) * double(d.n) * double(d.k);
      std::printf("%-13s %-9s", l.name, fwd ? "fwd" : "bwd_data");
      for (double t : med) std::printf(" %9.2f (%7.1f)", t * 1e3, flop / t * 1e-9);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--bf16-packing")
    return bf16_packing_table(argc > 2 ? std::atoi(argv[2]) : 7);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  const int threads = omp_get_max_threads();
  std::printf("oneDNN %s, %d OpenMP threads, median of >= %d interleaved runs\n",
              cpuft::onednn_version_string(), threads, reps);
  const double peak1 = cpuft::measure_fp32_fma_peak_gflops(1);
  const double peak = cpuft::measure_fp32_fma_peak_gflops(threads);
  std::printf("fp32 FMA peak: %.1f GFLOP/s (1 thread), %.1f GFLOP/s (%d threads)\n", peak1, peak,
              threads);

  constexpr int64_t kMaxRows = 4096;
  struct Linear {
    const char* model;
    const char* name;
    int64_t in, out;
  };
  const Linear linears[] = {
      {"bert-base", "qkv", 768, 2304},    {"bert-base", "attn_out", 768, 768},
      {"bert-base", "ffn_up", 768, 3072}, {"bert-base", "ffn_down", 3072, 768},
      {"minilm", "qkv", 384, 1152},       {"minilm", "attn_out", 384, 384},
      {"minilm", "ffn_up", 384, 1536},    {"minilm", "ffn_down", 1536, 384},
  };
  const size_t kMaxElems = size_t(kMaxRows) * 3072;
  std::vector<float> x(kMaxElems), w(3072 * 3072), bias(3072), d_y(kMaxElems), y(kMaxElems),
      d_x(kMaxElems), d_w(3072 * 3072), before(std::max(kMaxElems, size_t(3072) * 3072));
  fill(x, 1);
  fill(w, 2);
  fill(bias, 3);
  fill(d_y, 4);
  fill(d_w, 5);
  std::printf("load average at start: %.2f\n", load_average());
  std::printf(
      "GFLOP/s (%% of the %d-thread peak). plan4096: LinearPlans(max_rows=4096) run with T rows;\n"
      "planT: LinearPlans(max_rows=T); sgemm: dnnl_sgemm, same product (fwd: without bias).\n",
      threads);
  std::printf("%-9s %-8s %5s %-8s %5s %5s %5s %14s %14s %14s\n", "model", "linear", "T", "pass",
              "M", "N", "K", "plan4096", "planT", "sgemm");
  for (const Linear& l : linears) {
    double start = now_s();
    const cpuft::LinearPlans ladder(kMaxRows, l.in, l.out);
    const double build_s = now_s() - start;
    for (int64_t T : {int64_t{4096}, int64_t{1600}}) {
      const cpuft::LinearPlans exact(T, l.in, l.out);
      const Gemm gemms[] = {{"fwd", T, l.out, l.in, false, true, 0.0f},
                            {"bwd_data", T, l.in, l.out, false, false, 0.0f},
                            {"bwd_w", l.out, l.in, T, true, false, 1.0f}};
      for (const Gemm& g : gemms) {
        const bool is_fwd = g.pass[0] == 'f', is_bwd_w = g.pass[4] == 'w';
        float* c = is_fwd ? y.data() : is_bwd_w ? d_w.data() : d_x.data();
        const float* a = is_fwd ? x.data() : d_y.data();
        const float* b = is_bwd_w ? x.data() : w.data();
        auto run_plans = [&](const cpuft::LinearPlans& plans) {
          if (is_fwd) plans.forward(c, a, b, bias.data(), T);
          if (!is_fwd && !is_bwd_w) plans.backward_data(c, a, b, T);
          if (is_bwd_w) plans.backward_weights(c, a, b, T);
        };
        auto run_ladder = [&] { run_plans(ladder); };
        auto run_exact = [&] { run_plans(exact); };
        // The same product through dnnl_sgemm (oneDNN's gemm:jit path), for comparison.
        auto run_sgemm = [&] {
          cpuft::strided_gemm(g.at, g.bt, g.M, g.N, g.K, 1.0f, a, g.at ? g.M : g.K, b,
                              g.bt ? g.K : g.N, g.beta, c, g.N);
        };
        std::copy(c, c + g.M * g.N, before.begin());
        run_ladder();
        validate("ladder", c, before.data(), a, b, is_fwd ? bias.data() : nullptr, g);
        std::copy(c, c + g.M * g.N, before.begin());
        run_exact();
        validate("exact", c, before.data(), a, b, is_fwd ? bias.data() : nullptr, g);
        std::copy(c, c + g.M * g.N, before.begin());
        run_sgemm();
        validate("sgemm", c, before.data(), a, b, nullptr, g);
        if (is_bwd_w) fill(d_w, 5);  // keep accumulated gradients in range
        const double flop = 2.0 * double(g.M) * double(g.N) * double(g.K);
        auto faults_per_call = [](auto& f) {
          const long before_faults = minor_faults();
          for (int r = 0; r < 3; ++r) f();
          return (minor_faults() - before_faults) / 3;
        };
        const long faults[3] = {faults_per_call(run_ladder), faults_per_call(run_exact),
                                faults_per_call(run_sgemm)};
        const auto med = median_times({run_ladder, run_exact, run_sgemm}, reps);
        if (is_bwd_w) fill(d_w, 5);
        std::printf("%-9s %-8s %5ld %-8s %5ld %5ld %5ld", l.model, l.name, long(T), g.pass,
                    long(g.M), long(g.N), long(g.K));
        for (double t : med)
          std::printf(" %7.1f (%3.0f%%)", flop / t * 1e-9, 100 * flop / t * 1e-9 / peak);
        std::printf("  faults/call %ld %ld %ld", faults[0], faults[1], faults[2]);
        std::printf("\n");
        std::fflush(stdout);
      }
    }
    std::printf("  (%s %s: LinearPlans(4096, %ld, %ld) built in %.3f s)\n", l.model, l.name,
                long(l.in), long(l.out), build_s);
  }
  std::printf("load average at end: %.2f\n", load_average());
  return 0;
}
