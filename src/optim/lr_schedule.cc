#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <numbers>

#include "core/check.h"

namespace cpuft {

namespace {

using nlohmann::json;

struct KindName {
  ScheduleKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {
    {ScheduleKind::linear, "linear"},
    {ScheduleKind::cosine, "cosine"},
    {ScheduleKind::cosine_with_restarts, "cosine_with_restarts"},
    {ScheduleKind::polynomial, "polynomial"},
    {ScheduleKind::constant, "constant"},
    {ScheduleKind::constant_with_warmup, "constant_with_warmup"},
    {ScheduleKind::inverse_sqrt, "inverse_sqrt"},
    {ScheduleKind::cosine_with_min_lr, "cosine_with_min_lr"},
    {ScheduleKind::cosine_warmup_with_min_lr, "cosine_warmup_with_min_lr"},
    {ScheduleKind::warmup_stable_decay, "warmup_stable_decay"},
};

// The kwargs of one kind: checks the keys against those its transformers function takes and
// hands out the values with their types checked.
class Kwargs {
 public:
  Kwargs(const std::string& text, const std::string& kind) : kind_(kind) {
    if (text.empty()) return;
    try {
      object_ = json::parse(text);
    } catch (const json::exception& e) {
      throw Error(str("lr_scheduler_kwargs '", text, "' is not JSON: ", e.what()));
    }
    CPUFT_REQUIRE(object_.is_object() || object_.is_null(), "lr_scheduler_kwargs '", text,
                  "' is not a JSON object");
  }
  // Refuses every key outside `allowed`.
  void allow(std::initializer_list<const char*> allowed) const {
    if (!object_.is_object()) return;
    for (const auto& [key, value] : object_.items()) {
      bool known = false;
      std::string names;
      for (const char* a : allowed) {
        known = known || key == a;
        names += names.empty() ? a : str(", ", a);
      }
      CPUFT_REQUIRE(known, "lr_scheduler_kwargs: ", kind_, " takes ",
                    names.empty() ? std::string("no keyword arguments") : names, ", not '", key,
                    "'");
    }
  }
  bool has(const char* key) const {
    return object_.is_object() && object_.contains(key) && !object_.at(key).is_null();
  }
  double number(const char* key) const {
    const json& v = object_.at(key);
    CPUFT_REQUIRE(v.is_number(), "lr_scheduler_kwargs: ", key, " must be a number, not ", v.dump());
    return v.get<double>();
  }
  int64_t integer(const char* key) const {
    const json& v = object_.at(key);
    CPUFT_REQUIRE(v.is_number_integer(), "lr_scheduler_kwargs: ", key, " must be an integer, not ",
                  v.dump());
    return v.get<int64_t>();
  }
  WsdShape shape(const char* key) const {
    const json& v = object_.at(key);
    const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    if (s == "linear") return WsdShape::linear;
    if (s == "cosine") return WsdShape::cosine;
    if (s == "1-sqrt") return WsdShape::one_minus_sqrt;
    throw Error(
        str("lr_scheduler_kwargs: ", key, " '", s, "' is not one of 'linear', 'cosine', '1-sqrt'"));
  }

 private:
  json object_;
  std::string kind_;
};

// Linear warmup from 0, shared by every kind: step / max(1, warmup).
double warmup_factor(int64_t step, int64_t warmup) {
  return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
}

// 0.5 (1 + cos(pi num_cycles 2 progress)), in transformers' order of operations.
double cosine_wave(double num_cycles, double progress) {
  return 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles * 2.0 * progress));
}

double wsd_shape(WsdShape shape, double progress, bool warmup, double num_cycles) {
  switch (shape) {
    case WsdShape::linear:
      return warmup ? progress : 1.0 - progress;
    case WsdShape::cosine:
      return warmup ? 0.5 * (1.0 - std::cos(std::numbers::pi * progress))
                    : cosine_wave(num_cycles, progress);
    case WsdShape::one_minus_sqrt:
      return warmup ? 1.0 - std::sqrt(1.0 - progress) : 1.0 - std::sqrt(progress);
  }
  return 0.0;
}

}  // namespace

