// README.md of an output folder: the model card HF's Trainer writes (create_model_card, as
// run_glue.py calls it): YAML front matter with the model-index results, the evaluation results,
// the hyperparameters and the table of training results (training loss, and each evaluation's
// loss and metrics), and the framework version.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "train/train_config.h"

namespace cpuft {

struct ModelCardFacts {
  std::string model_name;      // the output folder's name
  std::string finetuned_from;  // --model_name_or_path as given
  std::string task_name;       // GLUE task or "" for data files
  int world_size = 1;
  int64_t total_train_batch_size = 0;            // per device x ranks x accumulation
  const nlohmann::json* eval_results = nullptr;  // {"eval_loss": ..., "eval_accuracy": ...} or null
  const nlohmann::json* log_history = nullptr;   // trainer_state.json's list
  std::string version;                           // cpuft's
};

std::string model_card(const ModelCardFacts& facts, const TrainConfig& config);

}  // namespace cpuft
