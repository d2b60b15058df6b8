// The measured peak of this machine's arithmetic units: the yardstick of MFU figures
// (cpuft_bench_step, and cpuft train's log lines and log.jsonl).
//
// Each probe runs independent chains of one instruction on `threads` OpenMP threads and reports
// GFLOP/s, the median of 5 repeats of about 0.1 s x `scale` each. The chains live in
// kernels/avx512/peak_loops.cc (AVX-512 and AMX) and peak_probe.cc (AVX2), and run only on a CPU
// that has the instructions.
#pragma once

#include <string>

namespace cpuft {

// fp32 FMA chains: AVX-512 (16 lanes) where the CPU has it, else AVX2 (8 lanes; every CPU of the
// x86-64-v3 baseline has FMA). 2 FLOPs per lane.
double measure_fp32_fma_peak_gflops(int threads, double scale = 1);

// AVX512_BF16 dot-product chains (vdpbf16ps: 32 bf16 products summed into 16 fp32 lanes, 64 FLOPs
// per instruction): the bf16 yardstick where the CPU has no AMX. 0 without AVX512_BF16.
double measure_bf16_dot_peak_gflops(int threads, double scale = 1);

// AMX-BF16 tile products (tdpbf16ps: a 16x32 by 32x16 bf16 product summed into a 16x16 fp32
// tile, 16384 FLOPs per instruction), where oneDNN runs bf16 products on a CPU with AMX. 0 when
// the CPU lacks AMX-BF16 or the kernel does not grant the tile state.
double measure_amx_bf16_peak_gflops(int threads, double scale = 1);

// The peak a run's matrix products can reach: fp32 products: the FMA peak; bf16 products: the
// AMX tile peak where the CPU has AMX-BF16, else the AVX512_BF16 dot peak, else the FMA peak
// (oneDNN then converts and computes in fp32).
struct ComputePeak {
  double gflops = 0;
  std::string unit;  // "fp32 FMA", "AMX-BF16 tile", "AVX512_BF16 dot"
};
ComputePeak measure_compute_peak(bool bf16, int threads, double scale = 1);

// "Intel(R) Xeon(R) ... (family 6 model 143)": /proc/cpuinfo's model name with family and model,
// for reports and as the key of cached peaks.
std::string cpu_model_string();

}  // namespace cpuft
