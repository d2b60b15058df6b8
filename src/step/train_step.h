// TrainStep: one optimizer step of a model replica, the only place the step is written.
//
//   for each micro-batch m of the step:                        (gradient accumulation)
//     forward (loss scaled by 1 / accumulation)  →  backward (gradients accumulate)
//   [GradReducer: begun before the last micro-batch's backward, which reports its layers to it,
//    finished after it: the gradients are then averaged over the ranks]
//   the gradients' norm → Optimizer::step(lr) in one pass over each tensor: the clip's scaling,
//   the update, the bf16 copies of the new weights (--bf16), the gradients zeroed (UpdatePass)
//
// Every caller runs this: Trainer::train, `cpuft bench --scaling` (train/scaling.cc),
// cpuft_bench_step, the golden tests (tests/golden/golden_model.h) and the distributed
// equivalence test, so the benchmarks time and the tests check the trainer's step.
//
// The step holds references: the model, the flat parameter and gradient buffers and the optimizer
// belong to the caller (the trainer also evaluates, checkpoints and resumes them). run() allocates
// nothing and creates no primitive; it calls into objects sized at construction.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "core/buffer.h"
#include "core/step_timeline.h"
#include "model/batch.h"
#include "model/model_params.h"
#include "model/param_layout.h"
#include "model/sequence_classifier.h"
#include "optim/adamw.h"
#include "optim/optimizer.h"
#include "parallel/bucket_plan.h"
#include "parallel/grad_reducer.h"

namespace cpuft {

struct StepOptions {
  uint64_t seed = 42;        // dropout: StepContext{seed, step}, with the batches' sample_ids
  int64_t accumulation = 1;  // micro-batches per optimizer step
  double max_grad_norm = 1;  // clip_grad_norm's max_norm (<= 0: no clipping)
};

// What a step measured. Phase times are wall-clock seconds on the calling thread.
struct StepResult {
  double loss = 0;               // mean over the micro-batches of their (unscaled) mean losses
  double grad_norm = 0;          // global L2 norm of the (reduced) gradients, before clipping
  double forward_seconds = 0;    // summed over the micro-batches
  double backward_seconds = 0;   // summed over the micro-batches
  double reduce_seconds = 0;     // waiting in GradReducer::finish (0 without a reducer)
  double optimizer_seconds = 0;  // clip + optimizer + bf16 refresh + zeroing
  double seconds = 0;            // the whole step
};

enum class StepPhase { forward, backward, reduce, optimizer };
const char* phase_name(StepPhase phase);  // "forward", "backward", "reduce", "optimizer"

struct PhaseTime {
  using Clock = std::chrono::steady_clock;
  StepPhase phase;
  int64_t step;  // the optimizer step
  int micro;     // the micro-batch (forward, backward); 0 for reduce and optimizer
  Clock::time_point begin, end;
};

// Watches a step from outside (timelines, stopwatches, tests); both hooks default to nothing and
// are called on the step's thread. They must not allocate if the caller wants an allocation-free
// step.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // A phase has ended: forward and backward once per micro-batch, reduce (with a reducer) and
  // optimizer once per step.
  virtual void on_phase(const PhaseTime& /*time*/) {}
  // The step's gradients, accumulated and reduced, just before clipping.
  virtual void on_gradients(int64_t /*step*/, std::span<const float> /*grads*/) {}
  // The same after clipping: exactly what the optimizer receives.
  virtual void on_clipped_gradients(int64_t /*step*/, std::span<const float> /*grads*/) {}
};

// Records "forward", "backward" and "optimizer" events (category "compute", tid 0, argument: the
// step) into a StepTimeline; the reducer records its own "allreduce" and "exposed_comm" events.
class TimelineRecorder final : public StepObserver {
 public:
  explicit TimelineRecorder(StepTimeline& timeline) : timeline_(timeline) {}
  void on_phase(const PhaseTime& time) override;

 private:
  StepTimeline& timeline_;
};

// Every this many steps the word table's gradient pages go back to the kernel (release_zeroed);
// the steps in between zero only the rows that were written (zero_nonzero_rows). Handing them
// back after every step cost a page fault for each page the next step wrote, and one for each
// page the clip and AdamW read (mapping the kernel's zero page): see docs/ARCHITECTURE.md.
// Between releases the table's gradient holds the pages of the rows written since the last one.
inline constexpr int kWordTableReleaseSteps = 16;

