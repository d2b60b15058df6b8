// checkpoint-N folders: everything needed to continue a run exactly where it stopped — weights,
// the optimizer's state and step count, the step reached and the log history — plus config and
// tokenizer so each checkpoint is also a loadable Hugging Face model folder.
//
// optimizer.safetensors holds "<state>.<parameter name>" for each of Optimizer::state_buffers()
// (AdamW: exp_avg, exp_avg_sq; SGD with momentum: momentum_buffer; SGD without: none) and the
// metadata "<state_kind>_steps" (adamw_steps, sgd_steps): AdamW's file is the one cpuft always
// wrote.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "data/tokenizer.h"
#include "model/param_layout.h"
#include "optim/optimizer.h"
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
                     const ParamLayout& layout, const float* params, Optimizer& optimizer,
                     const nlohmann::json& model_config, const Tokenizer& tokenizer,
                     int64_t save_total_limit, const TrainConfig& config);

struct ResumePoint {
  int64_t global_step = 0;
  nlohmann::json log_history = nlohmann::json::array();
};

// Loads weights and optimizer state from a checkpoint folder; errors name the file. A checkpoint
// of another optimizer (another state kind, or SGD with momentum against SGD without) is refused
// in one line.
ResumePoint load_checkpoint(const std::string& dir, const ParamLayout& layout, float* params,
                            Optimizer& optimizer);

// trainer_state.json as HF's Trainer writes it.
nlohmann::json trainer_state_json(int64_t global_step, double epoch, int64_t max_steps,
                                  const nlohmann::json& log_history, const TrainConfig& config);

}  // namespace cpuft
