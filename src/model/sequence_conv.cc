#include "model/sequence_conv.h"

namespace cpuft {

void sequence_conv_gather(float* cols, const float* x, const int64_t* offsets, int64_t B, int64_t D,
                          int64_t k) {
  const int64_t half = (k - 1) / 2;
#pragma omp parallel for schedule(dynamic)
  for (int64_t s = 0; s < B; ++s) {
    const int64_t begin = offsets[s], end = offsets[s + 1];
    for (int64_t i = begin; i < end; ++i) {
      float* row = cols + i * D * k;
      for (int64_t t = 0; t < k; ++t) {
        const int64_t j = i + t - half;  // the input row this tap reads
        if (j < begin || j >= end) {
          for (int64_t c = 0; c < D; ++c) row[c * k + t] = 0.0f;
        } else {
          const float* in = x + j * D;
          for (int64_t c = 0; c < D; ++c) row[c * k + t] = in[c];
        }
      }
    }
  }
}

void sequence_conv_scatter(float* d_x, const float* d_cols, const int64_t* offsets, int64_t B,
                           int64_t D, int64_t k) {
  const int64_t half = (k - 1) / 2;
  // Row j of d_x gathers from the rows i = j - t + half that read it: a thread owns whole
  // sequences, and the taps are added in one order whatever the thread count.
#pragma omp parallel for schedule(dynamic)
  for (int64_t s = 0; s < B; ++s) {
    const int64_t begin = offsets[s], end = offsets[s + 1];
    for (int64_t j = begin; j < end; ++j) {
      float* out = d_x + j * D;
      for (int64_t t = 0; t < k; ++t) {
        const int64_t i = j - t + half;
        if (i < begin || i >= end) continue;
        const float* row = d_cols + i * D * k;
        for (int64_t c = 0; c < D; ++c) out[c] += row[c * k + t];
      }
    }
  }
}

}  // namespace cpuft
