// Learning-rate schedules of transformers.get_scheduler, as multipliers of the base rate.
//
// The multiplier is evaluated for the optimizer step about to be taken, counted from 0 — as the
// Trainer does: LambdaLR sets lr = base_lr * lambda(0) when it is built, and each
// optimizer.step() is followed by scheduler.step(), so optimizer step k runs with base_lr *
// lambda(k) (tests/fixtures/lr_schedules.json holds transformers 5.24's values, step by step).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cpuft {

enum class ScheduleKind {
  linear,
  cosine,
  cosine_with_restarts,
  polynomial,
  constant,
  constant_with_warmup,
  inverse_sqrt,
  cosine_with_min_lr,
  cosine_warmup_with_min_lr,
  warmup_stable_decay,
};

// Parses TrainingArguments.lr_scheduler_type: linear, cosine, cosine_with_restarts, polynomial,
// constant, constant_with_warmup, inverse_sqrt, cosine_with_min_lr, cosine_warmup_with_min_lr,
// warmup_stable_decay. reduce_lr_on_plateau and greedy (they follow the metrics, not the step
// count) and unknown names throw cpuft::Error in one line.
ScheduleKind parse_schedule_kind(const std::string& name);

// Shape of warmup_stable_decay's warmup and decay phases.
enum class WsdShape { linear, cosine, one_minus_sqrt };

// What lr_scheduler_kwargs sets; transformers' defaults when unset. Filled by make_lr_schedule.
struct ScheduleParams {
  // cosine, cosine_with_min_lr, cosine_warmup_with_min_lr, warmup_stable_decay: 0.5;
  // cosine_with_restarts: 1.
  std::optional<double> num_cycles;
  double lr_end = 1e-7;  // polynomial: the rate reached at total_steps (absolute, not a multiplier)
  double power = 1.0;    // polynomial
  std::optional<double> timescale;  // inverse_sqrt: warmup_steps, or 10000 without warmup
  double min_lr_rate = 0.0;         // cosine(_warmup)_with_min_lr: floor as a fraction of base_lr
  std::optional<double> warmup_lr_rate;  // cosine_warmup_with_min_lr
  // warmup_stable_decay: decay over num_decay_steps after num_stable_steps at the full rate
  // (unset: total_steps - warmup_steps - num_decay_steps), then min_lr_ratio.
  int64_t num_decay_steps = 0;
  std::optional<int64_t> num_stable_steps;
  WsdShape warmup_type = WsdShape::linear;
  WsdShape decay_type = WsdShape::cosine;
  double min_lr_ratio = 0.0;
};

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::linear;
  double base_lr = 5e-5;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  ScheduleParams params{};  // make_lr_schedule fills it from lr_scheduler_kwargs

  // Learning rate for optimizer step `step` (0-based): base_lr * transformers' lambda(step).
  double lr(int64_t step) const;
};

// The schedule TrainingArguments describes: lr_scheduler_type `name`, learning_rate `base_lr`,
// the warmup steps the Trainer computed, max_steps, and lr_scheduler_kwargs as its JSON object
// text ("" or "{}": none). Each kind takes the keyword arguments of its transformers function:
//   linear, constant, constant_with_warmup: none (transformers ignores them for the two constant
//     ones and fails on any for linear; cpuft refuses them all);
//   cosine: num_cycles;  cosine_with_restarts: num_cycles;  polynomial: lr_end, power
//     (lr_end must be below base_lr);  inverse_sqrt: timescale;
//   cosine_with_min_lr: num_cycles and exactly one of min_lr, min_lr_rate;
//   cosine_warmup_with_min_lr: the same and warmup_lr_rate;
//   warmup_stable_decay: num_decay_steps (required), num_stable_steps, warmup_type and decay_type
//     ("linear", "cosine", "1-sqrt"), min_lr_ratio, num_cycles.
// Anything else (an unknown key, last_epoch, a wrong type, text that is not a JSON object) throws
// cpuft::Error in one line.
LrSchedule make_lr_schedule(const std::string& name, double base_lr, int64_t warmup_steps,
                            int64_t total_steps, const std::string& lr_scheduler_kwargs);

}  // namespace cpuft
