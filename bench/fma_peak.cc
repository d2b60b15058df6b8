#include "fma_peak.h"

#include <immintrin.h>
#include <omp.h>

#include "core/timer.h"

namespace cpuft {

namespace {

// 12 independent accumulator chains hide the FMA latency (4 cycles x 2-3 ports).
__attribute__((target("avx512f"))) float fma_chains(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_reduce_add_ps(sum);
}

}  // namespace

double measure_fp32_fma_peak_gflops(int threads) {
  const int64_t iterations = 20'000'000;
  double best = 0;
  for (int repeat = 0; repeat < 3; ++repeat) {
    volatile float sink = 0;
    Stopwatch watch;
#pragma omp parallel num_threads(threads)
    {
      const float r = fma_chains(iterations);
#pragma omp critical
      sink = sink + r;
    }
    const double seconds = watch.seconds();
    const double flops = 2.0 * 16 * 12 * static_cast<double>(iterations) * threads;
    best = std::max(best, flops / seconds / 1e9);
  }
  return best;
}

}  // namespace cpuft
