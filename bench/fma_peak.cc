#include "fma_peak.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "core/timer.h"

namespace cpuft {

namespace {

// 12 independent accumulator chains hide the FMA latency (4 cycles x 2 pipes on Zen 5 needs >= 8).
__attribute__((target("avx512f"))) double fma_loop(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  return lanes[0];  // used, so the loop is not removed
}

// The same with bf16 pairs: acc += a.lo * b.lo + a.hi * b.hi per fp32 lane.
__attribute__((target("avx512f,avx512bf16"))) double bf16_dot_loop(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3F80);  // 1.0
  const __m512bh y = (__m512bh)_mm512_set1_epi16(0x3380);  // ~6e-8
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  return lanes[0];
}

// Median of 5 timings of `loop` on `threads` threads; returns GFLOP/s for flops_per_iteration.
template <typename Loop>
double median_gflops(int threads, Loop loop, double flops_per_iteration) {
  constexpr int64_t kIterations = 20'000'000;  // ~0.1 s per thread
  std::vector<double> seconds;
  double sink = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    Stopwatch watch;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += loop(kIterations);
    seconds.push_back(watch.seconds());
  }
  if (sink == 1.2345) std::puts("");
  std::sort(seconds.begin(), seconds.end());
  return threads * static_cast<double>(kIterations) * flops_per_iteration / seconds[2] * 1e-9;
}

}  // namespace

double measure_bf16_dot_peak_gflops(int threads) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16")) return 0;
  return median_gflops(threads, bf16_dot_loop, 12 * 16 * 4);  // 2 products + 2 adds per lane
}

double measure_fp32_fma_peak_gflops(int threads) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) return 0;      // the loop would be an illegal instruction
  return median_gflops(threads, fma_loop, 12 * 16 * 2);  // 16 lanes x (multiply + add)
}

}  // namespace cpuft
