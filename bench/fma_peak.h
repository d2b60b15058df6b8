// The measured fp32 FMA peak of this machine: the yardstick for MFU figures.
#pragma once

namespace cpuft {

// GFLOP/s of independent AVX-512 FMA chains on `threads` OpenMP threads (2 FLOPs per lane).
double measure_fp32_fma_peak_gflops(int threads);

}  // namespace cpuft
