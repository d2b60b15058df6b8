// GradReducer: averages gradients over the ranks while the backward pass is still running.
//
// Note (progress of non-blocking all-reduces): we poll between the products of backward (about ten
// times per encoder layer: GradListener::on_progress_point) and at every layer, with no
// communication thread. Open MPI's non-blocking collectives (libnbc over the tcp/vader transports)
// move data only while some MPI call runs on the issuing thread; a progress thread would have to
// spin inside MPI_Test on a core that the backward pass's OpenMP threads are using (2 cores per
// rank here), and MPI_THREAD_MULTIPLE costs locks in every call. Instead every poll() and
// layer_ready() call tests the outstanding buckets, which drives their next rounds: a bucket gets a
// progress kick after every product of backward, and finish() drains what is left. The cost is
// visible and measured: a bucket's completion is observed only at the next product boundary, and
// the part of communication that did not fit under backward shows up as finish() time
// (ReduceStats::exposed_seconds); docs/distributed.md has the figures. With the oneCCL communicator
// the same polls only read completion: oneCCL's own worker thread moves the data (one core per rank
// placed by start_distributed), which completes more buckets during backward but takes that core.
//
// Use, every optimizer step:
//   reducer.begin_step(step);                  // optional: names the step in stall messages
//   model.backward(..., adapter)               // adapter.on_layer_grads_ready(l) -> layer_ready(l)
//   reducer.finish();                          // all buckets reduced and averaged
// Buckets are launched strictly in plan order (every rank issues the same collectives in the same
// order, as MPI requires), each as soon as all of its layers were reported. With gradient
// accumulation, only the last micro-batch's backward reports layers.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "core/step_timeline.h"
#include "parallel/bucket_plan.h"
#include "parallel/communicator.h"

namespace cpuft {

struct ReduceStats {
  int64_t step = 0;
  int buckets = 0;
  int64_t floats = 0;          // values all-reduced per rank (fp32, or bf16 under bf16 exchange)
  double comm_seconds = 0;     // union of [launch, observed completion] over the buckets
  double hidden_seconds = 0;   // part of comm_seconds before finish() was called
  double exposed_seconds = 0;  // time spent in finish() (waiting + averaging)
  double overlap_ratio = 0;    // hidden / comm (0 when there was no communication)
  int buckets_done_in_backward = 0;  // observed complete before finish() was called
};

class GradReducer {
 public:
  // `grads` is the flat gradient buffer the plan's ranges index (at least grads_floats floats).
  GradReducer(Communicator& comm, const BucketPlan& plan, float* grads, int64_t grads_floats);

  // Starts a step (optional: the first layer_ready() after finish() starts one with step + 1).
  void begin_step(int64_t step);
  // All gradients of `layer` are final. Launches every bucket that is now complete (in plan
  // order), then tests the buckets in flight. CPUFT_CHECK on an unknown or repeated layer.
  void layer_ready(int layer);
  // Tests the buckets in flight (their next rounds start inside the test): the backward pass calls
  // it between its products, so that a bucket keeps moving while a layer is computed. Cheap when
  // nothing is in flight.
  void poll();
  // Waits for every bucket (cpuft::Error after the communicator's timeout, naming rank, bucket and
  // step), then scales by 1 / world_size. CPUFT_CHECK if a layer was never reported.
  void finish();

  // Floats [begin, begin + rows x width) of the gradient are rows that are mostly zero in every
  // step: the word-embedding table, of which a batch looks up a few hundred rows out of tens of
  // thousands. Their bucket then exchanges only the rows some rank touched, exactly: a flag per
  // row first (all-reduced: the union of the ranks' nonzero rows, the same on every rank), then
  // those rows, packed to the front of the range in place and unpacked after. A row outside the
  // union is zero on every rank, so its sum is zero, as the dense all-reduce would give. The range
  // must lie in the plan's last bucket (the rows' all-reduce starts when the flags are in, after
  // every other bucket was launched, so every rank issues the collectives in the same order);
  // CPUFT_CHECK otherwise. Call before the first step. A no-op on one rank.
  struct SparseRows {
    int64_t begin = 0, rows = 0, width = 0;
  };
  void set_sparse_rows(const SparseRows& sparse);

