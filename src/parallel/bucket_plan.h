// BucketPlan: which gradient floats are all-reduced together, and in which order.
//
// Input: the model's layers in backward order (the order their gradients become final), each with
// its [begin, end) float range in the flat gradient buffer. Parameters are stored in forward order,
// so backward order walks the buffer from the end towards the start, and consecutive layers are
// adjacent (up to alignment padding). A bucket is a run of consecutive layers, hence one contiguous
// float range [begin, end) that also covers the padding between its layers.
//
// Sizing (PyTorch DDP's rule, compute_bucket_assignment_by_size): layers are added to the open
// bucket until its size reaches the cap, then the bucket is closed. The first bucket uses a small
// cap (DDP: 1 MB) so that communication starts after the first layers of backward (for BERT:
// classifier + pooler); later buckets use bucket_cap_bytes (DDP: 25 MB, --bucket_cap_mb), which
// for BERT-base (≈ 28 MB per encoder layer) is one encoder layer per bucket (cpuft's default is
// smaller still: step/train_step.h, make_bucket_plan). The embeddings, last
// in backward, close the last bucket. A bucket exceeds its cap by at most its last layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cpuft {

struct LayerRange {
  int layer = 0;      // the model's layer id (any int; BERT: -1 embeddings, 0..L-1, L, L+1)
  int64_t begin = 0;  // float offsets in the flat gradient buffer
  int64_t end = 0;
};

struct Bucket {
  int64_t begin = 0;  // float range [begin, end), padding between its layers included
  int64_t end = 0;
  std::vector<int> layers;  // in backward order
  int64_t floats() const { return end - begin; }
};

inline constexpr int64_t kDefaultBucketCapBytes = 25 * 1024 * 1024;      // DDP bucket_cap_mb=25
inline constexpr int64_t kDefaultFirstBucketCapBytes = 1 * 1024 * 1024;  // DDP's first bucket

class BucketPlan {
 public:
  // Throws cpuft::Error when a range is empty or inverted, a layer appears twice, or the ranges are
  // not in descending memory order without overlap (then buckets could not be contiguous).
  BucketPlan(std::vector<LayerRange> ranges_in_backward_order,
             int64_t bucket_cap_bytes = kDefaultBucketCapBytes,
             int64_t first_bucket_cap_bytes = kDefaultFirstBucketCapBytes);

  const std::vector<Bucket>& buckets() const { return buckets_; }  // launch order
  int num_buckets() const { return static_cast<int>(buckets_.size()); }
  // Index of the bucket holding `layer` (CPUFT_CHECK if unknown).
  int bucket_of(int layer) const;
  const std::vector<LayerRange>& ranges() const { return ranges_; }
  // Multi-line table "bucket  layers  floats  MB", for logs and docs.
  std::string describe() const;
  // One line that must be equal on every rank (layer ids and ranges): compare with
  // all_gather_string before the first step.
  std::string fingerprint() const;

 private:
  std::vector<LayerRange> ranges_;
  std::vector<Bucket> buckets_;
  std::vector<int> layer_ids_;  // parallel to bucket_index_, for bucket_of
  std::vector<int> bucket_index_;
};

}  // namespace cpuft
