// Hugging Face BERT checkpoints (model.safetensors) in and out, driven by ParamLayout.
#pragma once

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
  // Seed for parameters that the file lacks and HF initialises (pooler, classifier head).
  uint64_t init_seed = 42;
};

// Fills params[layout.total_floats()] from `file`. Names may be "bert."-prefixed or bare, and
// LayerNorm gamma/beta; F32/F16/BF16/F64 are converted to F32. Every shape is checked against the
// layout. Missing classifier or pooler: initialised as HF does (weights normal(0,
// initializer_range), biases 0) and listed in the report. Any other missing parameter, a tensor of
// the wrong shape or dtype, a name that two tensors map to, or an encoder tensor the config has no
// place for: cpuft::Error naming the file and tensor.
LoadReport load_hf_weights(const SafetensorsFile& file, const ParamLayout& layout,
                           const ModelConfig& config, float* params,
                           const LoadOptions& options = {});

// Writes every parameter under its BertForSequenceClassification name, F32, atomically.
void save_hf_weights(const std::string& path, const ParamLayout& layout, const float* params);

}  // namespace cpuft
