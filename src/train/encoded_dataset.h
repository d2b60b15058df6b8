// EncodedDataset: a split tokenized once, up front, as token ids packed end to end; and the
// sampling that turns it into batches.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/data_reader.h"
#include "data/tokenizer.h"
#include "model/batch.h"

namespace cpuft {

struct EncodedDataset {
  std::vector<int32_t> input_ids;  // all examples concatenated
  std::vector<int32_t> token_type_ids;
  std::vector<int64_t> offsets{0};  // example i is [offsets[i], offsets[i+1])
  std::vector<int32_t> labels;      // classification; -1 when unlabelled
  std::vector<float> scores;        // regression
  std::vector<int64_t> indices;     // the example's index (test id or row number)
  bool has_labels = false;

  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t length(int64_t i) const { return offsets[i + 1] - offsets[i]; }
  int64_t max_length() const;
  // The most tokens `count` of the examples can hold together: the sum of the `count` longest
  // lengths (all of them when count >= size()). No batch of `count` examples holds more.
  int64_t longest_tokens(int64_t count) const;
};

// Tokenizes every example ([CLS] a [SEP] (b [SEP]), longest_first truncation to max_length),
// in parallel; the result does not depend on the thread count.
EncodedDataset encode_dataset(const Dataset& dataset, const Tokenizer& tokenizer, int max_length);

// Fills `batch` with examples `rows` (labels or scores too when the set has them). `numbers`: each
// row's number in its optimizer step's global batch (Batch::sample_ids, which key the dropout
// masks), as many as rows; empty: 0, 1, 2, ...
void fill_batch(Batch& batch, const EncodedDataset& data, std::span<const int64_t> rows,
                bool regression, std::span<const int64_t> numbers = {});

// The order of examples in `epoch`: a seeded permutation (seed, epoch), or, with group_by_length,
// HF's LengthGroupedSampler scheme (megabatches of 50 batches, each sorted by length, longest
// megabatch first), so that batches hold sequences of similar length.
std::vector<int64_t> epoch_order(const EncodedDataset& data, uint64_t seed, int64_t epoch,
                                 bool group_by_length, int64_t batch_size);

// An epoch order padded to a multiple of world_size by repeating its beginning, as torch's
// DistributedSampler pads it: every rank then gets the same count of examples and runs the same
// number of steps. Micro-batch k of the epoch is elements [k b w, (k + 1) b w) of it (b examples
// per rank, w ranks; the last may be shorter, by a multiple of w).
std::vector<int64_t> pad_to_ranks(const std::vector<int64_t>& order, int world_size);

// Deals the `lengths` of one micro-batch's examples (a multiple of world_size of them) to the
// ranks, the same count to each, with their token counts as even as a greedy deal makes them: the
// longest first (ties: the earlier), each to the rank with the fewest tokens that still has room
// (ties: the lower rank). Returns each example's rank. The same on every rank: no communication.
//
// Why: with packed batches a rank's step time follows its tokens, and every rank waits for the
// slowest one at the gradient exchange. torch's DistributedSampler takes elements r, r + w, ...;
// with MRPC's lengths that left one of 2 one-core MiniLM ranks waiting 70-130 ms after backward in
// some steps (docs/scaling.md). The global batch is the same examples either way, and each keeps
// its number in the step, so the mean loss, the gradient and the dropout masks are unchanged.
std::vector<int> deal_by_tokens(std::span<const int64_t> lengths, int world_size);

// This rank's rows of a micro-batch and their numbers in the step: `window` is the micro-batch's
// examples (elements of pad_to_ranks' order), numbered first_number, first_number + 1, ... in
// the step, dealt by deal_by_tokens; rows in window order.
struct RankRows {
  std::vector<int64_t> rows;
  std::vector<int64_t> numbers;
};
RankRows rank_rows(const EncodedDataset& data, std::span<const int64_t> window,
                   int64_t first_number, int rank, int world_size);

// Batches a rank runs in one epoch over `examples`: each rank sees ceil(examples / world) of them
// (pad_to_ranks' padding); drop_last drops the last incomplete batch. May be 0.
int64_t batches_per_epoch(int64_t examples, int world_size, int64_t batch, bool drop_last);

// Optimizer steps in one epoch: the batches in groups of `accumulation` (the last group may be
// short), at least 1.
int64_t steps_per_epoch(int64_t examples, int world_size, int64_t batch, int64_t accumulation,
                        bool drop_last);

}  // namespace cpuft
