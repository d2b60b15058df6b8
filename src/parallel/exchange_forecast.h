// What the gradient exchange will cost a step: the overlap simulation shared by the run's own
// forecast (from its probed link and its measured step) and `cpuft bench --scaling` (from a link
// model and a profiled step; scaling/scaling.h lists that model's assumptions).
//
// The simulation: one link, the buckets all-reduced one at a time in plan order (the order every
// rank issues them), each starting at max(its ready time, the end of the previous bucket); the step
// waits after backward for whatever is still on the link. Progress is taken as continuous, as a
// NIC or oneCCL's worker thread gives it; GradReducer polls between the products of backward, so a
// real run can only be later (docs/distributed.md).
#pragma once

#include <span>
#include <vector>

#include "parallel/grad_reducer.h"
#include "parallel/link_probe.h"

namespace cpuft {

// One bucket of the simulation: when it may start (seconds since the start of backward) and how
// long it occupies the link.
struct BucketTask {
  double ready_seconds = 0;
  double comm_seconds = 0;
};

struct OverlapResult {
  double backward_seconds = 0;  // when backward ends
  double comm_end_seconds = 0;  // when the last bucket ends (0 without buckets)
  double comm_seconds = 0;      // sum of the buckets' link times
  double exposed_seconds = 0;   // max(0, comm_end - backward): what the step waits for
  double hidden_seconds = 0;    // comm_seconds - exposed_seconds
  double overlap_ratio = 0;     // hidden / comm (0 when there is no communication)
  std::vector<double> start_seconds, end_seconds;  // per bucket
};

// Buckets in order, each starts at max(its ready time, end of the previous bucket). Throws
// cpuft::Error on a negative time.
OverlapResult simulate_overlap(double backward_seconds, const std::vector<BucketTask>& buckets);

// The run's forecast for one step: its buckets (GradReducer::last_exchange of a measured step:
// ready times and bytes) on the probed link.
struct ExchangeForecast {
  int buckets = 0;
  int buckets_in_backward = 0;  // whose all-reduce ends before backward does
  double bytes = 0;             // sent per step by this rank
  double comm_seconds = 0;      // the buckets' link time
  double exposed_seconds = 0;   // the wait after backward
  double compute_seconds = 0;   // the step without that wait
  double step_seconds() const { return compute_seconds + exposed_seconds; }
  // Of a step, the share spent waiting for the exchange.
  double exposed_share() const;
  // The speed against the same ranks with an exchange that costs nothing: compute / step.
  double efficiency() const;
};

// A bucket's link time is link.seconds(bytes), plus the probe's small all-reduce for each further
// all-reduce in its sequence (the sparse rows' flags, then rows). `backward_seconds` is the time
// the buckets can hide under (GradReducer::last_backward_seconds), `compute_seconds` the step's
// time without waiting for the exchange. cpuft::Error on negative times.
ExchangeForecast forecast_exchange(const LinkProbe& link,
                                   std::span<const GradReducer::BucketExchange> buckets,
                                   double backward_seconds, double compute_seconds);

}  // namespace cpuft
