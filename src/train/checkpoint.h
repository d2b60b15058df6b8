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
#include "train/best_model.h"
#include "train/train_config.h"

namespace cpuft {

struct CheckpointContent {
  int64_t global_step;
  double epoch;
  int64_t max_steps;
  const nlohmann::json& log_history;
  const BestModel& best;  // its best_model_checkpoint is never deleted by save_total_limit
  int world_size;         // with the batch flags, what a resumed run must match
};

// Writes output_dir/checkpoint-<step> (into .checkpoint-<step>.tmp, each file fsynced, then the
// folder renamed and output_dir fsynced: a kill at any moment leaves the checkpoint whole or
// absent), then deletes the oldest checkpoints beyond save_total_limit (when > 0), never the best
// one (as HF: with a limit of 1 and a best checkpoint that is not the newest, two are kept).
void save_checkpoint(const std::filesystem::path& output_dir, const CheckpointContent& content,
                     const ParamLayout& layout, const float* params, Optimizer& optimizer,
                     const nlohmann::json& model_config, const Tokenizer& tokenizer,
                     int64_t save_total_limit, const TrainConfig& config);

struct ResumePoint {
  int64_t global_step = 0;
  nlohmann::json log_history = nlohmann::json::array();
  nlohmann::json trainer_state;  // the checkpoint's trainer_state.json (best model fields, ...)
};

// Loads only the weights of a checkpoint folder (every tensor must be there).
void load_checkpoint_weights(const std::string& dir, const ParamLayout& layout, float* params);

// Loads weights and optimizer state from a checkpoint folder; errors name the file. A checkpoint
// of another optimizer (another state kind, or SGD with momentum against SGD without) is refused
// in one line.
ResumePoint load_checkpoint(const std::string& dir, const ParamLayout& layout, float* params,
                            Optimizer& optimizer);

// trainer_state.json as HF's Trainer writes it.
// world_size and gradient_accumulation_steps are cpuft's additions (with HF's train_batch_size
// they fix the global batch a resumed run must have).
nlohmann::json trainer_state_json(int64_t global_step, double epoch, int64_t max_steps,
                                  const nlohmann::json& log_history, const TrainConfig& config,
                                  const BestModel& best, int world_size);

// Refuses, in one line, resuming `checkpoint_state` (its trainer_state.json) in a run whose
// max_steps is already reached, or where the data order would not continue: another global batch
// (ranks x batch per device x accumulation) or another number of steps per epoch over
// `train_examples`, or another batch per device with --group_by_length. The split of the global
// batch over ranks and accumulation may change (the sample order and dropout masks do not depend
// on it). --ignore_data_skip lifts the data-order checks: the epoch's data then starts over.
void check_resumable(const nlohmann::json& checkpoint_state, const std::string& dir,
                     const TrainConfig& config, int world_size, int64_t train_examples,
                     int64_t max_steps);

// The checkpoint-N folder of output_dir with the largest N (HF's get_last_checkpoint); "" if none.
std::string last_checkpoint(const std::filesystem::path& output_dir);

}  // namespace cpuft
