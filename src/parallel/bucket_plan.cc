#include "parallel/bucket_plan.h"

#include <algorithm>
#include <cstdio>

#include "core/check.h"

namespace cpuft {

BucketPlan::BucketPlan(std::vector<LayerRange> ranges, int64_t bucket_cap_bytes,
                       int64_t first_bucket_cap_bytes)
    : ranges_(std::move(ranges)) {
  CPUFT_REQUIRE(!ranges_.empty(), "bucket plan: no layers");
  CPUFT_REQUIRE(bucket_cap_bytes > 0 && first_bucket_cap_bytes > 0,
                "bucket plan: bucket caps must be positive (got ", bucket_cap_bytes, " and ",
                first_bucket_cap_bytes, " bytes)");
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const LayerRange& r = ranges_[i];
    CPUFT_REQUIRE(r.begin >= 0 && r.begin < r.end, "bucket plan: layer ", r.layer,
                  " has an empty or inverted range [", r.begin, ", ", r.end, ")");
    for (size_t j = 0; j < i; ++j)
      CPUFT_REQUIRE(ranges_[j].layer != r.layer, "bucket plan: layer ", r.layer, " appears twice");
    if (i > 0) {
      CPUFT_REQUIRE(r.end <= ranges_[i - 1].begin, "bucket plan: layer ", r.layer, " [", r.begin,
                    ", ", r.end, ") is not below layer ", ranges_[i - 1].layer, " [",
                    ranges_[i - 1].begin, ", ", ranges_[i - 1].end,
                    ") in memory; backward order must walk the buffer from the end to the start");
    }
  }
  Bucket open;
  auto close = [&] {
    buckets_.push_back(open);
    open = Bucket{};
  };
  for (const LayerRange& r : ranges_) {
    if (open.layers.empty()) {
      open.begin = r.begin;
      open.end = r.end;
    }
    open.begin = r.begin;  // backward order: each layer lies below the previous one
    open.layers.push_back(r.layer);
    const int64_t cap = buckets_.empty() ? first_bucket_cap_bytes : bucket_cap_bytes;
    if (open.floats() * static_cast<int64_t>(sizeof(float)) >= cap) close();
  }
  if (!open.layers.empty()) close();
  for (int b = 0; b < num_buckets(); ++b) {
    for (int layer : buckets_[static_cast<size_t>(b)].layers) {
      layer_ids_.push_back(layer);
      bucket_index_.push_back(b);
    }
  }
}

int BucketPlan::bucket_of(int layer) const {
  for (size_t i = 0; i < layer_ids_.size(); ++i)
    if (layer_ids_[i] == layer) return bucket_index_[i];
  CPUFT_CHECK(false, "layer ", layer, " is not in the bucket plan");
  return -1;
}

std::string BucketPlan::describe() const {
  std::string text = "bucket  layers (backward order)        floats        MB\n";
  for (size_t b = 0; b < buckets_.size(); ++b) {
    std::string layers;
    for (int layer : buckets_[b].layers) {
      if (!layers.empty()) layers += ',';
      layers += std::to_string(layer);
    }
    char line[160];
    std::snprintf(line, sizeof line, "%6zu  %-30s %10lld %9.2f\n", b, layers.c_str(),
                  static_cast<long long>(buckets_[b].floats()),
                  static_cast<double>(buckets_[b].floats()) * 4.0 / (1024.0 * 1024.0));
    text += line;
  }
  return text;
}

std::string BucketPlan::fingerprint() const {
  std::string text;
  for (const Bucket& bucket : buckets_) {
    text += str("[", bucket.begin, ",", bucket.end, ":");
    for (int layer : bucket.layers) text += str(layer, ";");
    text += "]";
  }
  return text;
}

}  // namespace cpuft
