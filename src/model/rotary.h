// Rotary position embeddings (RoPE) on packed sequences, as transformers' ModernBERT applies them
// (apply_rotary_pos_emb with rotate_half): each head's query and key rows are rotated in pairs of
// dimensions (j, j + Dh/2) by the angle position * inv_freq[j], the position counted from 0 in
// each sequence. A rotation is orthogonal, so backward rotates the gradient by the opposite angle.
#pragma once

#include <cstdint>
#include <vector>

#include "model/attention.h"

namespace cpuft {

// cos and sin of position * inv_freq[j] for positions [0, max_positions) and j < Dh/2, with
// inv_freq[j] = 1 / theta^(2j / Dh), computed in float32 the way torch computes HF's buffers.
class RotaryTable {
 public:
  RotaryTable() = default;
  RotaryTable(double theta, int64_t head_dim, int64_t max_positions);
  const float* cos(int64_t position) const { return cos_.data() + position * half_; }
  const float* sin(int64_t position) const { return sin_.data() + position * half_; }
  int64_t half() const { return half_; }
  int64_t max_positions() const { return max_positions_; }

 private:
  int64_t half_ = 0, max_positions_ = 0;
  std::vector<float> cos_, sin_;  // (max_positions, Dh/2)
};

// Rotates the query and key columns of qkv (N, 3D: queries at [0, D), keys at [D, 2D)) in place,
// token i of sequence s at position i - seq_offsets[s].
void rotary_forward(float* qkv, const int64_t* seq_offsets, int64_t B, const AttentionDims& dims,
                    const RotaryTable& table);
// The gradient through the same rotation: d_qkv's query and key columns rotated back in place.
void rotary_backward(float* d_qkv, const int64_t* seq_offsets, int64_t B, const AttentionDims& dims,
                     const RotaryTable& table);

}  // namespace cpuft
