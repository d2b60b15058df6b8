// The measured fp32 FMA peak of this machine: the yardstick for MFU figures.
#pragma once

namespace cpuft {

// GFLOP/s of independent AVX-512 FMA chains on `threads` OpenMP threads (2 FLOPs per lane). 0 when
// the CPU lacks AVX-512F.
double measure_fp32_fma_peak_gflops(int threads);

// GFLOP/s of independent AVX512_BF16 dot-product chains (vdpbf16ps: 32 bf16 products summed into 16
// fp32 lanes, 64 FLOPs per instruction): the yardstick for --bf16 MFU. 0 when the CPU lacks
// AVX512_BF16.
double measure_bf16_dot_peak_gflops(int threads);

}  // namespace cpuft
