#include "parallel/exchange_forecast.h"

#include <algorithm>

#include "core/check.h"

namespace cpuft {

OverlapResult simulate_overlap(double backward_seconds, const std::vector<BucketTask>& buckets) {
  CPUFT_REQUIRE(backward_seconds >= 0, "negative backward time");
  OverlapResult r;
  r.backward_seconds = backward_seconds;
  double link_free = 0;  // events: bucket ready, link free; one link, buckets in plan order
  for (const BucketTask& b : buckets) {
    CPUFT_REQUIRE(b.ready_seconds >= 0 && b.comm_seconds >= 0, "negative bucket time");
    const double start = std::max(b.ready_seconds, link_free);
    link_free = start + b.comm_seconds;
    r.start_seconds.push_back(start);
    r.end_seconds.push_back(link_free);
    r.comm_seconds += b.comm_seconds;
  }
  r.comm_end_seconds = link_free;
  r.exposed_seconds = std::max(0.0, r.comm_end_seconds - backward_seconds);
  // Every bucket is ready by the end of backward, so after it the link is busy without gaps: the
  // exposed time is link time, and the rest of the link time ran under backward.
  r.hidden_seconds = std::max(0.0, r.comm_seconds - r.exposed_seconds);
  r.overlap_ratio = r.comm_seconds > 0 ? r.hidden_seconds / r.comm_seconds : 0;
  return r;
}

double ExchangeForecast::exposed_share() const {
  const double step = step_seconds();
  return step > 0 ? exposed_seconds / step : 0;
}

double ExchangeForecast::efficiency() const {
  const double step = step_seconds();
  return step > 0 ? compute_seconds / step : 1;
}

ExchangeForecast forecast_exchange(const LinkProbe& link,
                                   std::span<const GradReducer::BucketExchange> buckets,
                                   double backward_seconds, double compute_seconds) {
  CPUFT_REQUIRE(compute_seconds >= 0, "negative compute time");
  ExchangeForecast f;
  std::vector<BucketTask> tasks;
  for (const GradReducer::BucketExchange& b : buckets) {
    CPUFT_REQUIRE(b.bytes >= 0 && b.collectives >= 1, "bad bucket exchange");
    // A bucket launched after backward's end (clock noise at the last layer) is ready at its end.
    tasks.push_back(
        {std::min(b.ready_seconds, backward_seconds),
         link.seconds(static_cast<double>(b.bytes)) + (b.collectives - 1) * link.small_seconds});
    f.bytes += static_cast<double>(b.bytes);
  }
  const OverlapResult r = simulate_overlap(backward_seconds, tasks);
  f.buckets = static_cast<int>(tasks.size());
  for (double end : r.end_seconds) f.buckets_in_backward += end <= backward_seconds ? 1 : 0;
  f.comm_seconds = r.comm_seconds;
  f.exposed_seconds = r.exposed_seconds;
  f.compute_seconds = compute_seconds;
  return f;
}

}  // namespace cpuft
