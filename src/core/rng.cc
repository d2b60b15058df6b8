#include "core/rng.h"

#include <cmath>
#include <numbers>

namespace cpuft {

float normal_at(RngKey key, uint64_t i) {
  const auto words = philox4x32(key, i);
  // u1 in (0, 1] so the log is finite.
  const double u1 = (static_cast<double>(words[0]) + 1.0) / 4294967296.0;
  const double u2 = static_cast<double>(words[1]) / 4294967296.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

}  // namespace cpuft
