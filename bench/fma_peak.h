// The measured fp32 FMA peak of this machine: the yardstick for MFU figures.
#pragma once

#include <string>

namespace cpuft {

// GFLOP/s of independent AVX-512 FMA chains on `threads` OpenMP threads (2 FLOPs per lane). 0 when
// the CPU lacks AVX-512F.
double measure_fp32_fma_peak_gflops(int threads);

// GFLOP/s of independent AVX512_BF16 dot-product chains (vdpbf16ps: 32 bf16 products summed into 16
// fp32 lanes, 64 FLOPs per instruction): the yardstick for --bf16 MFU. 0 when the CPU lacks
// AVX512_BF16.
double measure_bf16_dot_peak_gflops(int threads);

// GFLOP/s of independent AMX-BF16 tile products (tdpbf16ps: a 16x32 by 32x16 bf16 product summed
// into a 16x16 fp32 tile, 16384 FLOPs per instruction), where oneDNN runs --bf16 products on a CPU
// with AMX: the bf16 yardstick there. 0 when the CPU lacks AMX-BF16 or the kernel does not grant
// the tile state.
double measure_amx_bf16_peak_gflops(int threads);

// "Intel(R) Xeon(R) ... (family 6 model 143)": /proc/cpuinfo's model name with family and model,
// for benchmark reports.
std::string cpu_model_string();

}  // namespace cpuft
