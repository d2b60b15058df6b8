// Scalar reference: fp32 -> bf16 rounding of a buffer.
#pragma once

#include <cstdint>

#include "core/bf16.h"

namespace cpuft::reference {

// y[i] = round_to_bf16(x[i]) (nearest, ties to even; see core/bf16.h).
inline void round_to_bf16(bf16* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = cpuft::round_to_bf16(x[i]);
}

}  // namespace cpuft::reference
