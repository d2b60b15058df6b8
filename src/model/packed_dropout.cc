#include "model/packed_dropout.h"

#include "core/profile.h"

namespace cpuft {

namespace {

using DropoutKernel = void (*)(float*, const float*, float, RngKey, int64_t);

void per_sequence(DropoutKernel kernel, float* y, const float* x, float p, RngKey key,
                  const PackedRows& rows) {
  auto first_row = [&](int64_t s) { return rows.row_offsets ? rows.row_offsets[s] : s; };
  if (p == 0.0f) {  // a copy (or nothing), one call over the whole tensor
    kernel(y, x, 0.0f, key, first_row(rows.B) * rows.width);
    return;
  }
  // Sequences in parallel: each kernel call is one sequence, too short to split further.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t s = 0; s < rows.B; ++s) {
    const int64_t begin = first_row(s) * rows.width,
                  n = (first_row(s + 1) - first_row(s)) * rows.width;
    kernel(y + begin, x + begin, p, sequence_key(key, rows.sample_ids[s]), n);
  }
}

}  // namespace

void packed_dropout_forward(const KernelTable& k, float* y, const float* x, float p, RngKey key,
                            const PackedRows& rows) {
  CPUFT_PROFILE("dropout.fwd");
  per_sequence(k.dropout_forward, y, x, p, key, rows);
}

void packed_dropout_backward(const KernelTable& k, float* d_x, const float* d_y, float p,
                             RngKey key, const PackedRows& rows) {
  CPUFT_PROFILE("dropout.bwd");
  per_sequence(k.dropout_backward, d_x, d_y, p, key, rows);
}

}  // namespace cpuft
