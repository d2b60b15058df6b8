// Rademacher projections: how the MiniLM golden checks every element of a tensor too large to
// store. tools/make_goldens.py stores, for such a tensor x of HF name `name`, its L2 norm and
// P_k = <x, r_k> for k = 0..255; the test computes the same sums over its own tensor. The signs
// r_k[i] = +-1 come from a counter-based hash both sides compute bit for bit (little endian):
//   key      = FNV-1a 64 of the UTF-8 name
//   word w   = splitmix64_mix(key + (4 i + w + 1) * 0x9E3779B97F4A7C15), w = 0..3
//              (the (4i+w+1)-th output of SplitMix64 seeded with key)
//   r_k[i]   = -1 if bit b of word w is set, else +1, for k = 64 w + b
// where i is the element's index in the row-major flattened tensor. Why 256 projections and what a
// passing comparison proves: tests/golden/minilm_golden_test.cc and tests/fixtures/README.md.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>
#include <vector>

namespace cpuft::golden {

constexpr int kProjections = 256;
constexpr uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ull;

// SplitMix64's output function (arithmetic mod 2^64).
constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return h;
}

using Projections = std::array<double, kProjections>;

// Accumulates <x, r_k> over the elements given to add(), in double. Each element's 256 signs are
// 32 bytes of hash; the element is added to one of 256 buckets per byte position (the buckets hold
// sums of x over elements with that byte value), and result() expands the buckets into the 256
// signed sums: 32 additions per element instead of 256. Exact zeros are skipped (they add nothing).
class Projector {
 public:
  explicit Projector(std::string_view name)
      : key_(fnv1a64(name)), buckets_(static_cast<size_t>(kProjections / 8) * 256, 0.0) {}

  // Elements [begin, end) of the flattened tensor whose first element x points at.
  void add(const float* x, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double xi = x[i];
      if (xi == 0) continue;
      for (int w = 0; w < kProjections / 64; ++w) {
        uint64_t h = splitmix64_mix(
            key_ + (static_cast<uint64_t>(i) * (kProjections / 64) + w + 1) * kSplitMixGamma);
        double* bucket = buckets_.data() + static_cast<size_t>(w) * 8 * 256;
        for (int byte = 0; byte < 8; ++byte, h >>= 8) bucket[byte * 256 + (h & 255)] += xi;
      }
    }
  }

  Projections result() const {
    Projections p{};
    for (int pos = 0; pos < kProjections / 8; ++pos)
      for (int v = 0; v < 256; ++v) {
        const double s = buckets_[static_cast<size_t>(pos) * 256 + v];
        if (s == 0) continue;
        for (int b = 0; b < 8; ++b) p[8 * pos + b] += ((v >> b) & 1) ? -s : s;
      }
    return p;
  }

 private:
  uint64_t key_;
  std::vector<double> buckets_;  // [byte position][byte value]
};

// One element's share of a tensor hash: summed (mod 2^64) over a set of elements, equal sums mean
// equal float32 values bit for bit (up to a 2^-64 chance). `index` is the row-major flat index.
inline uint64_t element_hash(int64_t index, float x) {
  return splitmix64_mix((static_cast<uint64_t>(index) << 32) | std::bit_cast<uint32_t>(x));
}

}  // namespace cpuft::golden
