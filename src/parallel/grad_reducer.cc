#include "parallel/grad_reducer.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace cpuft {

GradReducer::GradReducer(Communicator& comm, const BucketPlan& plan, float* grads,
                         int64_t grads_floats)
    : comm_(comm),
      plan_(plan),
      grads_(grads),
      grads_floats_(grads_floats),
      pending_layers_(static_cast<size_t>(plan.num_buckets())),
      reported_(plan.ranges().size()),
      handles_(static_cast<size_t>(plan.num_buckets())),
      done_(static_cast<size_t>(plan.num_buckets())),
      launched_at_(static_cast<size_t>(plan.num_buckets())),
      done_at_(static_cast<size_t>(plan.num_buckets())),
      exchange_(static_cast<size_t>(plan.num_buckets())) {
  CPUFT_CHECK(grads != nullptr, "null gradient buffer");
  for (const Bucket& bucket : plan.buckets())
    CPUFT_CHECK(bucket.end <= grads_floats, "bucket [", bucket.begin, ", ", bucket.end,
                ") beyond the gradient buffer of ", grads_floats, " floats");
}

void GradReducer::set_sparse_rows(const SparseRows& sparse) {
  CPUFT_CHECK(!in_step_, "set_sparse_rows() inside a step");
  CPUFT_CHECK(sparse.rows > 0 && sparse.width > 0 && sparse.begin >= 0, "bad sparse rows");
  const int last = plan_.num_buckets() - 1;
  const Bucket& bucket = plan_.buckets()[static_cast<size_t>(last)];
  const int64_t end = sparse.begin + sparse.rows * sparse.width;
  CPUFT_CHECK(sparse.begin >= bucket.begin && end <= bucket.end, "sparse rows [", sparse.begin,
              ", ", end, ") are not inside the last bucket [", bucket.begin, ", ", bucket.end, ")");
  if (comm_.world_size() == 1) return;  // nothing is exchanged (and one handle at a time)
  sparse_ = sparse;
  sparse_bucket_ = last;
  row_flags_.assign(static_cast<size_t>(sparse.rows), 0.0f);
  union_rows_.reserve(static_cast<size_t>(sparse.rows));
}

void GradReducer::set_bf16_exchange(bool on) {
  CPUFT_CHECK(!in_step_, "set_bf16_exchange() inside a step");
  bf16_ = on && comm_.world_size() > 1;  // one rank exchanges nothing
  staging_.assign(bf16_ ? static_cast<size_t>(grads_floats_) : 0, bf16{0});
}

Communicator::Handle GradReducer::launch(float* data, int64_t n, const OpContext& context) {
  if (!bf16_) return comm_.all_reduce_sum_async(data, n, context);
  bf16* staged = staging_.data() + (data - grads_);
  const float scale = 1.0f / static_cast<float>(comm_.world_size());
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) staged[i] = round_to_bf16(data[i] * scale);
  return comm_.all_reduce_sum_bf16_async(staged, n, context);
}

void GradReducer::landed(float* data, int64_t n) {
  if (!bf16_) return;
  const bf16* staged = staging_.data() + (data - grads_);
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) data[i] = to_float(staged[i]);
}

