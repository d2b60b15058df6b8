// Learning-rate schedules of transformers.get_scheduler, as multipliers of the base rate.
//
// The multiplier is evaluated for the optimizer step about to be taken, counted from 0 — as the
// Trainer does: optimizer.step() runs with the rate set by the previous scheduler.step().
#pragma once

#include <cstdint>
#include <string>

namespace cpuft {

enum class ScheduleKind { linear, cosine, constant, constant_with_warmup };

// Parses "linear", "cosine", "constant", "constant_with_warmup"; throws cpuft::Error otherwise.
ScheduleKind parse_schedule_kind(const std::string& name);

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::linear;
  double base_lr = 5e-5;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;

  // Learning rate for optimizer step `step` (0-based).
  double lr(int64_t step) const;
};

}  // namespace cpuft