ScheduleKind parse_schedule_kind(const std::string& name) {
  for (const KindName& k : kKinds)
    if (name == k.name) return k.kind;
  if (name == "reduce_lr_on_plateau" || name == "greedy")
    throw Error(str("lr_scheduler_type '", name,
                    "' is not supported: it adapts the rate to the evaluation metrics or the loss "
                    "as they come, where cpuft's schedules are a function of the step"));
  std::string names;
  for (const KindName& k : kKinds) names += str(names.empty() ? "" : ", ", k.name);
  throw Error(str("unknown lr_scheduler_type '", name, "'; expected one of ", names));
}

LrSchedule make_lr_schedule(const std::string& name, double base_lr, int64_t warmup_steps,
                            int64_t total_steps, const std::string& lr_scheduler_kwargs) {
  LrSchedule s{parse_schedule_kind(name), base_lr, warmup_steps, total_steps};
  const Kwargs kw(lr_scheduler_kwargs, name);
  ScheduleParams& p = s.params;
  auto min_lr = [&] {
    CPUFT_REQUIRE(!(kw.has("min_lr") && kw.has("min_lr_rate")), "lr_scheduler_kwargs: ", name,
                  " takes only one of min_lr or min_lr_rate");
    CPUFT_REQUIRE(kw.has("min_lr") || kw.has("min_lr_rate"), "lr_scheduler_kwargs: ", name,
                  " needs min_lr or min_lr_rate");
    p.min_lr_rate = kw.has("min_lr") ? kw.number("min_lr") / base_lr : kw.number("min_lr_rate");
  };
  switch (s.kind) {
    case ScheduleKind::linear:
    case ScheduleKind::constant:
    case ScheduleKind::constant_with_warmup:
      kw.allow({});
      break;
    case ScheduleKind::cosine:
    case ScheduleKind::cosine_with_restarts:
      kw.allow({"num_cycles"});
      if (kw.has("num_cycles")) p.num_cycles = kw.number("num_cycles");
      break;
    case ScheduleKind::polynomial:
      kw.allow({"lr_end", "power"});
      if (kw.has("lr_end")) p.lr_end = kw.number("lr_end");
      if (kw.has("power")) p.power = kw.number("power");
      CPUFT_REQUIRE(base_lr > p.lr_end, "lr_scheduler_kwargs: polynomial lr_end (", p.lr_end,
                    ") must be smaller than the learning rate (", base_lr, ")");
      break;
    case ScheduleKind::inverse_sqrt:
      kw.allow({"timescale"});
      if (kw.has("timescale")) p.timescale = kw.number("timescale");
      break;
    case ScheduleKind::cosine_with_min_lr:
      kw.allow({"num_cycles", "min_lr", "min_lr_rate"});
      if (kw.has("num_cycles")) p.num_cycles = kw.number("num_cycles");
      min_lr();
      break;
    case ScheduleKind::cosine_warmup_with_min_lr:
      kw.allow({"num_cycles", "min_lr", "min_lr_rate", "warmup_lr_rate"});
      if (kw.has("num_cycles")) p.num_cycles = kw.number("num_cycles");
      if (kw.has("warmup_lr_rate")) p.warmup_lr_rate = kw.number("warmup_lr_rate");
      min_lr();
      break;
    case ScheduleKind::warmup_stable_decay:
      kw.allow({"num_decay_steps", "num_stable_steps", "warmup_type", "decay_type", "min_lr_ratio",
                "num_cycles"});
      CPUFT_REQUIRE(kw.has("num_decay_steps"),
                    "lr_scheduler_kwargs: warmup_stable_decay needs num_decay_steps");
      p.num_decay_steps = kw.integer("num_decay_steps");
      if (kw.has("num_stable_steps")) p.num_stable_steps = kw.integer("num_stable_steps");
      if (kw.has("warmup_type")) p.warmup_type = kw.shape("warmup_type");
      if (kw.has("decay_type")) p.decay_type = kw.shape("decay_type");
      if (kw.has("min_lr_ratio")) p.min_lr_ratio = kw.number("min_lr_ratio");
      if (kw.has("num_cycles")) p.num_cycles = kw.number("num_cycles");
      break;
  }
  return s;
}

