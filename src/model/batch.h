// Batch: a list of sequences of different lengths, packed end to end (no padding).
//
// The dense layers run on all N real tokens at once; attention runs per sequence. A padded batch is
// the special case where every sequence has the same length. Position ids are the model's to count
// (model/family.h: from 0 in each sequence, or after padding_idx as RoBERTa's).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cpuft {

struct Batch {
  std::vector<int32_t> input_ids;       // (N) all sequences concatenated
  std::vector<int32_t> token_type_ids;  // (N) ignored by families without token types
  std::vector<int64_t> seq_offsets{
      0};                       // (B+1) sequence s is tokens [seq_offsets[s], seq_offsets[s+1])
  std::vector<int32_t> labels;  // (B) class ids (classification)
  std::vector<float> targets;   // (B) scores (regression)
  // (B) or empty: each sequence's number in the optimizer step's global batch (over all ranks and
  // micro-batches), which keys its dropout masks (model/packed_dropout.h); the training loop
  // numbers them so that the masks do not depend on how a step is split. Empty: 0..B-1.
  std::vector<int64_t> sample_ids;

  int64_t num_tokens() const { return static_cast<int64_t>(input_ids.size()); }
  int64_t num_sequences() const { return static_cast<int64_t>(seq_offsets.size()) - 1; }
  int64_t length(int64_t s) const { return seq_offsets[s + 1] - seq_offsets[s]; }

  // Keeps the capacity, so a batch reused step after step allocates nothing once warm.
  void clear() {
    input_ids.clear();
    token_type_ids.clear();
    seq_offsets.assign(1, 0);
    labels.clear();
    targets.clear();
    sample_ids.clear();
  }
  void add_sequence(std::span<const int32_t> ids, std::span<const int32_t> types) {
    for (size_t i = 0; i < ids.size(); ++i) {
      input_ids.push_back(ids[i]);
      token_type_ids.push_back(types[i]);
    }
    seq_offsets.push_back(num_tokens());
  }
};

}  // namespace cpuft
