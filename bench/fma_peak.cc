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

}  // namespace

double measure_fp32_fma_peak_gflops(int threads) {
  constexpr int64_t kIterations = 20'000'000;  // ~0.1 s per thread
  std::vector<double> seconds;
  double sink = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    Stopwatch watch;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += fma_loop(kIterations);
    seconds.push_back(watch.seconds());
  }
  if (sink == 1.2345) std::puts("");
  std::sort(seconds.begin(), seconds.end());  // median of 5
  return threads * static_cast<double>(kIterations) * 12 * 16 * 2 / seconds[2] * 1e-9;
}

}  // namespace cpuft
