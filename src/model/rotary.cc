#include "model/rotary.h"

#include <cmath>

#include "core/check.h"
#include "core/profile.h"

namespace cpuft {

RotaryTable::RotaryTable(double theta, int64_t head_dim, int64_t max_positions)
    : half_(head_dim / 2),
      max_positions_(max_positions),
      cos_(static_cast<size_t>(max_positions * (head_dim / 2))),
      sin_(cos_.size()) {
  CPUFT_CHECK(head_dim % 2 == 0, "rotary embeddings need an even head size, got ", head_dim);
  // torch: inv_freq = 1.0 / (theta ** (arange(0, Dh, 2, float32) / Dh)), then freqs =
  // position.float() * inv_freq, each step rounded to float32; cos and sin of the float32 angle.
  std::vector<float> inv_freq(static_cast<size_t>(half_));
  for (int64_t j = 0; j < half_; ++j) {
    const float exponent = static_cast<float>(2 * j) / static_cast<float>(head_dim);
    inv_freq[j] = 1.0f / std::pow(static_cast<float>(theta), exponent);
  }
  for (int64_t t = 0; t < max_positions; ++t)
    for (int64_t j = 0; j < half_; ++j) {
      const float angle = static_cast<float>(t) * inv_freq[j];
      cos_[t * half_ + j] = std::cos(angle);
      sin_[t * half_ + j] = std::sin(angle);
    }
}

namespace {

// Rotates the Dh/2 pairs (x[j], x[j + half]) of each head of the query and key parts by the
// angle (sign +1) or its opposite (sign -1):
//   x1' = x1 cos - x2 sin,  x2' = x2 cos + x1 sin     (HF: x * cos + rotate_half(x) * sin)
void rotate(float* qkv, const int64_t* seq_offsets, int64_t B, const AttentionDims& dims,
            const RotaryTable& table, float sign) {
  const int64_t D = dims.D, H = dims.H, Dh = dims.Dh, half = Dh / 2;
  CPUFT_CHECK(table.half() == half, "rotary table for head size ", 2 * table.half(), ", not ", Dh);
  for (int64_t s = 0; s < B; ++s)
    CPUFT_CHECK(seq_offsets[s + 1] - seq_offsets[s] <= table.max_positions(), "sequence of ",
                seq_offsets[s + 1] - seq_offsets[s], " tokens, rotary table of ",
                table.max_positions());
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < B; ++s) {
    for (int64_t i = seq_offsets[s]; i < seq_offsets[s + 1]; ++i) {
      const int64_t position = i - seq_offsets[s];
      const float* c = table.cos(position);
      const float* sn = table.sin(position);
      float* row = qkv + i * 3 * D;
      for (int64_t head = 0; head < 2 * H; ++head) {  // H query heads, then H key heads
        float* x = row + head * Dh;
        for (int64_t j = 0; j < half; ++j) {
          const float x1 = x[j], x2 = x[j + half], sin_j = sign * sn[j];
          x[j] = x1 * c[j] - x2 * sin_j;
          x[j + half] = x2 * c[j] + x1 * sin_j;
        }
      }
    }
  }
}

}  // namespace

void rotary_forward(float* qkv, const int64_t* seq_offsets, int64_t B, const AttentionDims& dims,
                    const RotaryTable& table) {
  CPUFT_PROFILE("rotary.fwd");
  rotate(qkv, seq_offsets, B, dims, table, 1.0f);
}

void rotary_backward(float* d_qkv, const int64_t* seq_offsets, int64_t B, const AttentionDims& dims,
                     const RotaryTable& table) {
  CPUFT_PROFILE("rotary.bwd");
  // The transpose of a rotation is the rotation by the opposite angle.
  rotate(d_qkv, seq_offsets, B, dims, table, -1.0f);
}

}  // namespace cpuft
