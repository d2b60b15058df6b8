// Trainer::State: everything a `cpuft train` run holds, shared by the files of the trainer
// (trainer.cc: preparation and the training loop; evaluation.cc: evaluation and prediction).
// Internal to src/train: apps see only train/trainer.h.
#pragma once

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "core/step_timeline.h"
#include "data/tokenizer.h"
#include "model/model_config.h"
#include "model/model_params.h"
#include "model/param_layout.h"
#include "model/sequence_classifier.h"
#include "parallel/bucket_plan.h"
#include "parallel/grad_reducer.h"
#include "train/distributed.h"
#include "train/encoded_dataset.h"
#include "train/task_data.h"
#include "train/trainer.h"

namespace cpuft {

struct Trainer::State {
  TrainConfig cfg;
  TaskData task;
  std::string config_text;
  ModelConfig model_config;
  std::unique_ptr<Tokenizer> tokenizer;  // set once the model folder is checked
  std::unique_ptr<ParamLayout> layout;
  AlignedBuffer<float> params, grads;
  ModelParams p{};  // the model's view of params (the training step binds its own views)
  std::unique_ptr<SequenceClassifier> model;
  EncodedDataset train;
  std::vector<std::pair<std::string, EncodedDataset>> eval, test;
  nlohmann::json log_history = nlohmann::json::array();
  int64_t global_step = 0;
  double epoch = 0;
  int64_t max_steps = 0;
  int64_t steps_per_epoch = 0;
  double total_flos = 0;  // HF's count: 6 x non-embedding parameters x tokens
  double dense_params = 0;
  std::string log_jsonl;
  DistContext dist;
  std::unique_ptr<BucketPlan> buckets;
  std::unique_ptr<GradReducer> reducer;
  StepTimeline timeline;

  explicit State(const TrainConfig& config) : cfg(config), timeline(0) {}

  bool is_writer() const { return dist.rank() == 0; }
  void print(const std::string& line) const {
    if (is_writer()) std::printf("%s\n", line.c_str());
  }

  void log(const nlohmann::json& entry) {
    log_history.push_back(entry);
    log_jsonl += entry.dump() + "\n";
  }
};

}  // namespace cpuft
