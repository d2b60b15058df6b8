#include "kernels/peak_probe.h"

#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/timer.h"
#include "kernels/avx512/avx512.h"
#include "kernels/dispatch.h"

namespace cpuft {

namespace {

// The AVX2 twin of avx512::fma_peak_loop for CPUs without AVX-512 (the baseline has FMA).
double avx2_fma_peak_loop(int64_t iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  __m256 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, acc[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  return lanes[0];
}

// Median of 5 timings of `loop` on `threads` threads; returns GFLOP/s for flops_per_iteration.
template <typename Loop>
double median_gflops(int threads, Loop loop, double flops_per_iteration, int64_t iterations) {
  iterations = std::max<int64_t>(iterations, 1000);
  std::vector<double> seconds;
  double sink = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    const Stopwatch watch;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += loop(iterations);
    seconds.push_back(watch.seconds());
  }
  if (sink == 1.2345) std::puts("");
  std::sort(seconds.begin(), seconds.end());
  return threads * static_cast<double>(iterations) * flops_per_iteration / seconds[2] * 1e-9;
}

// Linux grants a process the AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM).
bool request_amx_tiles() {
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

int64_t scaled(double iterations, double scale) {
  return static_cast<int64_t>(iterations * scale);
}

}  // namespace

double measure_fp32_fma_peak_gflops(int threads, double scale) {
  // ~0.1 s per thread and repeat at scale 1.
  if (cpu_has_avx512())
    return median_gflops(threads, avx512::fma_peak_loop, 12 * 16 * 2, scaled(20e6, scale));
  return median_gflops(threads, avx2_fma_peak_loop, 12 * 8 * 2, scaled(20e6, scale));
}

double measure_bf16_dot_peak_gflops(int threads, double scale) {
  __builtin_cpu_init();
  if (!cpu_has_avx512() || !__builtin_cpu_supports("avx512bf16")) return 0;
  // 2 products + 2 adds per fp32 lane.
  return median_gflops(threads, avx512::bf16_dot_peak_loop, 12 * 16 * 4, scaled(20e6, scale));
}

double measure_amx_bf16_peak_gflops(int threads, double scale) {
  __builtin_cpu_init();
  if (!cpu_has_avx512() || !__builtin_cpu_supports("amx-bf16") || !request_amx_tiles()) return 0;
  // 4 tile products of 16 x 16 x 32 multiply-adds per iteration; a tile product takes ~16 cycles,
  // so fewer iterations than the vector loops for the same time.
  return median_gflops(threads, avx512::amx_peak_loop, 4 * 16 * 16 * 32 * 2.0, scaled(1e6, scale));
}

ComputePeak measure_compute_peak(bool bf16, int threads, double scale) {
  if (bf16) {
    if (const double amx = measure_amx_bf16_peak_gflops(threads, scale); amx > 0)
      return {amx, "AMX-BF16 tile"};
    if (const double dot = measure_bf16_dot_peak_gflops(threads, scale); dot > 0)
      return {dot, "AVX512_BF16 dot"};
  }
  return {measure_fp32_fma_peak_gflops(threads, scale), "fp32 FMA"};
}

std::string cpu_model_string() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name = "unknown CPU", family = "?", model = "?";
  auto value = [](const std::string& l) {
    const size_t colon = l.find(':');
    return colon == std::string::npos ? std::string()
                                      : l.substr(l.find_first_not_of(' ', colon + 1));
  };
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0)
      name = value(line);
    else if (line.rfind("cpu family", 0) == 0)
      family = value(line);
    else if (line.rfind("model\t", 0) == 0)
      model = value(line);
    if (line.empty()) break;  // the first processor is enough
  }
  return name + " (family " + family + " model " + model + ")";
}

}  // namespace cpuft