class TrainStep {
 public:
  // `params` and `grads` hold layout.total_floats() floats; the model's views of them are bound
  // here. The gradients are zeroed: a step starts from zero gradients and leaves them zero. The
  // word table's gradient starts as pages handed back (core/buffer.h, release_zeroed): a step
  // writes only its tokens' rows, so the table's gradient holds memory for the rows of the last
  // kWordTableReleaseSteps steps at most (MiniLM on MRPC: about 11 MB more than one step's rows,
  // of its 47 MB; XLM-R's table is 768 MB), and the step never zeroes the rest.
  TrainStep(SequenceClassifier& model, const ParamLayout& layout, AlignedBuffer<float>& params,
            AlignedBuffer<float>& grads, Optimizer& optimizer, const StepOptions& options);

  // Averages the gradients over the ranks during the last micro-batch's backward; nullptr: none.
  // The reducer must index `grads`.
  void set_reducer(GradReducer* reducer) { fanout_.reducer = reducer; }
  // Also hears the last micro-batch's backward, layer by layer (after the reducer); nullptr: none.
  void set_listener(GradListener* listener) { fanout_.listener = listener; }
  void set_observer(StepObserver* observer) { observer_ = observer; }

  // Optimizer step `step` (0-based; numbers the dropout masks and the reducer's step) over 1 to
  // options.accumulation micro-batches with learning rate `lr`. Fewer micro-batches (the end of an
  // epoch) keep the loss scale 1 / accumulation.
  StepResult run(int64_t step, std::span<const Batch> micro_batches, double lr);

 private:
  // What the last micro-batch's backward reports: the reducer first (it launches buckets), then
  // the caller's listener.
  struct Fanout final : GradListener {
    void on_layer_grads_ready(int layer) override;
    void on_progress_point() override;  // the reducer's buckets in flight make progress
    bool empty() const { return reducer == nullptr && listener == nullptr; }
    GradReducer* reducer = nullptr;
    GradListener* listener = nullptr;
  };
  void observe(StepPhase phase, int64_t step, int micro, PhaseTime::Clock::time_point begin,
               PhaseTime::Clock::time_point end) const;

  SequenceClassifier& model_;
  AlignedBuffer<float>& params_;
  AlignedBuffer<float>& grads_;
  ModelParams p_, g_;  // the model's views of params_ and grads_
  Optimizer& optimizer_;
  StepOptions options_;
  void zero_word_table_gradient();  // after a step: by rows and pages (kWordTableReleaseSteps)
  void zero_dense_gradients();      // all but the word table's
  size_t table_bytes() const;
  // The word table's gradient rows: written only where a step's tokens are, so the rest of the
  // range is kept as never-written pages (zero_gradients, clip_grad_norm's MostlyZeroRows).
  GradReducer::SparseRows word_rows_;
  int steps_since_release_ = 0;  // steps since the word table's gradient pages were handed back
  // Per ParamSpec, what the optimizer's pass does besides the update (UpdatePass): where it writes
  // the bf16 copies the products read (all nullptr in fp32), and which gradients it zeroes (all
  // but the word table's, zeroed by zero_word_table_gradient()).
  std::vector<bf16*> bf16_copy_;
  std::vector<uint8_t> zero_in_pass_;
  Fanout fanout_;
  StepObserver* observer_ = nullptr;
};

// Every layer's parameter range in the order backward finishes them (classifier, pooler, layers
// L-1 .. 0, embeddings): what a BucketPlan groups into all-reduce buckets.
std::vector<LayerRange> backward_layer_ranges(const ParamLayout& layout);

// The bucket plan of `cpuft train --bucket_cap_mb` and `cpuft bench --scaling`: cap_mb > 0 caps
// the buckets as DDP's bucket_cap_mb; 0 (the default) gives every encoder layer two buckets of its
// own, its FFN block (final first, grad_listener.h) and the rest (the cap is the smallest of those
// parts, at most DDP's 25 MB). Smaller buckets start the exchange earlier in backward: MiniLM-L6 (7
// MB a layer) on a 1600 Mbit/s link went from 3 buckets at 25 MB to 7 (a layer each), and from 69.5
// to 75.3 samples/s; the FFN blocks' own buckets shorten what is left after backward
// (docs/distributed.md). The first bucket keeps DDP's 1 MB cap.
BucketPlan make_bucket_plan(const ParamLayout& layout, double cap_mb);

// Hands the word table's part of `grads` back to the kernel (core/buffer.h: small pages, then
// release_zeroed). TrainStep does it when it is made; the trainer also does it right after
// allocating the gradients, so that the run's peak memory never holds the untouched rows (the
// activation arena and the optimizer state come after it).
void release_word_table_gradient(const ParamLayout& layout, AlignedBuffer<float>& grads);

// The word-embedding table (V, E) as rows GradReducer may exchange sparsely: a batch looks up a
// few hundred of its rows, and the other rows' gradients are exactly zero.
GradReducer::SparseRows word_embedding_rows(const ParamLayout& layout);

}  // namespace cpuft
