// Dropout on packed tensors, one random stream per sequence.
//
// Each sequence's mask is drawn from sequence_key(key, sample_ids[s]) (core/rng.h), with element
// indices counted from the sequence's first element. sample_ids[s] is the sequence's number in the
// optimizer step's global batch, so a sequence gets the same mask whichever rank and micro-batch
// it lands in: a step split as 2 ranks x 4 sequences, 1 rank x 8, or 1 rank x 4 x 2 accumulation
// steps draws the same masks, and a run resumed on another world size continues exactly.
#pragma once

#include <cstdint>

#include "core/rng.h"
#include "kernels/kernels.h"

namespace cpuft {

// The rows of a packed tensor that belong to each of its B sequences.
struct PackedRows {
  int64_t B;
  const int64_t* row_offsets;  // (B+1) sequence s is rows [row_offsets[s], row_offsets[s+1]);
                               // nullptr: one row per sequence (the head's (B, D) tensors)
  const int64_t* sample_ids;   // (B)
  int64_t width;               // floats per row
};

// y = dropout(x) (y may alias x); p == 0 copies without drawing.
void packed_dropout_forward(const KernelTable& k, float* y, const float* x, float p, RngKey key,
                            const PackedRows& rows);
// d_x = d_y masked and scaled as the forward's y (d_x may alias d_y).
void packed_dropout_backward(const KernelTable& k, float* d_x, const float* d_y, float p,
                             RngKey key, const PackedRows& rows);

}  // namespace cpuft
