// A 1-D convolution along the tokens of packed sequences (DeBERTa-v2's ConvLayer, nn.Conv1d with
// padding (k - 1) / 2, one group), as one matrix product:
//
//   out(N, D) = cols(N, D k) W^T + b       W (D, D, k) as torch stores it, read as (D, D k)
//   cols[i, c k + t] = x[i + t - (k - 1) / 2, c]   when that row is in the sequence of row i,
//                      0 otherwise (the zero padding at each sequence's two ends; a window never
//                      reaches into the neighbouring sequence)
//
// Laying the columns out channel-major, tap-minor (c k + t) makes torch's weight the product's
// (out, in) matrix as it is, so a conv is a LinearPlans product with no weight reordering.
// Backward: d_W += d_out^T cols, d_cols = d_out W, then sequence_conv_scatter adds d_cols back.
#pragma once

#include <cstdint>

namespace cpuft {

// cols (N, D k) from x (N, D) of B packed sequences (offsets (B + 1)); k odd.
void sequence_conv_gather(float* cols, const float* x, const int64_t* offsets, int64_t B, int64_t D,
                          int64_t k);
// d_x (N, D) ACCUMULATES the transposed gather of d_cols (N, D k).
void sequence_conv_scatter(float* d_x, const float* d_cols, const int64_t* offsets, int64_t B,
                           int64_t D, int64_t k);

}  // namespace cpuft
