#include "step/train_step.h"

#include <algorithm>

#include "core/check.h"
#include "core/profile.h"

namespace cpuft {

namespace {

using Clock = PhaseTime::Clock;

double seconds_between(Clock::time_point begin, Clock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

// Per spec of `layout`, where the bf16 rounding of its values goes: into the target holding it (a
// target may hold several specs packed together, such as Q, K and V), or nowhere (nullptr).
std::vector<bf16*> bf16_copy_per_spec(const ParamLayout& layout, const float* params,
                                      const std::vector<Bf16Weights::Target>& targets) {
  const std::vector<ParamSpec>& specs = layout.specs();
  std::vector<bf16*> out(specs.size(), nullptr);
  int64_t wanted = 0, found = 0;
  for (const Bf16Weights::Target& t : targets) wanted += t.numel;
  for (size_t i = 0; i < specs.size(); ++i) {
    const int64_t first = specs[i].offset, last = first + specs[i].numel;
    for (const Bf16Weights::Target& t : targets) {
      const int64_t from = t.from - params;
      if (first >= from && last <= from + t.numel) {
        out[i] = t.to + (first - from);
        found += specs[i].numel;
        break;
      }
    }
  }
  CPUFT_CHECK(found == wanted, "bf16 copies: ", wanted, " values rounded, ", found,
              " of them in whole tensors");
  return out;
}

}  // namespace

const char* phase_name(StepPhase phase) {
  switch (phase) {
    case StepPhase::forward:
      return "forward";
    case StepPhase::backward:
      return "backward";
    case StepPhase::reduce:
      return "reduce";
    case StepPhase::optimizer:
      return "optimizer";
  }
  return "?";
}

void TimelineRecorder::on_phase(const PhaseTime& time) {
  if (time.phase == StepPhase::reduce) return;  // GradReducer records it as "exposed_comm"
  timeline_.add(phase_name(time.phase), "compute", timeline_.micros(time.begin),
                timeline_.micros(time.end), 0, time.step);
}

TrainStep::TrainStep(SequenceClassifier& model, const ParamLayout& layout,
                     AlignedBuffer<float>& params, AlignedBuffer<float>& grads,
                     Optimizer& optimizer, const StepOptions& options)
    : model_(model),
      params_(params),
      grads_(grads),
      p_(bind_params(layout, model.config(), params.data())),
      g_(bind_params(layout, model.config(), grads.data())),
      optimizer_(optimizer),
      options_(options),
      word_rows_(word_embedding_rows(layout)) {
  CPUFT_CHECK(static_cast<int64_t>(params.size()) == layout.total_floats() &&
              static_cast<int64_t>(grads.size()) == layout.total_floats());
  CPUFT_CHECK(options.accumulation >= 1, "accumulation ", options.accumulation);
  release_word_table_gradient(layout, grads_);  // small pages, handed back
  zero_dense_gradients();
  bf16_copy_ = bf16_copy_per_spec(layout, params.data(), model.bf16_targets(p_));
  const int64_t table_end = word_rows_.begin + word_rows_.rows * word_rows_.width;
  for (const ParamSpec& spec : layout.specs()) {
    const bool in_table = spec.offset >= word_rows_.begin && spec.offset < table_end;
    CPUFT_CHECK(
        !in_table || (spec.offset == word_rows_.begin && spec.offset + spec.numel == table_end),
        "the word table's rows are not one tensor");
    zero_in_pass_.push_back(in_table ? 0 : 1);
  }
}

void release_word_table_gradient(const ParamLayout& layout, AlignedBuffer<float>& grads) {
  const GradReducer::SparseRows rows = word_embedding_rows(layout);
  const size_t bytes = static_cast<size_t>(rows.rows * rows.width) * sizeof(float);
  keep_small_pages(grads.data() + rows.begin, bytes);
  release_zeroed(grads.data() + rows.begin, bytes);
}

size_t TrainStep::table_bytes() const {
  return static_cast<size_t>(word_rows_.rows * word_rows_.width) * sizeof(float);
}

void TrainStep::zero_dense_gradients() {
  float* g = grads_.data();
  const int64_t begin = word_rows_.begin, end = begin + word_rows_.rows * word_rows_.width;
  zero_bytes(g, static_cast<size_t>(begin) * sizeof(float));
  zero_bytes(g + end, (grads_.size() - static_cast<size_t>(end)) * sizeof(float));
}

void TrainStep::zero_word_table_gradient() {
  if (++steps_since_release_ >= kWordTableReleaseSteps) {
    release_zeroed(grads_.data() + word_rows_.begin, table_bytes());
    steps_since_release_ = 0;
  } else {
    zero_nonzero_rows(grads_.data(),
                      MostlyZeroRows{word_rows_.begin, word_rows_.rows, word_rows_.width});
  }
}

void TrainStep::Fanout::on_layer_grads_ready(int layer) {
  if (reducer) reducer->layer_ready(layer);
  if (listener) listener->on_layer_grads_ready(layer);
}

void TrainStep::Fanout::on_progress_point() {
  if (reducer) reducer->poll();
  if (listener) listener->on_progress_point();
}

void TrainStep::observe(StepPhase phase, int64_t step, int micro, Clock::time_point begin,
                        Clock::time_point end) const {
  if (observer_) observer_->on_phase(PhaseTime{phase, step, micro, begin, end});
}

StepResult TrainStep::run(int64_t step, std::span<const Batch> micro_batches, double lr) {
  const int micros = static_cast<int>(micro_batches.size());
  CPUFT_CHECK(micros >= 1 && micros <= options_.accumulation, micros, " micro-batches for ",
              options_.accumulation, " accumulation steps");
  // Each micro-batch's mean loss is divided by the accumulation steps, so that the accumulated
  // gradient is that of the mean over a full step's micro-batches (the divisor stays for a short
  // last step of an epoch).
  const float loss_scale = 1.0f / static_cast<float>(options_.accumulation);
  StepResult result;
  const Clock::time_point step_begin = Clock::now();

  double loss_sum = 0;
  for (int micro = 0; micro < micros; ++micro) {
    const bool last = micro + 1 == micros;
    // Dropout masks are keyed by the optimizer step and each sequence's number in the step's
    // global batch (Batch::sample_ids), so a resumed run draws the same masks as an uninterrupted
    // one, on any split of the step over ranks and micro-batches.
    const StepContext context{options_.seed, static_cast<uint64_t>(step), true};
    const Clock::time_point t0 = Clock::now();
    loss_sum +=
        model_.forward(p_, micro_batches[static_cast<size_t>(micro)], context, true, loss_scale);
    const Clock::time_point t1 = Clock::now();
    // Gradients are reduced once per optimizer step, during the last micro-batch's backward: its
    // layers are reported as they become final, and the reducer launches their buckets.
    if (last && fanout_.reducer) fanout_.reducer->begin_step(step);
    model_.backward(p_, g_, last && !fanout_.empty() ? &fanout_ : nullptr);
    const Clock::time_point t2 = Clock::now();
    result.forward_seconds += seconds_between(t0, t1);
    result.backward_seconds += seconds_between(t1, t2);
    observe(StepPhase::forward, step, micro, t0, t1);
    observe(StepPhase::backward, step, micro, t1, t2);
  }
  result.loss = loss_sum / static_cast<double>(micros);

  if (fanout_.reducer) {
    const Clock::time_point t0 = Clock::now();
    fanout_.reducer->finish();  // waits for the buckets in flight, averages over the ranks
    const Clock::time_point t1 = Clock::now();
    result.reduce_seconds = seconds_between(t0, t1);
    observe(StepPhase::reduce, step, 0, t0, t1);
  }
  if (observer_) observer_->on_gradients(step, grads_.span());

  const Clock::time_point t0 = Clock::now();
  {
    CPUFT_PROFILE("optimizer (clip+adamw+zero+bf16 refresh)");
    const auto n = static_cast<int64_t>(grads_.size());
    result.grad_norm = grad_norm(grads_.data(), n);
    // One pass over each tensor: the clip's factor applied as the gradients are read, the update,
    // the bf16 copy of the new weights (the products' next inputs), the gradient zeroed for the
    // next step's accumulation; the word table's gradient is zeroed by rows and pages after it.
    UpdatePass pass{.grad_scale = clip_coefficient(result.grad_norm, options_.max_grad_norm),
                    .bf16_copy = bf16_copy_,
                    .zero_grad = zero_in_pass_,
                    .sparse_rows = {word_rows_.begin, word_rows_.rows, word_rows_.width}};
    if (observer_) {  // it sees the clipped gradients: scaled here, the pass reads them as they are
      scale_gradients(grads_.data(), n, pass.grad_scale,
                      MostlyZeroRows{word_rows_.begin, word_rows_.rows, word_rows_.width});
      pass.grad_scale = 1;
      observer_->on_clipped_gradients(step, grads_.span());
    }
    optimizer_.step(params_.data(), grads_.data(), lr, pass);
    zero_word_table_gradient();
  }
  const Clock::time_point t1 = Clock::now();
  result.optimizer_seconds = seconds_between(t0, t1);
  observe(StepPhase::optimizer, step, 0, t0, t1);
  result.seconds = seconds_between(step_begin, t1);
  return result;
}

std::vector<LayerRange> backward_layer_ranges(const ParamLayout& layout) {
  std::vector<LayerRange> ranges;
  const int L = static_cast<int>(layout.layer_count());
  for (int layer = L + 1; layer >= kEmbeddingsLayer; --layer) {
    const auto [begin, end] = layout.layer_range(layer);
    if (layer >= 0 && layer < L) {  // an encoder layer: its FFN block is final first
      const int64_t ffn = layout.ffn_begin(layer);
      ranges.push_back(LayerRange{ffn_part_id(layer), ffn, end});
      ranges.push_back(LayerRange{layer, begin, ffn});
    } else {
      ranges.push_back(LayerRange{layer, begin, end});
    }
  }
  return ranges;
}

BucketPlan make_bucket_plan(const ParamLayout& layout, double cap_mb) {
  CPUFT_REQUIRE(cap_mb >= 0, "bucket cap ", cap_mb,
                " MB (want > 0, or 0: two buckets per encoder layer)");
  std::vector<LayerRange> ranges = backward_layer_ranges(layout);
  int64_t cap = static_cast<int64_t>(cap_mb * 1024 * 1024);
  if (cap_mb == 0) {  // each part of an encoder layer (its FFN block, the rest) a bucket
    cap = kDefaultBucketCapBytes;
    const int L = static_cast<int>(layout.layer_count());
    for (const LayerRange& r : ranges)
      if ((r.layer >= 0 && r.layer < L) || (r.layer >= kFfnPartIds && r.layer < kFfnPartIds + L))
        cap = std::min(cap, (r.end - r.begin) * static_cast<int64_t>(sizeof(float)));
  }
  cap = std::max<int64_t>(cap, 1);
  // A tiny model's layers are below DDP's 1 MB first cap: the first bucket closes at the same cap.
  const int64_t first_cap =
      cap_mb == 0 ? std::min(cap, kDefaultFirstBucketCapBytes) : kDefaultFirstBucketCapBytes;
  return BucketPlan(std::move(ranges), cap, first_cap);
}

GradReducer::SparseRows word_embedding_rows(const ParamLayout& layout) {
  // The family's word table is the embeddings entry viewed as ModelParams::word_emb
  // (BERT's word_embeddings, ModernBERT's tok_embeddings).
  const FamilyParamTables& tables = layout.tables();
  for (const auto& entry : tables.embeddings) {
    if (entry.view != &ModelParams::word_emb) continue;
    const ParamSpec& spec = layout.at(std::string(tables.embeddings_prefix) + entry.name);
    CPUFT_CHECK(spec.shape.size() == 2, spec.name, " is not a table");
    return {spec.offset, spec.shape[0], spec.shape[1]};
  }
  CPUFT_CHECK(false, "no word-embedding table in the parameter layout");
  return {};
}

}  // namespace cpuft
