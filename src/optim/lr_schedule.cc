#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"

namespace cpuft {

ScheduleKind parse_schedule_kind(const std::string& name) {
  if (name == "linear") return ScheduleKind::linear;
  if (name == "cosine") return ScheduleKind::cosine;
  if (name == "constant") return ScheduleKind::constant;
  if (name == "constant_with_warmup") return ScheduleKind::constant_with_warmup;
  throw Error(str("unknown lr_scheduler_type '", name,
                  "'; expected linear, cosine, constant or constant_with_warmup"));
}

double LrSchedule::lr(int64_t step) const {
  const double s = static_cast<double>(step);
  const double warmup = static_cast<double>(warmup_steps);
  const double total = static_cast<double>(total_steps);
  double factor = 1.0;
  switch (kind) {
    case ScheduleKind::constant:
      factor = 1.0;
      break;
    case ScheduleKind::constant_with_warmup:
      factor = step < warmup_steps ? s / std::max(1.0, warmup) : 1.0;
      break;
    case ScheduleKind::linear:
      factor = step < warmup_steps ? s / std::max(1.0, warmup)
                                   : std::max(0.0, (total - s) / std::max(1.0, total - warmup));
      break;
    case ScheduleKind::cosine: {
      if (step < warmup_steps) {
        factor = s / std::max(1.0, warmup);
      } else {
        const double progress = (s - warmup) / std::max(1.0, total - warmup);
        // num_cycles = 0.5: half a cosine from 1 down to 0.
        factor = std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * 2.0 * 0.5 * progress)));
      }
      break;
    }
  }
  return base_lr * factor;
}

}  // namespace cpuft
