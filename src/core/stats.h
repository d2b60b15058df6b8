// Small helpers shared by the benchmarks and the code that measures itself.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/check.h"

namespace cpuft {

// The median of a non-empty sample (the upper middle element for an even count).
inline double median(std::vector<double> v) {
  CPUFT_CHECK(!v.empty(), "median of nothing");
  const auto middle = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), middle, v.end());
  return *middle;
}

// FNV-1a 64 of a byte range: a hash that is the same with every compiler and standard library
// (std::hash is not), for fingerprints and stable stream ids.
inline uint64_t fnv1a64(const void* data, size_t bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
inline uint64_t fnv1a64(std::string_view text) {
  return fnv1a64(text.data(), text.size());
}

}  // namespace cpuft
