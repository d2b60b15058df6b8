// How kernels() chooses its table; exposed so that tests can check the choice without the cached
// static and the process environment.
#pragma once

#include "kernels/kernels.h"

namespace cpuft {

// True when the CPU has AVX-512 F, BW, DQ and VL (and the OS saves their registers): exactly the
// -mavx512* flags src/kernels/avx512/*.cc are compiled with (src/kernels/CMakeLists.txt), so a
// flag added there must be checked here too.
bool cpu_has_avx512();

// The table for CPUFT_FORCE_ISA = force_isa (nullptr or "" = unset) on a CPU with or without
// AVX-512: unset -> avx512 if available else reference; "reference" -> reference; "avx512" ->
// avx512, or cpuft::Error if the CPU lacks it; anything else -> cpuft::Error.
const KernelTable& select_kernel_table(const char* force_isa, bool has_avx512);

}  // namespace cpuft
