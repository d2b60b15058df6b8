// Helpers shared by the golden tests: fixtures written by tools/make_goldens.py from Hugging Face
// transformers + torch (see tests/fixtures/README.md for the tensor names).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "io/safetensors.h"
#include "model/batch.h"
#include "model/bert_config.h"
#include "test_paths.h"

namespace cpuft::golden {

using cpuft::testing::fixture_path;

// Packs the fixture's padded batch (padding only at the end of each row) into a Batch.
inline Batch batch_from_fixture(const SafetensorsFile& file, const BertConfig& config) {
  const TensorInfo* ids_info = file.find("input.input_ids");
  CPUFT_REQUIRE(ids_info != nullptr && ids_info->shape.size() == 2, "fixture lacks input_ids");
  const int64_t B = ids_info->shape[0], T = ids_info->shape[1];
  const std::vector<int64_t> ids = file.read_i64("input.input_ids");
  const std::vector<int64_t> types = file.read_i64("input.token_type_ids");
  const std::vector<int64_t> mask = file.read_i64("input.attention_mask");
  Batch batch;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> row_ids, row_types;
    for (int64_t t = 0; t < T; ++t) {
      if (mask[b * T + t] == 0) continue;
      CPUFT_REQUIRE(static_cast<int64_t>(row_ids.size()) == t, "padding not at the end");
      row_ids.push_back(static_cast<int32_t>(ids[b * T + t]));
      row_types.push_back(static_cast<int32_t>(types[b * T + t]));
    }
    batch.add_sequence(row_ids, row_types);
  }
  const TensorInfo* labels = file.find("input.labels");
  CPUFT_REQUIRE(labels != nullptr, "fixture lacks labels");
  if (config.is_regression()) {
    batch.targets = file.read_f32("input.labels");
  } else {
    for (int64_t label : file.read_i64("input.labels"))
      batch.labels.push_back(static_cast<int32_t>(label));
  }
  return batch;
}

inline double l2(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return std::sqrt(s);
}

// ||a - b|| / ||b|| (0 when both are zero).
inline double relative_l2(const float* a, const float* b, int64_t n) {
  double diff = 0, ref = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    diff += d * d;
    ref += static_cast<double>(b[i]) * b[i];
  }
  if (ref == 0) return diff == 0 ? 0 : INFINITY;
  return std::sqrt(diff / ref);
}

// max |a - b| / max |b|.
inline double relative_max(const float* a, const float* b, int64_t n) {
  double diff = 0, ref = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    ref = std::max(ref, std::abs(static_cast<double>(b[i])));
  }
  return ref == 0 ? diff : diff / ref;
}

inline nlohmann::json metadata_json(const SafetensorsFile& file, const std::string& key) {
  auto it = file.metadata().find(key);
  CPUFT_REQUIRE(it != file.metadata().end(), file.label(), ": metadata lacks '", key, "'");
  return nlohmann::json::parse(it->second);
}

// Gradients whose exact value is 0 (every attention.self.key.bias: it adds q.b_k to all scores of a
// query row, which softmax ignores). Any fp32 implementation returns rounding noise there.
inline std::vector<std::string> zero_true_grad(const SafetensorsFile& file) {
  return metadata_json(file, "zero_true_grad").get<std::vector<std::string>>();
}
inline bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A gradient tensor matches when its error is within 1e-4 of its own norm, plus a floor of 1e-6 of
// the global gradient norm: without the floor a gradient that is zero in exact arithmetic (or
// cancels to near zero) has no meaningful relative error. The floor is orders of magnitude below
// any gradient that matters to the update.
constexpr double kGradRelTolerance = 1e-4;
constexpr double kGradFloorOfGlobalNorm = 1e-6;

}  // namespace cpuft::golden
