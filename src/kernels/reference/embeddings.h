// Scalar reference: BERT embeddings sum and its scatter-add backward.
#pragma once

#include <cstdint>

namespace cpuft::reference {

// out(N,D) = word[ids] + pos[pos_ids] + type[type_ids]; ids, pos_ids, type_ids: (N).
// type == nullptr (a family without token types): out = word[ids] + pos[pos_ids].
template <typename T>
void embeddings_forward(T* out, const T* word, const T* pos, const T* type, const int32_t* ids,
                        const int32_t* pos_ids, const int32_t* type_ids, int64_t N, int64_t D) {
  for (int64_t i = 0; i < N; ++i) {
    const T* w = word + int64_t{ids[i]} * D;
    const T* p = pos + int64_t{pos_ids[i]} * D;
    if (type == nullptr) {
      for (int64_t j = 0; j < D; ++j) out[i * D + j] = w[j] + p[j];
      continue;
    }
    const T* t = type + int64_t{type_ids[i]} * D;
    for (int64_t j = 0; j < D; ++j) out[i * D + j] = w[j] + p[j] + t[j];
  }
}

// d_word[ids[i]] += d_out[i] (likewise d_pos, d_type unless nullptr), rows in order i = 0..N-1.
// (accumulate)
template <typename T>
void embeddings_backward(T* d_word, T* d_pos, T* d_type, const T* d_out, const int32_t* ids,
                         const int32_t* pos_ids, const int32_t* type_ids, int64_t N, int64_t D) {
  for (int64_t i = 0; i < N; ++i) {
    for (int64_t j = 0; j < D; ++j) {
      const T g = d_out[i * D + j];
      d_word[int64_t{ids[i]} * D + j] += g;
      d_pos[int64_t{pos_ids[i]} * D + j] += g;
      if (d_type != nullptr) d_type[int64_t{type_ids[i]} * D + j] += g;
    }
  }
}

}  // namespace cpuft::reference
