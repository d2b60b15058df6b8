// What a run on several ranks says about its gradient exchange, from start to end:
//   1. at start, a short all-reduce probe of the link (parallel/link_probe.h), one line;
//   2. after the second step, the forecast: that step's buckets (ready times and bytes) on the
//      probed link (parallel/exchange_forecast.h): the share of a step that will wait after
//      backward and the speed against an exchange that costs nothing; a warning with the advice
//      when that share passes 20%;
//   3. in each log entry, the measured share (exposed_communication), and one warning the first
//      time it passes 20%;
//   4. at the end, the forecast next to what the run measured after it.
// Every rank takes part in the collectives (the probe, the means at the end); rank 0 prints.
// Internal to src/train.
#pragma once

#include <cstdint>

#include "step/train_step.h"
#include "train/trainer_state.h"

namespace cpuft {

// Above this share of a step spent waiting for the gradient exchange, the run says so.
constexpr double kExposedWarning = 0.2;

// 1. Collective; only with a reducer (several ranks). Prints one line.
void probe_link_at_start(Trainer::State& s);

// 2-4, kept across the steps of one run.
class ExchangeReport {
 public:
  // `forecast_step`: the step (1-based, of this run) whose measurement the forecast uses: the
  // second, or the first when the run has one step.
  explicit ExchangeReport(int64_t steps_in_run) : forecast_step_(steps_in_run >= 2 ? 2 : 1) {}
  // After step `step_in_run` (1-based) of this run: the forecast after its step; the measured
  // wait after it is summed for the end.
  void after_step(Trainer::State& s, int64_t step_in_run, const StepResult& step);
  // 3. The measured share since the last log entry (already the mean over the ranks).
  void measured(Trainer::State& s, double exposed_share);
  // 4. Collective; a line when a forecast was made and steps followed it.
  void at_end(Trainer::State& s);

 private:
  int64_t forecast_step_;
  bool forecast_made_ = false, warned_ = false;
  double forecast_share_ = 0;
  int forecast_in_backward_ = 0, buckets_ = 0;
  // Summed over the steps after the forecast's.
  double wait_after_ = 0, seconds_after_ = 0, in_backward_after_ = 0;
  int64_t steps_after_ = 0;
};

}  // namespace cpuft
