// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
//
// Why counter-based: a dropout mask is a pure function of (seed, stream, element index), so the
// backward pass regenerates the forward's mask instead of storing it, any thread can produce any
// element, and runs reproduce whatever the thread count.
#pragma once

#include <array>
#include <cstdint>

namespace cpuft {

// Identifies one independent random stream: seed from the user, stream from the call site.
struct RngKey {
  uint64_t seed = 0;
  uint64_t stream = 0;
};

// Stream id for a dropout site: unique per (optimizer step, layer, site). No rank and no
// micro-batch: each sequence draws from its own stream, sequence_key(key, sample), where sample is
// its number in the step's global batch, so the masks do not depend on how a step is split over
// ranks and micro-batches (a run resumed on another world size draws the same masks).
constexpr uint64_t dropout_stream(uint64_t step, uint32_t layer, uint32_t site) {
  return (step << 16) ^ (uint64_t{layer} << 8) ^ uint64_t { site };
}

// The key of one independent sub-stream of `key`, e.g. one sequence of a batch (or one (sequence,
// head) block of attention): the seed mixed with the block number (splitmix64's finaliser), so
// neighbouring blocks get unrelated masks.
constexpr RngKey sequence_key(RngKey key, int64_t block) {
  uint64_t z = key.seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(block + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return RngKey{z ^ (z >> 31), key.stream};
}

// Four 32-bit random words for counter block `block` of stream `key`.
inline std::array<uint32_t, 4> philox4x32(RngKey key, uint64_t block) {
  uint32_t c0 = static_cast<uint32_t>(block), c1 = static_cast<uint32_t>(block >> 32);
  uint32_t c2 = static_cast<uint32_t>(key.stream), c3 = static_cast<uint32_t>(key.stream >> 32);
  uint32_t k0 = static_cast<uint32_t>(key.seed), k1 = static_cast<uint32_t>(key.seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0;
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

// Uniform float in [0, 1) from the top 24 bits of a word.
inline float uniform_from_bits(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// Element i of stream `key` as a uniform float in [0, 1).
inline float uniform_at(RngKey key, uint64_t i) {
  return uniform_from_bits(philox4x32(key, i / 4)[i % 4]);
}

// Standard normal sample i of stream `key` (Box-Muller on two uniforms), for weight init.
float normal_at(RngKey key, uint64_t i);

}  // namespace cpuft
