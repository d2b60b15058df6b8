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

// How the sequences of a batch are numbered in their optimizer step's global batch
// (Batch::sample_ids, which key the dropout masks): row j of the batch is number first + j *
// stride.
struct SampleNumbering {
  int64_t first = 0;
  int64_t stride = 1;
};

// Fills `batch` with examples `rows` (labels or scores too when the set has them), numbered as
// `numbering` says.
void fill_batch(Batch& batch, const EncodedDataset& data, std::span<const int64_t> rows,
                bool regression, SampleNumbering numbering = {});

// The order of examples in `epoch`: a seeded permutation (seed, epoch), or, with group_by_length,
// HF's LengthGroupedSampler scheme (megabatches of 50 batches, each sorted by length, longest
// megabatch first), so that batches hold sequences of similar length.
std::vector<int64_t> epoch_order(const EncodedDataset& data, uint64_t seed, int64_t epoch,
                                 bool group_by_length, int64_t batch_size);

// This rank's share of an epoch order, as torch's DistributedSampler takes it: the order is padded
// to a multiple of world_size by repeating its beginning, then rank r takes elements r, r + world,
// r + 2 world, ... Every rank gets the same count, so every rank runs the same number of steps.
std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int rank, int world_size);

// Batches a rank runs in one epoch over `examples`: each rank sees ceil(examples / world) of them
// (shard_order's padding); drop_last drops the last incomplete batch. May be 0.
int64_t batches_per_epoch(int64_t examples, int world_size, int64_t batch, bool drop_last);

// Optimizer steps in one epoch: the batches in groups of `accumulation` (the last group may be
// short), at least 1.
int64_t steps_per_epoch(int64_t examples, int world_size, int64_t batch, int64_t accumulation,
                        bool drop_last);

}  // namespace cpuft
