#include "train/best_model.h"

#include "core/check.h"

namespace cpuft {

BestModel::BestModel(const TrainConfig& c) {
  if (c.metric_for_best_model.empty() && !c.load_best_model_at_end && c.save_strategy != "best")
    return;
  std::string metric = c.metric_for_best_model.empty() ? "loss" : c.metric_for_best_model;
  // HF: a metric not ending in "loss" is better when greater, unless --greater_is_better says.
  greater_is_better_ =
      c.greater_is_better >= 0 ? c.greater_is_better == 1 : !metric.ends_with("loss");
  metric_ = metric.starts_with("eval_") ? metric : "eval_" + metric;
}

bool BestModel::observe(const nlohmann::json& metrics, int64_t step) {
  if (!tracking()) return false;
  if (!metrics.contains(metric_) || !metrics[metric_].is_number()) {
    std::string available;
    for (const auto& [key, value] : metrics.items())
      if (value.is_number() && key.starts_with("eval_"))
        available += (available.empty() ? "" : ", ") + key;
    throw Error(str("--metric_for_best_model: the evaluation reports no '", metric_,
                    "'; it reports ", available));
  }
  const double value = metrics[metric_].get<double>();
  const bool better =
      !best_metric_ || (greater_is_better_ ? value > *best_metric_ : value < *best_metric_);
  if (better) {
    best_metric_ = value;
    best_step_ = step;
  }
  return better;
}

void BestModel::saved(int64_t step, const std::string& checkpoint_dir) {
  if (tracking() && step == best_step_) best_checkpoint_ = checkpoint_dir;
}

void BestModel::write_to(nlohmann::json& state) const {
  state["best_metric"] = best_metric_ ? nlohmann::json(*best_metric_) : nlohmann::json(nullptr);
  state["best_global_step"] =
      best_step_ >= 0 ? nlohmann::json(best_step_) : nlohmann::json(nullptr);
  state["best_model_checkpoint"] =
      best_checkpoint_.empty() ? nlohmann::json(nullptr) : nlohmann::json(best_checkpoint_);
}

void BestModel::restore(const nlohmann::json& state) {
  if (state.contains("best_metric") && state["best_metric"].is_number())
    best_metric_ = state["best_metric"].get<double>();
  if (state.contains("best_global_step") && state["best_global_step"].is_number_integer())
    best_step_ = state["best_global_step"].get<int64_t>();
  if (state.contains("best_model_checkpoint") && state["best_model_checkpoint"].is_string())
    best_checkpoint_ = state["best_model_checkpoint"].get<std::string>();
}

}  // namespace cpuft
