// Helpers shared by the golden tests: fixtures written by tools/make_goldens.py from Hugging Face
// transformers + torch (see tests/fixtures/README.md for the tensor names).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "io/safetensors.h"
#include "model/batch.h"
#include "model/family.h"
#include "model/model_config.h"
#include "model/model_params.h"
#include "model/param_layout.h"
#include "test_paths.h"

namespace cpuft::golden {

using cpuft::testing::fixture_path;

// Packs the fixture's padded batch (padding only at the end of each row) into a Batch.
inline Batch batch_from_fixture(const SafetensorsFile& file, const ModelConfig& config) {
  const TensorInfo* ids_info = file.find("input.input_ids");
  CPUFT_REQUIRE(ids_info != nullptr && ids_info->shape.size() == 2, "fixture lacks input_ids");
  const int64_t B = ids_info->shape[0], T = ids_info->shape[1];
  const std::vector<int64_t> ids = file.read_i64("input.input_ids");
  // Families without token types (DistilBERT) may store none.
  const std::vector<int64_t> types = file.find("input.token_type_ids") != nullptr
                                         ? file.read_i64("input.token_type_ids")
                                         : std::vector<int64_t>(static_cast<size_t>(B * T), 0);
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

// The fp32 golden tolerances (docs/ARCHITECTURE.md, "Golden tolerances, argued"):
// - every gradient tensor whose exact value is not zero: ||ours - HF|| <= kGradTolerance ||HF||;
// - the gradients in zero_true_grad (exactly zero, rounding noise in any fp32 implementation):
//   ||ours|| <= kZeroGradBound times the global gradient norm of the same step. Measured noise is
//   at most 9e-9 of the global norm (HF and cpuft, every fixture), while a gradient that fails to
//   cancel is of the size of the layer's query bias gradient, >= 1e-3 of the global norm here: the
//   bound sits two orders of magnitude from each.
constexpr double kGradTolerance = 1e-4;
constexpr double kZeroGradBound = 1e-6;

// The fixture's file name, for messages.
inline std::string fixture_name(const SafetensorsFile& file) {
  return std::filesystem::path(file.label()).filename().string();
}

// An F64 (or F32) tensor as doubles.
inline std::vector<double> read_f64(const SafetensorsFile& file, const std::string& name) {
  const TensorInfo* info = file.find(name);
  CPUFT_REQUIRE(info != nullptr, file.label(), ": no tensor '", name, "'");
  std::vector<double> out(static_cast<size_t>(info->numel()));
  if (info->dtype == DType::F64) {
    std::memcpy(out.data(), file.raw(*info).data(), out.size() * sizeof(double));
  } else {
    const std::vector<float> f = file.read_f32(name);
    std::copy(f.begin(), f.end(), out.begin());
  }
  return out;
}

// The spacing of floats at |x| (its unit in the last place).
inline double ulp(float x) {
  const float a = std::abs(x);
  return static_cast<double>(std::nextafter(a, INFINITY)) - a;
}

// The lr of step `step` as HF computes it in double (get_linear_schedule_with_warmup's lambda
// times the base lr, as LambdaLR applies it).
inline double hf_lr(const nlohmann::json& hyper, int step) {
  const int64_t warmup = hyper.at("warmup_steps"), total = hyper.at("total_steps");
  const double factor =
      step < warmup ? static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup))
                    : std::max(0.0, static_cast<double>(total - step) /
                                        static_cast<double>(std::max<int64_t>(1, total - warmup)));
  return hyper.at("lr").get<double>() * factor;
}

// The weight decay HF's Trainer gives a parameter (metadata no_decay: biases and LayerNorm).
inline double hf_weight_decay(const SafetensorsFile& file, const std::string& name) {
  return contains(metadata_json(file, "no_decay").get<std::vector<std::string>>(), name)
             ? 0.0
             : metadata_json(file, "hyper").at("weight_decay").get<double>();
}

// Rows of an embedding table that no token of the batch looks up: their gradient is exactly zero
// at every step, in HF and in cpuft (tools/make_goldens.py asserts that these rows are exactly the
// elements whose HF gradient is 0 at all three steps, attention.self.key.bias aside).
struct UnusedRows {
  const ParamSpec* spec = nullptr;
  int64_t row_size = 0;
  std::vector<int64_t> rows;
};
inline std::vector<UnusedRows> unused_embedding_rows(const ParamLayout& layout,
                                                     const ModelConfig& config,
                                                     const Batch& batch) {
  const FamilySpec& family = family_spec(config.family);
  std::vector<int32_t> positions(static_cast<size_t>(batch.num_tokens()));
  fill_position_ids(positions.data(), batch.input_ids.data(), batch.seq_offsets.data(),
                    batch.num_sequences(), family.positions,
                    static_cast<int32_t>(config.pad_token_id));
  const std::string base = layout.tables().embeddings_prefix;
  struct Table {
    std::string name;
    const std::vector<int32_t>* lookups;
  };
  // The family's lookup tables (word, position and token type, those it has) by their views.
  std::vector<Table> tables;
  for (const auto& e : layout.tables().embeddings) {
    if (e.view == &ModelParams::word_emb) tables.push_back({base + e.name, &batch.input_ids});
    if (e.view == &ModelParams::pos_emb) tables.push_back({base + e.name, &positions});
    if (e.view == &ModelParams::type_emb && family.token_types)
      tables.push_back({base + e.name, &batch.token_type_ids});
  }
  std::vector<UnusedRows> out;
  for (const Table& table : tables) {
    if (layout.find(table.name) == nullptr) continue;  // a table this config lacks (DeBERTa-v3)
    const ParamSpec& spec = layout.at(table.name);
    std::vector<bool> used(static_cast<size_t>(spec.shape[0]), false);
    for (int32_t row : *table.lookups) used.at(static_cast<size_t>(row)) = true;
    UnusedRows u{&spec, spec.numel / spec.shape[0], {}};
    for (int64_t r = 0; r < spec.shape[0]; ++r)
      if (!used[static_cast<size_t>(r)]) u.rows.push_back(r);
    if (!u.rows.empty()) out.push_back(std::move(u));
  }
  return out;
}
inline const UnusedRows* find_unused(const std::vector<UnusedRows>& all, const ParamSpec& spec) {
  for (const UnusedRows& u : all)
    if (u.spec == &spec) return &u;
  return nullptr;
}
// Flags each element of spec's tensor: true where it lies in an unused row.
inline std::vector<bool> unused_mask(const UnusedRows* unused, const ParamSpec& spec) {
  std::vector<bool> mask(static_cast<size_t>(spec.numel), false);
  if (unused != nullptr)
    for (int64_t r : unused->rows)
      std::fill_n(mask.begin() + r * unused->row_size, unused->row_size, true);
  return mask;
}

// The worst ratio of error to tolerance seen by one check, printed as one summary line.
struct Worst {
  std::string check;
  double tolerance;
  double value = 0;
  std::string where = "-";
  void see(double v, const std::string& name) {
    if (v >= value) value = v, where = name;
  }
  void print() const {
    std::printf("[golden] %s: worst %.3g (%s), tolerance %.3g\n", check.c_str(), value,
                where.c_str(), tolerance);
  }
};

}  // namespace cpuft::golden
