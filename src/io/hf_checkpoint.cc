#include "io/hf_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/check.h"
#include "core/rng.h"
#include "core/stats.h"
#include "model/family.h"

namespace cpuft {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += str(i ? ", " : "", shape[i]);
  return text + "]";
}

bool is_float(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F64;
}

// The head is what *ForSequenceClassification creates when a checkpoint lacks it (BERT's pooler
// included: BertForSequenceClassification initialises it too).
bool initialised_when_missing(const ParamSpec& spec, const ModelConfig& config) {
  return spec.layer >= pooler_layer(config);
}

// ModernBertPreTrainedModel._init_weights: "out" layers (head.dense) get initializer_range /
// sqrt(2 L), the classifier hidden_size^-0.5 ("final_out"), the others initializer_range.
double modernbert_init_stddev(const std::string& name, const ModelConfig& config) {
  if (name == "classifier.weight") return 1.0 / std::sqrt(static_cast<double>(config.hidden_size));
  if (name == "head.dense.weight")
    return config.initializer_range /
           std::sqrt(2.0 * static_cast<double>(config.num_hidden_layers));
  return config.initializer_range;
}

}  // namespace

LoadReport load_hf_weights(std::span<const SafetensorsFile> files, const ParamLayout& layout,
                           const ModelConfig& config, float* params, const LoadOptions& options) {
  CPUFT_REQUIRE(!files.empty(), "no weight files to load");
  LoadReport report;
  std::map<std::string, std::string> source_of;  // layout name -> file name
  for (const SafetensorsFile& file : files)
    for (const TensorInfo& tensor : file.tensors()) {
      if (!tensor.name.starts_with(options.name_prefix)) continue;
      const std::string stripped = tensor.name.substr(options.name_prefix.size());
      const std::string name = canonical_param_name(stripped, layout.tables());
      const ParamSpec* spec = name.empty() ? nullptr : layout.find(name);
      if (spec == nullptr) {
        CPUFT_REQUIRE(name.empty() || !contradicts_config(name, layout.tables()), file.label(),
                      ": tensor '", tensor.name, "' has no place in a ",
                      family_spec(config.family).model_type, " model with this config (",
                      config.num_hidden_layers, " layers, ", config.num_labels, " labels)");
        report.ignored.push_back(tensor.name);
        continue;
      }
      auto [it, inserted] = source_of.emplace(name, tensor.name);
      CPUFT_REQUIRE(inserted, file.label(), ": tensors '", it->second, "' and '", tensor.name,
                    "' both name parameter '", name, "'");
      CPUFT_REQUIRE(tensor.shape == spec->shape, file.label(), ": tensor '", tensor.name,
                    "' has shape ", shape_text(tensor.shape), ", the config needs ",
                    shape_text(spec->shape));
      CPUFT_REQUIRE(is_float(tensor.dtype), file.label(), ": tensor '", tensor.name, "' has dtype ",
                    dtype_name(tensor.dtype), "; expected F32, F16, BF16 or F64");
      file.read_f32(tensor, params + spec->offset);
    }

  for (const ParamSpec& spec : layout.specs()) {
    if (source_of.contains(spec.name)) continue;
    CPUFT_REQUIRE(initialised_when_missing(spec, config), files.front().label(),
                  ": missing tensor '", spec.name, "'",
                  files.size() > 1 ? " (in every shard)" : "");
    float* out = params + spec.offset;
    if (spec.name.ends_with(".bias")) {
      std::fill_n(out, spec.numel, 0.0f);
    } else if (spec.kind == ParamKind::norm_weight) {  // ModernBERT's head.norm: nn.LayerNorm's 1
      std::fill_n(out, spec.numel, 1.0f);
    } else {
      // normal(0, initializer_range), as BertPreTrainedModel._init_weights does for nn.Linear;
      // ModernBERT's draws are truncated at initializer_cutoff_factor deviations, with its own
      // deviations for the head (modernbert_init_stddev).
      const RngKey key{options.init_seed, fnv1a64(spec.name)};
      const double stddev = config.family == Family::modernbert
                                ? modernbert_init_stddev(spec.name, config)
                                : config.initializer_range;
      const double cutoff =
          config.family == Family::modernbert ? config.initializer_cutoff_factor : 0.0;  // none
      // Truncated: each element redraws from its own 64 counters until inside the cutoff (64
      // misses, 0.046^64, give 0).
      const uint64_t draws = cutoff > 0 ? 64 : 1;
      for (int64_t i = 0; i < spec.numel; ++i) {
        const uint64_t first = static_cast<uint64_t>(i) * draws;
        double x = normal_at(key, first);
        for (uint64_t k = 1; k < draws && std::abs(x) > cutoff; ++k) x = normal_at(key, first + k);
        if (cutoff > 0 && std::abs(x) > cutoff) x = 0;
        out[i] = static_cast<float>(stddev * x);
      }
    }
    report.initialised.push_back(spec.name);
  }
  return report;
}

void save_hf_weights(const std::string& path, const ParamLayout& layout, const float* params) {
  std::vector<TensorToWrite> tensors;
  tensors.reserve(layout.specs().size());
  for (const ParamSpec& spec : layout.specs())
    tensors.push_back(TensorToWrite{spec.name, spec.shape, params + spec.offset});
  write_safetensors(path, tensors, {{"format", "pt"}});
}

}  // namespace cpuft
