#include "fma_peak.h"

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
double median_gflops(int threads, Loop loop, double flops_per_iteration,
                     int64_t iterations = 20'000'000 /* ~0.1 s per thread */) {
  std::vector<double> seconds;
  double sink = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    Stopwatch watch;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += loop(iterations);
    seconds.push_back(watch.seconds());
  }
  if (sink == 1.2345) std::puts("");
  std::sort(seconds.begin(), seconds.end());
  return threads * static_cast<double>(iterations) * flops_per_iteration / seconds[2] * 1e-9;
}

// Four independent 16x16 fp32 accumulator tiles fed by one A and one B tile (values irrelevant).
struct TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of each tile
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-bf16"))) double amx_loop(int64_t iterations) {
  TileConfig config;
  for (int t = 0; t < 6; ++t) {
    config.colsb[t] = 64;  // 16 fp32 or 32 bf16
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
  alignas(64) static thread_local uint16_t ones[16 * 32];
  for (uint16_t& v : ones) v = 0x3F80;  // bf16 1.0
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t it = 0; it < iterations; ++it) {
    _tile_dpbf16ps(0, 4, 5);
    _tile_dpbf16ps(1, 4, 5);
    _tile_dpbf16ps(2, 4, 5);
    _tile_dpbf16ps(3, 4, 5);
  }
  alignas(64) float out[16 * 16];
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
}

// Linux grants a process the AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM).
bool request_amx_tiles() {
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

}  // namespace

double measure_amx_bf16_peak_gflops(int threads) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("amx-bf16") || !request_amx_tiles()) return 0;
  // 4 tile products of 16 x 16 x 32 multiply-adds per iteration; a tile product takes ~16 cycles,
  // so fewer iterations than the vector loops for the same ~0.1 s.
  return median_gflops(threads, amx_loop, 4 * 16 * 16 * 32 * 2.0, 1'000'000);
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
