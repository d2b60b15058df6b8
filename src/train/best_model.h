// The best checkpoint of a run (--metric_for_best_model, --greater_is_better,
// --load_best_model_at_end, --save_strategy best), tracked as HF's Trainer does: after each
// evaluation the metric is compared with the best so far; a checkpoint saved at the step of the
// best evaluation becomes best_model_checkpoint (trainer_state.json), is never deleted by
// --save_total_limit, and with --load_best_model_at_end its weights end the run.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "train/train_config.h"

namespace cpuft {

class BestModel {
 public:
  // Tracks nothing unless --metric_for_best_model, --load_best_model_at_end or --save_strategy
  // best asks for it; the metric defaults to loss (lower is better).
  explicit BestModel(const TrainConfig& config);

  bool tracking() const { return !metric_.empty(); }
  const std::string& metric() const { return metric_; }  // "eval_accuracy"

  // After an evaluation at `step`: whether it is a new best. A metric the evaluation does not
  // report is an Error naming the ones it does.
  bool observe(const nlohmann::json& metrics, int64_t step);
  // A checkpoint folder was written at `step`: it becomes the best one if that evaluation was.
  void saved(int64_t step, const std::string& checkpoint_dir);

  std::optional<double> best_metric() const { return best_metric_; }
  int64_t best_global_step() const { return best_step_; }
  const std::string& best_model_checkpoint() const { return best_checkpoint_; }

  // trainer_state.json's best_metric, best_global_step, best_model_checkpoint (null when none);
  // restore() reads them back from a checkpoint's trainer_state.json.
  void write_to(nlohmann::json& trainer_state) const;
  void restore(const nlohmann::json& trainer_state);

 private:
  std::string metric_;
  bool greater_is_better_ = false;
  std::optional<double> best_metric_;
  int64_t best_step_ = -1;
  std::string best_checkpoint_;
};

}  // namespace cpuft
