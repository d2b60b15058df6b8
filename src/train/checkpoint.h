// checkpoint-N folders: everything needed to continue a run exactly where it stopped — weights,
// AdamW moments and step count, the step reached and the log history — plus config and tokenizer so
// each checkpoint is also a loadable Hugging Face model folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "data/tokenizer.h"
#include "model/param_layout.h"
#include "optim/adamw.h"
#include "train/train_config.h"

namespace cpuft {

struct CheckpointContent {
  int64_t global_step;
  double epoch;
  int64_t max_steps;
  const nlohmann::json& log_history;
};

// Writes output_dir/checkpoint-<step> (via a temporary folder and a rename), then deletes the
// oldest checkpoints beyond save_total_limit (when > 0).
void save_checkpoint(const std::filesystem::path& output_dir, const CheckpointContent& content,
                     const ParamLayout& layout, const float* params, AdamW& adamw,
                     const nlohmann::json& model_config, const Tokenizer& tokenizer,
                     int64_t save_total_limit, const TrainConfig& config);

struct ResumePoint {
  int64_t global_step = 0;
  nlohmann::json log_history = nlohmann::json::array();
};

// Loads weights and optimizer state from a checkpoint folder; errors name the file.
ResumePoint load_checkpoint(const std::string& dir, const ParamLayout& layout, float* params,
                            AdamW& adamw);

// trainer_state.json as HF's Trainer writes it.
nlohmann::json trainer_state_json(int64_t global_step, double epoch, int64_t max_steps,
                                  const nlohmann::json& log_history, const TrainConfig& config);

}  // namespace cpuft
