// Hugging Face checkpoints (model.safetensors, or its shards) in and out, driven by ParamLayout:
// every family's names as transformers saves them.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/param_layout.h"

namespace cpuft {

struct LoadReport {
  std::vector<std::string> initialised;  // parameters absent from the file, freshly initialised
  std::vector<std::string> ignored;      // tensors in the file that are not model parameters
};

struct LoadOptions {
  // Only tensors whose names start with this are considered, with it stripped ("init." in goldens).
  std::string name_prefix;
  // Seed for parameters that the file lacks and HF initialises (the head).
  uint64_t init_seed = 42;
};

// Fills params[layout.total_floats()] from `files` (one file, or the shards of one checkpoint).
// Names may carry the base model's prefix ("roberta.") or not, and LayerNorm gamma/beta (see
// canonical_param_name); F32/F16/BF16/F64 are converted to F32. Every shape is checked against the
// layout. A missing head (a pretrained checkpoint has another or none): initialised as HF does
// (weights normal(0, initializer_range), biases 0) and listed in the report; tensors transformers
// would drop (pretraining heads, RoBERTa's pooler) are listed as ignored. Any other missing
// parameter, a tensor of the wrong shape or dtype, a name that two tensors map to, or a base-model
// tensor the config has no place for: cpuft::Error naming the file and tensor.
LoadReport load_hf_weights(std::span<const SafetensorsFile> files, const ParamLayout& layout,
                           const ModelConfig& config, float* params,
                           const LoadOptions& options = {});
inline LoadReport load_hf_weights(const SafetensorsFile& file, const ParamLayout& layout,
                                  const ModelConfig& config, float* params,
                                  const LoadOptions& options = {}) {
  return load_hf_weights(std::span<const SafetensorsFile>(&file, 1), layout, config, params,
                         options);
}

// Writes every parameter under its *ForSequenceClassification name, F32, atomically.
void save_hf_weights(const std::string& path, const ParamLayout& layout, const float* params);

}  // namespace cpuft
