#include "parallel/grad_reducer.h"

#include <algorithm>

#include "core/check.h"

namespace cpuft {

GradReducer::GradReducer(Communicator& comm, const BucketPlan& plan, float* grads,
                         int64_t grads_floats)
    : comm_(comm),
      plan_(plan),
      grads_(grads),
      pending_layers_(static_cast<size_t>(plan.num_buckets())),
      reported_(plan.ranges().size()),
      handles_(static_cast<size_t>(plan.num_buckets())),
      done_(static_cast<size_t>(plan.num_buckets())),
      launched_at_(static_cast<size_t>(plan.num_buckets())),
      done_at_(static_cast<size_t>(plan.num_buckets())) {
  CPUFT_CHECK(grads != nullptr, "null gradient buffer");
  for (const Bucket& bucket : plan.buckets())
    CPUFT_CHECK(bucket.end <= grads_floats, "bucket [", bucket.begin, ", ", bucket.end,
                ") beyond the gradient buffer of ", grads_floats, " floats");
}

void GradReducer::begin_step(int64_t step) {
  CPUFT_CHECK(!in_step_ || next_launch_ == 0, "begin_step(", step, ") while step ", step_,
              " has buckets in flight; call finish() first");
  step_ = step;
  in_step_ = true;
  next_launch_ = 0;
  first_open_ = 0;
  for (size_t b = 0; b < pending_layers_.size(); ++b) {
    pending_layers_[b] = static_cast<int>(plan_.buckets()[b].layers.size());
    done_[b] = 0;
  }
  std::fill(reported_.begin(), reported_.end(), uint8_t{0});
}

void GradReducer::layer_ready(int layer) {
  if (!in_step_) begin_step(step_ + 1);
  size_t index = 0;
  while (index < plan_.ranges().size() && plan_.ranges()[index].layer != layer) ++index;
  CPUFT_CHECK(index < plan_.ranges().size(), "layer ", layer, " is not in the bucket plan");
  CPUFT_CHECK(!reported_[index], "layer ", layer, " reported twice in step ", step_);
  reported_[index] = 1;
  --pending_layers_[static_cast<size_t>(plan_.bucket_of(layer))];
  launch_ready_buckets();
  poll_in_flight();
}

void GradReducer::launch_ready_buckets() {
  while (next_launch_ < plan_.num_buckets() &&
         pending_layers_[static_cast<size_t>(next_launch_)] == 0) {
    const auto b = static_cast<size_t>(next_launch_);
    const Bucket& bucket = plan_.buckets()[b];
    launched_at_[b] = Clock::now();
    handles_[b] = comm_.all_reduce_sum_async(grads_ + bucket.begin, bucket.floats(),
                                             OpContext{next_launch_, step_});
    ++next_launch_;
  }
}

void GradReducer::poll_in_flight() {
  for (int b = first_open_; b < next_launch_; ++b) {
    if (!done_[static_cast<size_t>(b)] && comm_.test(handles_[static_cast<size_t>(b)])) complete(b);
  }
  while (first_open_ < next_launch_ && done_[static_cast<size_t>(first_open_)]) ++first_open_;
}

void GradReducer::complete(int bucket) {
  const auto b = static_cast<size_t>(bucket);
  done_at_[b] = Clock::now();
  done_[b] = 1;
  if (comm_.world_size() > 1) {
    const Bucket& range = plan_.buckets()[b];
    const float scale = 1.0f / static_cast<float>(comm_.world_size());
    float* data = grads_ + range.begin;
    const int64_t n = range.floats();
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) data[i] *= scale;
  }
}

void GradReducer::finish() {
  CPUFT_CHECK(in_step_, "finish() without any layer_ready() in this step");
  if (next_launch_ < plan_.num_buckets()) {
    std::string missing;
    for (size_t i = 0; i < plan_.ranges().size(); ++i)
      if (!reported_[i]) missing += str(missing.empty() ? "" : ",", plan_.ranges()[i].layer);
    CPUFT_CHECK(false, "finish() at step ", step_, " before layers ", missing,
                " reported their gradients");
  }
  const Clock::time_point finish_start = Clock::now();
  for (int b = first_open_; b < next_launch_; ++b) {
    if (done_[static_cast<size_t>(b)]) continue;
    comm_.wait(handles_[static_cast<size_t>(b)]);
    complete(b);
  }
  const Clock::time_point finish_end = Clock::now();

  // Overlap: union of the buckets' [launch, completion] intervals, split at finish_start. Buckets
  // launch in order, so their start times are sorted.
  auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  ReduceStats stats;
  stats.step = step_;
  stats.buckets = plan_.num_buckets();
  double comm = 0, hidden = 0;
  Clock::time_point covered = Clock::time_point::min();
  for (size_t b = 0; b < done_.size(); ++b) {
    stats.floats += plan_.buckets()[b].floats();
    const Clock::time_point start = std::max(launched_at_[b], covered);
    const Clock::time_point end = done_at_[b];
    if (end <= start) continue;
    comm += seconds(end - start);
    if (start < finish_start) hidden += seconds(std::min(end, finish_start) - start);
    covered = std::max(covered, end);
  }
  if (comm_.world_size() > 1) {
    stats.comm_seconds = comm;
    stats.hidden_seconds = hidden;
    stats.overlap_ratio = comm > 0 ? hidden / comm : 0;
  }
  stats.exposed_seconds = seconds(finish_end - finish_start);
  stats_ = stats;
  if (timeline_ != nullptr) {
    for (size_t b = 0; b < done_.size(); ++b)
      timeline_->add("allreduce", "comm", timeline_->micros(launched_at_[b]),
                     timeline_->micros(done_at_[b]), 1, static_cast<int64_t>(b));
    timeline_->add("finish", "exposed_comm", timeline_->micros(finish_start),
                   timeline_->micros(finish_end), 0, step_);
  }
  in_step_ = false;
  next_launch_ = 0;
  first_open_ = 0;
}

}  // namespace cpuft
