// The instruction chains of the peak probe (kernels/peak_probe.h): AVX-512 FMA, AVX512_BF16 dot
// products and AMX-BF16 tile products, each on independent accumulators so that the loop runs at
// the units' throughput. Called only on a CPU with the instructions (peak_probe.cc checks).
#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/avx512.h"

namespace cpuft::avx512 {

// 12 independent accumulator chains hide the FMA latency (4 cycles x 2 pipes needs >= 8).
double fma_peak_loop(int64_t iterations) {
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
__attribute__((target("avx512bf16"))) double bf16_dot_peak_loop(int64_t iterations) {
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

namespace {
// Four independent 16x16 fp32 accumulator tiles fed by one A and one B tile (values irrelevant).
struct TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of each tile
  uint8_t rows[16] = {};
};
}  // namespace

__attribute__((target("amx-tile,amx-bf16"))) double amx_peak_loop(int64_t iterations) {
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

}  // namespace cpuft::avx512