  // Exchanges bf16 instead of fp32 gradients (half the bytes), as PyTorch DDP's
  // bf16_compress_hook: each rank divides its gradient by the world size and rounds it to bf16
  // into a staging copy (2 bytes per parameter, allocated here), the copies are summed (each pair
  // in fp32, rounded to bf16: Communicator::all_reduce_sum_bf16_async) and the sum is widened back
  // into the fp32 gradient. The sparse rows' flags stay fp32. Call before the first step. A no-op
  // on one rank.
  void set_bf16_exchange(bool on);
  bool bf16_exchange() const { return bf16_; }
  // Bytes of one exchanged gradient value: 2 under bf16 exchange, else 4 (the row flags are 4).
  int64_t value_bytes() const { return bf16_ ? 2 : 4; }

  const ReduceStats& last_stats() const { return stats_; }
  // What each bucket of the last finished step exchanged and when it could start: the input of an
  // exchange forecast (scaling/exchange_forecast.h) on a probed link (parallel/link_probe.h).
  struct BucketExchange {
    double ready_seconds = 0;  // launch time, since the step's last backward began (begin_step)
    int64_t bytes = 0;         // sent by this rank's all-reduces of the bucket (values x 2 or 4)
    int collectives = 1;       // all-reduces in sequence: 2 for the sparse rows (flags, then rows)
  };
  std::span<const BucketExchange> last_exchange() const { return exchange_; }
  // From begin_step() to finish(): the last micro-batch's backward, the time the exchange can hide
  // under.
  double last_backward_seconds() const { return last_backward_seconds_; }
  // Events per bucket ("allreduce", tid 1) and finish() ("exposed_comm", tid 0); nullptr: none.
  void set_timeline(StepTimeline* timeline) { timeline_ = timeline; }
  const BucketPlan& plan() const { return plan_; }

 private:
  using Clock = std::chrono::steady_clock;
  void launch_ready_buckets();
  void poll_in_flight();
  void complete(int bucket);
  // An all-reduce of grads_[data - grads_, + n): fp32 in place, or through the bf16 staging copy
  // (averaged before it is rounded); landed() widens a finished bf16 one back into the gradient.
  Communicator::Handle launch(float* data, int64_t n, const OpContext& context);
  void landed(float* data, int64_t n);
  // The sparse bucket (set_sparse_rows): launch its dense parts and the row flags; advance it
  // without blocking (true when all of it is done); or block until it is.
  void sparse_launch(int bucket);
  bool sparse_test();
  void sparse_wait();
  void sparse_pack_and_launch();
  void sparse_unpack();

  Communicator& comm_;
  const BucketPlan& plan_;
  float* grads_;
  int64_t grads_floats_;
  std::vector<int> pending_layers_;  // per bucket: layers not yet reported
  std::vector<uint8_t> reported_;    // per plan range: layer reported this step
  std::vector<Communicator::Handle> handles_;
  std::vector<uint8_t> done_;
  std::vector<Clock::time_point> launched_at_, done_at_;
  Clock::time_point began_at_{};          // begin_step(): the last micro-batch's backward begins
  std::vector<BucketExchange> exchange_;  // per bucket, filled by finish() (sized once)
  double last_backward_seconds_ = 0;
  int next_launch_ = 0;  // buckets [0, next_launch_) are launched
  int first_open_ = 0;   // buckets before it are complete
  bool in_step_ = false;
  int64_t step_ = -1;
  bool bf16_ = false;
  std::vector<bf16> staging_;  // bf16 exchange: a copy of the gradient buffer's layout
  // The sparse bucket's state: its phases, in order, and the buffers they use (sized once).
  enum class SparsePhase { flags, rows, done };
  SparseRows sparse_;
  int sparse_bucket_ = -1;  // -1: none
  SparsePhase sparse_phase_ = SparsePhase::done;
  std::vector<float> row_flags_;     // (rows): 1 where this rank's row is nonzero, then the sums
  std::vector<int64_t> union_rows_;  // the rows with a nonzero flag sum, ascending
  Communicator::Handle flags_handle_{}, rows_handle_{};
  Communicator::Handle dense_handles_[2] = {};  // the bucket's floats before and after the rows
  float* dense_data_[2] = {nullptr, nullptr};
  int64_t dense_floats_[2] = {0, 0};
  int dense_count_ = 0;
  bool dense_done_[2] = {false, false};
  int64_t sparse_floats_ = 0;  // floats the sparse bucket all-reduced this step
  int64_t sparse_bytes_ = 0;   // the bytes of those (the flags are fp32 under bf16 exchange too)
  ReduceStats stats_;
  StepTimeline* timeline_ = nullptr;
};

}  // namespace cpuft
