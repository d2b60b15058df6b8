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
#include "core/timer.h"
#include "data/tokenizer.h"
#include "io/tensorboard_logs.h"
#include "io/tensorboard_writer.h"
#include "model/model_config.h"
#include "model/model_params.h"
#include "model/param_layout.h"
#include "model/sequence_classifier.h"
#include "parallel/bucket_plan.h"
#include "parallel/grad_reducer.h"
#include "parallel/link_probe.h"
#include "train/best_model.h"
#include "train/distributed.h"
#include "train/encoded_dataset.h"
#include "train/task_data.h"
#include "train/trainer.h"

namespace cpuft {

struct Trainer::State {
  TrainConfig cfg;
  std::string model_folder;  // --model_name_or_path, resolved (a folder, or the hub cache's)
  std::string resume_dir;    // the checkpoint training continues from; "" for a fresh start
  BestModel best;
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
  // Start-up, in seconds since the Trainer was made (the run's start, give or take parsing): when
  // the weights were read and when every split was tokenized; the training loop reports them with
  // its first optimizer step.
  Stopwatch since_start;
  double weights_read_at = 0, data_ready_at = 0;
  double dense_params = 0;
  std::string log_jsonl;
  DistContext dist;
  std::unique_ptr<BucketPlan> buckets;
  std::unique_ptr<GradReducer> reducer;
  LinkProbe link;  // measured at start with a reducer (train/exchange_report.h)
  StepTimeline timeline;
  std::unique_ptr<TensorBoardWriter> tensorboard;  // rank 0 with --report_to tensorboard|all

  explicit State(const TrainConfig& config) : cfg(config), best(config), timeline(0) {}

  // Rank 0 writes the results; with --save_on_each_node every host's local rank 0 also writes
  // the checkpoints and the model.
  bool is_writer() const { return dist.rank() == 0; }
  bool is_saver() const {
    return cfg.save_on_each_node ? dist.launch.local_rank == 0 : is_writer();
  }
  // Rank 0's output, as --log_level allows: info (progress, results) unless warning, error or
  // critical; warnings (notices) unless error or critical.
  void info(const std::string& line) const {
    const std::string& level = cfg.log_level;
    if (is_writer() && level != "warning" && level != "error" && level != "critical")
      std::printf("%s\n", line.c_str());
  }
  void warn(const std::string& line) const {
    if (is_writer() && cfg.log_level != "error" && cfg.log_level != "critical")
      std::printf("%s\n", line.c_str());
  }

  // The mean of a per-rank value over all ranks (the value itself on one process). Collective.
  double mean_over_ranks(double value) const {
    if (dist.world_size() == 1) return value;
    float total = static_cast<float>(value);
    dist.comm->wait(dist.comm->all_reduce_sum_async(&total, 1));
    return static_cast<double>(total) / dist.world_size();
  }

  // One entry of log_history (trainer_state.json), log.jsonl and, with --report_to tensorboard,
  // the event file (as transformers' TensorBoardCallback.on_log).
  void log(const nlohmann::json& entry) {
    log_history.push_back(entry);
    log_jsonl += entry.dump() + "\n";
    if (tensorboard) {
      const TensorBoardLog scalars = tensorboard_log(entry);
      for (const std::string& warning : scalars.warnings) warn(warning);
      write_tensorboard_log(*tensorboard, scalars);
    }
  }
};

}  // namespace cpuft
