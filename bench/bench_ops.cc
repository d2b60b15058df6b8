// bench_ops: GEMM throughput of the linear layers of BERT-base and MiniLM through MatmulPlan, as
// GFLOP/s and as a fraction of this machine's measured fp32 FMA peak.
//
// Every timed product is first checked against a double-precision dot product on a sample of its
// outputs; a mismatch aborts, so a fast wrong kernel cannot produce a figure.
//   usage: cpuft_bench_ops [min_reps=7]     (threads: OMP_NUM_THREADS)
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
std::vector<double> median_times(const std::vector<std::function<void()>>& fs, int reps) {
  double slowest = 0;
  for (const auto& f : fs) {  // warm-up: page faults, caches; also sizes the repeat count
    const double start = now_s();
    f();
    slowest = std::max(slowest, now_s() - start);
  }
  // Short products get more rounds (>= ~0.5 s per variant) so that one preemption does not decide.
  reps = std::max(reps, static_cast<int>(std::min(200.0, 0.5 / std::max(slowest, 1e-6))));
  std::vector<std::vector<double>> t(fs.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t v = 0; v < fs.size(); ++v) {
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

}  // namespace

int main(int argc, char** argv) {
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
