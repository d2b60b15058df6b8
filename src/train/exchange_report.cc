#include "train/exchange_report.h"

#include <algorithm>
#include <cstdio>

#include "core/check.h"
#include "core/timer.h"
#include "parallel/exchange_forecast.h"
#include "parallel/link_probe.h"
#include "train/outputs.h"

namespace cpuft {

namespace {

// The large probe all-reduce: the largest bucket's values, at least 256 Ki (1 MB in fp32: a tiny
// model's buckets are so small that scheduling delays on a busy host would swamp the link's rate;
// measured 2.6 MB/s for 80 kB on a 6.25 MB/s link under load) and at most 4 Mi (16 MB: about
// 0.1 s at 1.6 Gbit/s).
constexpr int64_t kMaxProbeValues = int64_t{4} << 20;
constexpr int64_t kMinProbeValues = int64_t{1} << 18;

// Three significant digits, whole numbers from 1000 on: "0.0421 ms", "105 ms", "1.32 s",
// "16.8 MB", "4338 MB/s".
std::string sig3(double v) {
  char text[32];
  std::snprintf(text, sizeof text, v >= 1000 ? "%.0f" : "%.3g", v);
  return text;
}
std::string duration(double seconds) {
  return seconds < 1 ? sig3(seconds * 1e3) + " ms" : sig3(seconds) + " s";
}
std::string megabytes(double bytes) {
  return sig3(bytes / 1e6) + " MB";
}
std::string percent(double share) {
  return str(round_to(100 * share, 1), "%");
}

// What lowers the share of a step spent waiting for the exchange, for this run's shape.
std::string advice(const Trainer::State& s) {
  const TrainConfig& c = s.cfg;
  return str(
      "(", s.dist.world_size(), " ranks, ", c.per_device_train_batch_size,
      " sequences per rank per micro-batch, ", c.gradient_accumulation_steps,
      " micro-batches per exchange): more work per exchange hides it (a larger "
      "--per_device_train_batch_size or --gradient_accumulation_steps), or fewer ranks with "
      "more threads each on a host",
      c.gradient_exchange_dtype == "bfloat16" ? "" : ", or --gradient_exchange_dtype bfloat16",
      "; docs/distributed.md");
}

}  // namespace

void probe_link_at_start(Trainer::State& s) {
  if (!s.reducer) return;
  int64_t largest = 0;
  for (const Bucket& bucket : s.buckets->buckets()) largest = std::max(largest, bucket.floats());
  const int64_t values = std::clamp(largest, kMinProbeValues, kMaxProbeValues);
  const Stopwatch watch;
  s.link = probe_link(*s.dist.comm, values, s.reducer->bf16_exchange());
  const LinkProbe& p = s.link;
  s.info(str("link probe: an all-reduce across ", p.world_size, " ranks (", s.dist.comm->name(),
             p.bf16 ? ", bf16" : "", ") takes ", duration(p.small_seconds), " for ", p.small_bytes,
             " bytes and ", duration(p.large_seconds), " for ",
             megabytes(static_cast<double>(p.large_bytes)), " (", megabytes(p.bytes_per_second()),
             "/s); probed in ", duration(watch.seconds())));
}

void ExchangeReport::after_step(Trainer::State& s, int64_t step_in_run, const StepResult& step) {
  if (!s.reducer) return;
  if (forecast_made_) {
    wait_after_ += step.reduce_seconds;
    seconds_after_ += step.seconds;
    in_backward_after_ += s.reducer->last_stats().buckets_done_in_backward;
    ++steps_after_;
    return;
  }
  if (step_in_run != forecast_step_) return;
  const ExchangeForecast f =
      forecast_exchange(s.link, s.reducer->last_exchange(), s.reducer->last_backward_seconds(),
                        std::max(0.0, step.seconds - step.reduce_seconds));
  forecast_made_ = true;
  forecast_share_ = f.exposed_share();
  forecast_in_backward_ = f.buckets_in_backward;
  buckets_ = f.buckets;
  s.info(str("exchange forecast (step ", step_in_run, " on the probed link): ", megabytes(f.bytes),
             " per step in ", f.buckets, " buckets, ", duration(f.comm_seconds),
             " on the link against a backward of ", duration(s.reducer->last_backward_seconds()),
             ": ", f.buckets_in_backward, " of ", f.buckets, " buckets done during backward, ",
             percent(f.exposed_share()), " of each step waiting after it, ",
             percent(f.efficiency()), " of the speed with a free exchange"));
  if (f.exposed_share() > kExposedWarning)
    s.warn(str("warning: the forecast expects ", percent(f.exposed_share()),
               " of each step to wait for the gradient all-reduce after backward ", advice(s)));
}

void ExchangeReport::measured(Trainer::State& s, double exposed_share) {
  if (exposed_share <= kExposedWarning || warned_) return;
  warned_ = true;
  s.warn(str("warning: ", percent(exposed_share),
             " of each step waits for the gradient all-reduce after backward ", advice(s)));
}

void ExchangeReport::at_end(Trainer::State& s) {
  // The same decision on every rank (same step counts), so that all take part in the means.
  if (!forecast_made_ || steps_after_ == 0) return;
  const double wait = s.mean_over_ranks(wait_after_);
  const double seconds = s.mean_over_ranks(seconds_after_);
  const double in_backward =
      s.mean_over_ranks(in_backward_after_) / static_cast<double>(steps_after_);
  const int64_t first = forecast_step_ + 1;
  s.info(str("gradient exchange: forecast ", percent(forecast_share_),
             " of each step waiting after backward, measured ",
             percent(seconds > 0 ? wait / seconds : 0), "; buckets done during backward: forecast ",
             forecast_in_backward_, " of ", buckets_, ", measured ", round_to(in_backward, 1),
             " (steps ", first, "-", first + steps_after_ - 1,
             " of this run, means over the steps and ranks)"));
}

}  // namespace cpuft
