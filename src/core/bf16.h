// bfloat16: the upper half of an IEEE fp32 (8 exponent bits, 7 stored mantissa bits). Used only as
// the storage of matrix-product inputs under --bf16 (docs/ARCHITECTURE.md, "bf16"); all other
// arithmetic stays fp32.
#pragma once

#include <bit>
#include <cstdint>

namespace cpuft {

struct bf16 {
  uint16_t bits;
};
static_assert(sizeof(bf16) == 2);

// fp32 -> bf16, round to nearest, ties to even, as torch's Tensor.bfloat16() rounds finite values
// and infinities: subnormals are kept (not flushed), values that round past the largest finite bf16
// become infinity. A NaN stays a quiet NaN with its sign and upper payload (cpuft's choice; torch
// returns one canonical NaN). The scalar twin of the round_to_bf16 kernel.
constexpr bf16 round_to_bf16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return bf16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  // Adding 0x7FFF rounds half-way cases down; the lowest kept bit adds the last 1 for odd ones.
  const uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);
  return bf16{static_cast<uint16_t>(rounded >> 16)};
}

// bf16 -> fp32 is exact.
constexpr float to_float(bf16 x) {
  return std::bit_cast<float>(static_cast<uint32_t>(x.bits) << 16);
}

}  // namespace cpuft