double LrSchedule::lr(int64_t step) const {
  const double s = static_cast<double>(step);
  const double warmup = static_cast<double>(warmup_steps);
  const double total = static_cast<double>(total_steps);
  const ScheduleParams& p = params;
  // Progress through the decay after the warmup, as most kinds define it.
  const double progress =
      (s - warmup) / static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  double factor = 1.0;
  switch (kind) {
    case ScheduleKind::constant:
      factor = 1.0;
      break;
    case ScheduleKind::constant_with_warmup:
      factor = step < warmup_steps ? warmup_factor(step, warmup_steps) : 1.0;
      break;
    case ScheduleKind::linear:
      factor = step < warmup_steps ? warmup_factor(step, warmup_steps)
                                   : std::max(0.0, (total - s) / std::max(1.0, total - warmup));
      break;
    case ScheduleKind::cosine:
      factor = step < warmup_steps
                   ? warmup_factor(step, warmup_steps)
                   : std::max(0.0, cosine_wave(p.num_cycles.value_or(0.5), progress));
      break;
    case ScheduleKind::cosine_with_restarts:
      if (step < warmup_steps) {
        factor = warmup_factor(step, warmup_steps);
      } else if (progress >= 1.0) {
        factor = 0.0;
      } else {
        const double cycle = std::fmod(p.num_cycles.value_or(1.0) * progress, 1.0);
        factor = std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * cycle)));
      }
      break;
    case ScheduleKind::polynomial:
      if (step < warmup_steps) {
        factor = warmup_factor(step, warmup_steps);
      } else if (step > total_steps) {
        factor = p.lr_end / base_lr;
      } else {
        const double pct_remaining = 1.0 - (s - warmup) / (total - warmup);
        factor = ((base_lr - p.lr_end) * std::pow(pct_remaining, p.power) + p.lr_end) / base_lr;
      }
      break;
    case ScheduleKind::inverse_sqrt: {
      if (step < warmup_steps) {
        factor = warmup_factor(step, warmup_steps);
      } else {
        const double timescale = p.timescale.value_or(warmup_steps != 0 ? warmup : 10000.0);
        const double shift = timescale - warmup;
        factor = 1.0 / std::sqrt((s + shift) / timescale);
      }
      break;
    }
    case ScheduleKind::cosine_with_min_lr:
      if (step < warmup_steps) {
        factor = warmup_factor(step, warmup_steps);
      } else {
        const double f = cosine_wave(p.num_cycles.value_or(0.5), progress);
        factor = std::max(0.0, f * (1.0 - p.min_lr_rate) + p.min_lr_rate);
      }
      break;
    case ScheduleKind::cosine_warmup_with_min_lr:
      // transformers counts this one's steps from 1 inside the lambda.
      if (step < warmup_steps) {
        factor = p.warmup_lr_rate ? *p.warmup_lr_rate +
                                        (1.0 - *p.warmup_lr_rate) * s / std::max(1.0, warmup - 1.0)
                                  : (s + 1.0) / std::max(1.0, warmup);
      } else {
        const double prog = (s - warmup + 1.0) / std::max(1.0, total - warmup);
        const double f = cosine_wave(p.num_cycles.value_or(0.5), prog);
        factor = std::max(0.0, f * (1.0 - p.min_lr_rate) + p.min_lr_rate);
      }
      break;
    case ScheduleKind::warmup_stable_decay: {
      const int64_t stable =
          p.num_stable_steps.value_or(total_steps - warmup_steps - p.num_decay_steps);
      const double cycles = p.num_cycles.value_or(0.5);
      if (step < warmup_steps) {
        const double f = wsd_shape(p.warmup_type, warmup_factor(step, warmup_steps), true, cycles);
        factor = std::max(0.0, f * (1.0 - p.min_lr_ratio) + p.min_lr_ratio);
      } else if (step < warmup_steps + stable) {
        factor = 1.0;
      } else if (step < warmup_steps + stable + p.num_decay_steps) {
        const double prog = static_cast<double>(step - warmup_steps - stable) /
                            static_cast<double>(std::max<int64_t>(1, p.num_decay_steps));
        const double f = wsd_shape(p.decay_type, prog, false, cycles);
        factor = std::max(0.0, f * (1.0 - p.min_lr_ratio) + p.min_lr_ratio);
      } else {
        factor = p.min_lr_ratio;
      }
      break;
    }
  }
  return base_lr * factor;
}

}  // namespace cpuft