void GradReducer::begin_step(int64_t step) {
  CPUFT_CHECK(!in_step_ || next_launch_ == 0, "begin_step(", step, ") while step ", step_,
              " has buckets in flight; call finish() first");
  step_ = step;
  in_step_ = true;
  began_at_ = Clock::now();
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

void GradReducer::poll() {
  if (in_step_ && first_open_ < next_launch_) poll_in_flight();
}

void GradReducer::launch_ready_buckets() {
  while (next_launch_ < plan_.num_buckets() &&
         pending_layers_[static_cast<size_t>(next_launch_)] == 0) {
    const auto b = static_cast<size_t>(next_launch_);
    const Bucket& bucket = plan_.buckets()[b];
    launched_at_[b] = Clock::now();
    if (next_launch_ == sparse_bucket_)
      sparse_launch(next_launch_);
    else
      handles_[b] = launch(grads_ + bucket.begin, bucket.floats(), OpContext{next_launch_, step_});
    ++next_launch_;
  }
}

void GradReducer::poll_in_flight() {
  for (int b = first_open_; b < next_launch_; ++b) {
    if (done_[static_cast<size_t>(b)]) continue;
    if (b == sparse_bucket_ ? sparse_test() : comm_.test(handles_[static_cast<size_t>(b)]))
      complete(b);
  }
  while (first_open_ < next_launch_ && done_[static_cast<size_t>(first_open_)]) ++first_open_;
}

void GradReducer::complete(int bucket) {
  const auto b = static_cast<size_t>(bucket);
  done_at_[b] = Clock::now();
  done_[b] = 1;
  if (comm_.world_size() == 1) return;
  const Bucket& range = plan_.buckets()[b];
  if (bf16_) {  // averaged before the exchange; widen what arrived (the sparse rows already are)
    if (bucket == sparse_bucket_)
      for (int i = 0; i < dense_count_; ++i) landed(dense_data_[i], dense_floats_[i]);
    else
      landed(grads_ + range.begin, range.floats());
    return;
  }
  const float scale = 1.0f / static_cast<float>(comm_.world_size());
  float* data = grads_ + range.begin;
  const int64_t n = range.floats();
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) data[i] *= scale;
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
  const auto done_in_backward = static_cast<int>(std::count(done_.begin(), done_.end(), 1));
  for (int b = first_open_; b < next_launch_; ++b) {
    if (done_[static_cast<size_t>(b)]) continue;
    if (b == sparse_bucket_)
      sparse_wait();
    else
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
    const bool sparse = static_cast<int>(b) == sparse_bucket_;
    stats.floats += sparse ? sparse_floats_ : plan_.buckets()[b].floats();
    exchange_[b] = {seconds(launched_at_[b] - began_at_),
                    sparse ? sparse_bytes_ : plan_.buckets()[b].floats() * value_bytes(),
                    sparse ? 2 : 1};
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
  stats.buckets_done_in_backward = comm_.world_size() > 1 ? done_in_backward : 0;
  stats_ = stats;
  last_backward_seconds_ = seconds(finish_start - began_at_);
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

// ---- the sparse bucket ----

void GradReducer::sparse_launch(int bucket) {
  const Bucket& range = plan_.buckets()[static_cast<size_t>(bucket)];
  const OpContext context{bucket, step_};
  const int64_t rows_end = sparse_.begin + sparse_.rows * sparse_.width;
  dense_count_ = 0;
  auto launch_dense = [&](float* data, int64_t n) {
    if (n <= 0) return;
    dense_done_[dense_count_] = false;
    dense_data_[dense_count_] = data;
    dense_floats_[dense_count_] = n;
    dense_handles_[dense_count_++] = launch(data, n, context);
  };
  launch_dense(grads_ + range.begin, sparse_.begin - range.begin);
  launch_dense(grads_ + rows_end, range.end - rows_end);
  // One flag per row: does this rank's gradient have a nonzero in it?
  const float* rows = grads_ + sparse_.begin;
  const int64_t width = sparse_.width;
  float* flags = row_flags_.data();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < sparse_.rows; ++r) {
    const float* row = rows + r * width;
    float any = 0.0f;
    for (int64_t i = 0; i < width; ++i)
      if (row[i] != 0.0f) any = 1.0f;
    flags[r] = any;
  }
  flags_handle_ = comm_.all_reduce_sum_async(flags, sparse_.rows, context);
  sparse_floats_ = range.floats() - sparse_.rows * width + sparse_.rows;
  sparse_bytes_ = (range.floats() - sparse_.rows * width) * value_bytes() + sparse_.rows * 4;
  sparse_phase_ = SparsePhase::flags;
}

bool GradReducer::sparse_test() {
  bool dense = true;
  for (int i = 0; i < dense_count_; ++i) {
    if (!dense_done_[i] && comm_.test(dense_handles_[i])) dense_done_[i] = true;
    dense = dense && dense_done_[i];
  }
  if (sparse_phase_ == SparsePhase::flags && comm_.test(flags_handle_)) sparse_pack_and_launch();
  if (sparse_phase_ == SparsePhase::rows && comm_.test(rows_handle_)) sparse_unpack();
  return dense && sparse_phase_ == SparsePhase::done;
}

void GradReducer::sparse_wait() {
  for (int i = 0; i < dense_count_; ++i)
    if (!dense_done_[i]) {
      comm_.wait(dense_handles_[i]);
      dense_done_[i] = true;
    }
  if (sparse_phase_ == SparsePhase::flags) {
    comm_.wait(flags_handle_);
    sparse_pack_and_launch();
  }
  if (sparse_phase_ == SparsePhase::rows) {
    comm_.wait(rows_handle_);
    sparse_unpack();
  }
}

// The union's rows move to the front of the range, in order (row union_rows_[k] to row k <= it),
// and are all-reduced there. Every rank has the same flag sums, so the same union and count.
void GradReducer::sparse_pack_and_launch() {
  union_rows_.clear();
  for (int64_t r = 0; r < sparse_.rows; ++r)
    if (row_flags_[static_cast<size_t>(r)] > 0.0f) union_rows_.push_back(r);
  const int64_t width = sparse_.width, count = static_cast<int64_t>(union_rows_.size());
  float* rows = grads_ + sparse_.begin;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t r = union_rows_[static_cast<size_t>(k)];
    if (r != k) std::memcpy(rows + k * width, rows + r * width, sizeof(float) * width);
  }
  sparse_floats_ += count * width;
  sparse_bytes_ += count * width * value_bytes();
  if (count == 0) {
    sparse_phase_ = SparsePhase::done;
    return;
  }
  rows_handle_ = launch(rows, count * width, OpContext{sparse_bucket_, step_});
  sparse_phase_ = SparsePhase::rows;
}

// Back to their places, from the last (row k goes to union_rows_[k] >= k, whose own packed row has
// already left); then the front rows that are not in the union, which hold stale packed rows, are
// zeroed. Rows past the union's count that are not in it were never moved and are zero here.
void GradReducer::sparse_unpack() {
  const int64_t width = sparse_.width, count = static_cast<int64_t>(union_rows_.size());
  float* rows = grads_ + sparse_.begin;
  landed(rows, count * width);
  for (int64_t k = count - 1; k >= 0; --k) {
    const int64_t r = union_rows_[static_cast<size_t>(k)];
    if (r != k) std::memcpy(rows + r * width, rows + k * width, sizeof(float) * width);
  }
  size_t next = 0;  // the first union row >= r
  for (int64_t r = 0; r < count; ++r) {
    while (next < union_rows_.size() && union_rows_[next] < r) ++next;
    if (next < union_rows_.size() && union_rows_[next] == r) continue;
    std::memset(rows + r * width, 0, sizeof(float) * width);
  }
  sparse_phase_ = SparsePhase::done;
}

}  // namespace cpuft
