// TrainStep on a tiny random BERT: what a step leaves behind, the order of its hooks, gradient
// accumulation and the reducer wiring. The numbers themselves are checked against Hugging Face by
// the golden tests (tests/golden), which run their three steps through TrainStep.
#include "step/train_step.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <new>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "gemm/matmul_plan.h"
#include "parallel/bucket_plan.h"
#include "parallel/communicator.h"

// Every C++ allocation of this test binary is counted, so a test can check that a step makes none
// (the array and nothrow forms call these).
namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace
void* operator new(std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t align) {
  ++g_allocations;
  const auto a = static_cast<std::size_t>(align);
  const std::size_t rounded =
      std::max<std::size_t>(a, (n + a - 1) / a * a);  // aligned_alloc's rule
  if (void* p = std::aligned_alloc(a, rounded)) return p;
  throw std::bad_alloc();
}
// The nothrow forms too: a sanitizer runtime (or the standard library) may provide them itself,
// and then memory it allocated would reach the free() below (gtest 1.16 allocates with them).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new(std::size_t n, std::align_val_t align, const std::nothrow_t&) noexcept {
  ++g_allocations;
  const auto a = static_cast<std::size_t>(align);
  return std::aligned_alloc(a, std::max<std::size_t>(a, (n + a - 1) / a * a));
}
// Not inlined: GCC would otherwise see free() on memory from operator new and warn.
__attribute__((noinline)) void operator delete(void* p) noexcept {
  std::free(p);
}
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
__attribute__((noinline)) void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
__attribute__((noinline)) void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
__attribute__((noinline)) void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
__attribute__((noinline)) void operator delete(void* p, std::align_val_t,
                                               const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace cpuft {
namespace {

// Dropout off, so that two runs of the same batch split differently are comparable.
const char* kTinyConfig = R"({
  "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
  "intermediate_size": 48, "max_position_embeddings": 32, "num_labels": 3,
  "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0
})";
// The same with every dropout on (embeddings, attention, hidden, classifier).
const char* kTinyDropoutConfig = R"({
  "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
  "intermediate_size": 48, "max_position_embeddings": 32, "num_labels": 3,
  "hidden_dropout_prob": 0.2, "attention_probs_dropout_prob": 0.2, "classifier_dropout": 0.3
})";
// A tiny ModernBERT with every dropout on and a sliding layer (window 2 on each side).
const char* kTinyModernBertDropoutConfig = R"({
  "model_type": "modernbert", "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "intermediate_size": 24, "max_position_embeddings": 32,
  "num_labels": 3, "pad_token_id": 0, "local_attention": 4, "global_attn_every_n_layers": 2,
  "embedding_dropout": 0.2, "attention_dropout": 0.2, "mlp_dropout": 0.2,
  "classifier_dropout": 0.3, "classifier_pooling": "mean"
})";
// A tiny DeBERTa with every dropout on, its layers' own position projections (share_att_key
// false) and the convolution after layer 0.
const char* kTinyDebertaDropoutConfig = R"({
  "model_type": "deberta-v2", "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "intermediate_size": 24, "max_position_embeddings": 32,
  "num_labels": 3, "pad_token_id": 0, "relative_attention": true, "pos_att_type": "p2c|c2p",
  "position_buckets": 8, "max_relative_positions": 16, "norm_rel_ebd": "layer_norm",
  "position_biased_input": false, "type_vocab_size": 0, "conv_kernel_size": 3,
  "hidden_dropout_prob": 0.2, "attention_probs_dropout_prob": 0.2, "pooler_dropout": 0.1,
  "cls_dropout": 0.3
})";

Batch random_batch(const ModelConfig& config, const std::vector<int>& lengths, uint32_t seed) {
  std::mt19937 rng(seed);
  Batch batch;
  for (int T : lengths) {
    std::vector<int32_t> ids(static_cast<size_t>(T)), types(static_cast<size_t>(T), 0);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % config.vocab_size);
    batch.add_sequence(ids, types);
    batch.labels.push_back(static_cast<int32_t>(rng() % config.num_labels));
  }
  return batch;
}

// A replica: weights, gradients, model, optimizer and its step.
struct Replica {
  explicit Replica(const StepOptions& options, const char* config_json = kTinyConfig,
                   bool recompute = false, MatmulPrecision precision = MatmulPrecision::f32)
      : config(parse_model_config(config_json, "tiny.json")),
        layout(config),
        params(static_cast<size_t>(layout.total_floats())),
        grads(static_cast<size_t>(layout.total_floats())),
        model(config, ModelLimits{64, 4, 16, recompute}, precision),
        adamw(layout, AdamWOptions{0.9, 0.999, 1e-8, 0.01}),
        step(model, layout, params, grads, adamw, options) {
    init_random_weights(layout, params.data(), 0.02f, 3);
    model.refresh_bf16_weights(bind_params(layout, config, params.data()));
  }
  ModelConfig config;
  ParamLayout layout;
  AlignedBuffer<float> params, grads;
  SequenceClassifier model;
  AdamW adamw;
  TrainStep step;
};

bool all_zero(const AlignedBuffer<float>& buffer) {
  for (size_t i = 0; i < buffer.size(); ++i)
    if (buffer[i] != 0.0f) return false;
  return true;
}

TEST(TrainStep, StartsAndEndsWithZeroGradientsAndUpdatesTheWeights) {
  Replica r(StepOptions{});
  r.grads[7] = 1.0f;  // a gradient left behind (by a gradient test, say): a new step clears it
  TrainStep step(r.model, r.layout, r.params, r.grads, r.adamw, StepOptions{});
  EXPECT_TRUE(all_zero(r.grads));
  const std::vector<float> before(r.params.data(), r.params.data() + r.params.size());
  const Batch batch = random_batch(r.config, {5, 9, 3}, 1);
  const StepResult result = step.run(0, {&batch, 1}, 1e-3);
  EXPECT_TRUE(all_zero(r.grads));
  EXPECT_EQ(r.adamw.steps_taken(), 1);
  EXPECT_NE(std::vector<float>(r.params.data(), r.params.data() + r.params.size()), before);
  EXPECT_NEAR(result.loss, std::log(3.0), 0.1);  // near-uniform logits of a fresh head
  EXPECT_GT(result.grad_norm, 0);
  EXPECT_GE(result.seconds, result.forward_seconds + result.backward_seconds);
  EXPECT_EQ(result.reduce_seconds, 0);
}

// Records what the hooks hear, in order.
struct Recorder final : StepObserver, GradListener {
  void on_phase(const PhaseTime& time) override {
    EXPECT_LE(time.begin, time.end);
    events.push_back(std::string(phase_name(time.phase)) + " " + std::to_string(time.micro));
  }
  void on_gradients(int64_t step, std::span<const float> grads) override {
    double sum = 0;
    for (float g : grads) sum += static_cast<double>(g) * g;
    events.push_back("gradients of step " + std::to_string(step));
    norm = std::sqrt(sum);
  }
  void on_layer_grads_ready(int layer) override {
    layers.push_back(layer);
    heard.push_back(layer);
  }
  // Progress points must come from the calling thread, outside any parallel region (MPI calls).
  void on_progress_point() override {
    heard.push_back(kProgress);
    if (omp_in_parallel()) in_parallel = true;
  }
  static constexpr int kProgress = -100;
  std::vector<std::string> events;
  std::vector<int> layers;
  std::vector<int> heard;  // layers and progress points, in order
  bool in_parallel = false;
  double norm = 0;
};

TEST(TrainStep, HooksHearThePhasesInOrderAndTheLastBackwardOnly) {
  Replica r(StepOptions{42, 2, 1.0});
  Recorder recorder;
  r.step.set_observer(&recorder);
  r.step.set_listener(&recorder);
  const Batch a = random_batch(r.config, {4, 6}, 1), b = random_batch(r.config, {7, 2}, 2);
  const std::vector<Batch> micro = {a, b};
  const StepResult result = r.step.run(3, micro, 1e-3);
  EXPECT_EQ(recorder.events,
            (std::vector<std::string>{"forward 0", "backward 0", "forward 1", "backward 1",
                                      "gradients of step 3", "optimizer 0"}));
  // Backward order, once: classifier, pooler, layers 1 and 0 (each its FFN block first),
  // embeddings.
  EXPECT_EQ(recorder.layers, (std::vector<int>{3, 2, ffn_part_id(1), 1, ffn_part_id(0), 0, -1}));
  EXPECT_NEAR(recorder.norm, result.grad_norm, 1e-6 * result.grad_norm);
}

// Between the layers' reports, each encoder layer's backward gives eight progress points (after
// each of its six row-wise products, attention and the QKV weight product; the last layer's after
// its own six, attention and the key/value weight product), its FFN block's report after the
// first four (the FFN products); none inside a parallel region.
// Each check runs for BERT and for ModernBERT (TEST per family, not TEST_P: this file replaces
// operator new, which GCC's mismatched-new-delete check confuses with gtest's parameter tables).
void check_progress_points(const char* config) {
  Replica r(StepOptions{42, 1, 1.0}, config);
  Recorder recorder;
  r.step.set_listener(&recorder);
  const Batch batch = random_batch(r.config, {4, 6, 3}, 1);
  r.step.run(0, {&batch, 1}, 1e-3);
  std::vector<int> expected = {3, 2};
  for (int layer : {1, 0}) {
    expected.insert(expected.end(), 4, Recorder::kProgress);
    expected.push_back(ffn_part_id(layer));
    expected.insert(expected.end(), 4, Recorder::kProgress);
    expected.push_back(layer);
  }
  expected.push_back(-1);
  EXPECT_EQ(recorder.heard, expected);
  EXPECT_FALSE(recorder.in_parallel);
}
TEST(TrainStep, BackwardGivesProgressPointsBetweenItsProducts) {
  check_progress_points(kTinyConfig);
}
TEST(TrainStep, ModernBertBackwardGivesProgressPointsBetweenItsProducts) {
  check_progress_points(kTinyModernBertDropoutConfig);
}

// Two micro-batches of two sequences each, with the loss divided by 2, give the gradient of the
// mean over the four sequences: the same loss and gradient norm as one batch of the four.
TEST(TrainStep, AccumulatedMicroBatchesMatchTheWholeBatch) {
  Replica whole(StepOptions{42, 1, 0.0});
  Replica split(StepOptions{42, 2, 0.0});
  const std::vector<int> lengths = {6, 6, 6, 6};
  const Batch batch = random_batch(whole.config, lengths, 5);
  std::vector<Batch> halves(2);
  for (int64_t s = 0; s < 4; ++s) {
    const auto begin = static_cast<size_t>(batch.seq_offsets[s]);
    halves[s / 2].add_sequence({batch.input_ids.data() + begin, 6},
                               {batch.token_type_ids.data() + begin, 6});
    halves[s / 2].labels.push_back(batch.labels[static_cast<size_t>(s)]);
  }
  const StepResult w = whole.step.run(0, {&batch, 1}, 1e-3);
  const StepResult s = split.step.run(0, halves, 1e-3);
  EXPECT_NEAR(s.loss, w.loss, 1e-6 * w.loss);
  EXPECT_NEAR(s.grad_norm, w.grad_norm, 1e-5 * w.grad_norm);
}

// With dropout on, a sequence's masks follow its sample id (its number in the step's global
// batch), not its place in a micro-batch: the batch split in two micro-batches (as two ranks or
// two accumulation steps would see it) gives the whole batch's loss and gradient norm. Numbered
// from 0 in each half instead, the halves draw other masks, and the step differs.
void check_dropout_follows_sample_ids(const char* config) {
  const std::vector<int> lengths = {5, 7, 6, 4};
  auto run = [&](bool numbered) {
    Replica whole(StepOptions{7, 1, 0.0}, config);
    Replica split(StepOptions{7, 2, 0.0}, config);
    const Batch batch = random_batch(whole.config, lengths, 9);
    std::vector<Batch> halves(2);
    for (int64_t s = 0; s < 4; ++s) {
      Batch& half = halves[static_cast<size_t>(s % 2)];  // sequences 0, 2 | 1, 3, as 2 ranks
      const auto begin = static_cast<size_t>(batch.seq_offsets[s]);
      const auto n = static_cast<size_t>(batch.length(s));
      half.add_sequence({batch.input_ids.data() + begin, n},
                        {batch.token_type_ids.data() + begin, n});
      half.labels.push_back(batch.labels[static_cast<size_t>(s)]);
      if (numbered) half.sample_ids.push_back(s);
    }
    const StepResult w = whole.step.run(4, {&batch, 1}, 1e-3);
    const StepResult h = split.step.run(4, halves, 1e-3);
    return std::pair{w, h};
  };
  const auto [w, h] = run(true);
  EXPECT_NEAR(h.loss, w.loss, 1e-6 * w.loss);
  EXPECT_NEAR(h.grad_norm, w.grad_norm, 1e-5 * w.grad_norm);
  const auto [w2, h2] = run(false);
  EXPECT_EQ(w2.loss, w.loss);
  EXPECT_GT(std::abs(h2.loss - w.loss), 1e-4 * w.loss);
}
TEST(TrainStep, DropoutMasksFollowTheSampleIdsNotTheSplit) {
  check_dropout_follows_sample_ids(kTinyDropoutConfig);
}
TEST(TrainStep, ModernBertDropoutMasksFollowTheSampleIdsNotTheSplit) {
  check_dropout_follows_sample_ids(kTinyModernBertDropoutConfig);
}

TEST(TrainStep, RefusesMoreMicroBatchesThanAccumulationSteps) {
  Replica r(StepOptions{});
  const std::vector<Batch> micro(2, random_batch(r.config, {3}, 1));
  EXPECT_THROW(r.step.run(0, micro, 1e-3), Error);
  EXPECT_THROW(r.step.run(0, {}, 1e-3), Error);
}

// With a reducer (one process: averaging over one rank changes nothing), every layer reaches it
// during the last backward and finish() runs: the result equals the step without one.
TEST(TrainStep, ReducerHearsEveryLayerAndIsFinished) {
  Replica plain(StepOptions{});
  Replica reduced(StepOptions{});
  const BucketPlan plan(backward_layer_ranges(reduced.layout), 4 * 1024, 1024);
  SingleProcessCommunicator comm;
  GradReducer reducer(comm, plan, reduced.grads.data(), reduced.layout.total_floats());
  reduced.step.set_reducer(&reducer);
  const Batch batch = random_batch(plain.config, {5, 8}, 9);
  for (int64_t step = 0; step < 2; ++step) {
    const StepResult a = plain.step.run(step, {&batch, 1}, 1e-3);
    const StepResult b = reduced.step.run(step, {&batch, 1}, 1e-3);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.grad_norm, b.grad_norm);
    EXPECT_EQ(reducer.last_stats().step, step);
    EXPECT_EQ(reducer.last_stats().buckets, plan.num_buckets());
  }
  for (size_t i = 0; i < plain.params.size(); ++i)
    ASSERT_EQ(plain.params[i], reduced.params[i]) << i;
}

// Once warm (the first step registers its profile regions), a step allocates nothing of its own,
// with accumulation, a reducer and a timeline: exactly the allocations of the model's forward and
// backward passes, which are oneDNN's small per-call argument maps (src/gemm/matmul_plan.cc), never
// a buffer.
void check_allocates_nothing(const char* config, MatmulPrecision precision = MatmulPrecision::f32) {
  Replica r(StepOptions{42, 2, 1.0}, config, false, precision);
  const BucketPlan plan(backward_layer_ranges(r.layout), 4 * 1024, 1024);
  SingleProcessCommunicator comm;
  GradReducer reducer(comm, plan, r.grads.data(), r.layout.total_floats());
  StepTimeline timeline;
  TimelineRecorder recorder(timeline);
  r.step.set_reducer(&reducer);
  r.step.set_observer(&recorder);
  const std::vector<Batch> micro = {random_batch(r.config, {4, 6}, 1),
                                    random_batch(r.config, {7, 2, 5}, 2)};
  const int64_t primitives_before = onednn_primitives_created();
  r.step.run(0, micro, 1e-3);
  const int64_t before_step = g_allocations.load();
  r.step.run(1, micro, 1e-3);
  const int64_t step_allocations = g_allocations.load() - before_step;
  // Every oneDNN primitive was created with the model, none in a step (the first included).
  EXPECT_EQ(onednn_primitives_created(), primitives_before);

  // The model's passes alone, on the same micro-batches (their gradients are discarded).
  const ModelParams p = bind_params(r.layout, r.config, r.params.data());
  const ModelParams g = bind_params(r.layout, r.config, r.grads.data());
  const int64_t before_model = g_allocations.load();
  for (const Batch& batch : micro) {
    r.model.forward(p, batch, StepContext{});
    r.model.backward(p, g);
  }
  const int64_t model_allocations = g_allocations.load() - before_model;
  EXPECT_EQ(step_allocations, model_allocations);
  // 2 steps x (2 forward, 2 backward, 1 optimizer); the reduce phase is the reducer's to record.
  EXPECT_EQ(timeline.size(), 10u);
}
TEST(TrainStep, AllocatesNothingOfItsOwnOnceWarm) {
  check_allocates_nothing(kTinyConfig);
}
TEST(TrainStep, ModernBertAllocatesNothingOfItsOwnOnceWarm) {
  check_allocates_nothing(kTinyModernBertDropoutConfig);
}
TEST(TrainStep, DebertaAllocatesNothingOfItsOwnOnceWarm) {
  check_allocates_nothing(kTinyDebertaDropoutConfig);
}
TEST(TrainStep, Bf16AllocatesNothingOfItsOwnOnceWarm) {
  if (!cpu_has_bf16_matmul()) GTEST_SKIP() << "no bf16 matrix instructions";
  check_allocates_nothing(kTinyDropoutConfig, MatmulPrecision::bf16);
}

// Only sees the clipped gradients; attaching it makes the step scale them before the update pass,
// which then reads them as they are.
struct ClippedGradients final : StepObserver {
  void on_clipped_gradients(int64_t, std::span<const float>) override { ++seen; }
  int seen = 0;
};

// The optimizer's one pass (the clip's factor applied as it reads, the bf16 copies written from the
// new weights, the gradients zeroed) leaves what the separate passes leave: a replica whose step
// scales the gradients first (an observer is attached) and whose bf16 copies are refreshed again
// after every step ends with the same bits, every family, fp32 and bf16, with the clip active.
TEST(TrainStep, OnePassUpdateEqualsTheSeparatePasses) {
  std::vector<MatmulPrecision> precisions = {MatmulPrecision::f32};
  if (cpu_has_bf16_matmul()) precisions.push_back(MatmulPrecision::bf16);
  for (const char* config :
       {kTinyDropoutConfig, kTinyModernBertDropoutConfig, kTinyDebertaDropoutConfig})
    for (MatmulPrecision precision : precisions) {
      const StepOptions options{42, 1, 0.05};  // a norm of 0.05 clips every step here
      Replica one_pass(options, config, false, precision),
          separate(options, config, false, precision);
      ClippedGradients observer;
      separate.step.set_observer(&observer);
      const ModelParams p = bind_params(separate.layout, separate.config, separate.params.data());
      for (int64_t step = 0; step < 3; ++step) {
        const Batch batch =
            random_batch(one_pass.config, {5, 9, 3, 12}, static_cast<uint32_t>(40 + step));
        const StepResult a = one_pass.step.run(step, {&batch, 1}, 1e-3);
        const StepResult b = separate.step.run(step, {&batch, 1}, 1e-3);
        separate.model.refresh_bf16_weights(p);
        EXPECT_GT(a.grad_norm, options.max_grad_norm) << step;
        EXPECT_EQ(a.loss, b.loss) << step;
        EXPECT_EQ(a.grad_norm, b.grad_norm) << step;
        EXPECT_TRUE(all_zero(one_pass.grads)) << step;
      }
      EXPECT_EQ(observer.seen, 3);
      EXPECT_EQ(std::vector<float>(one_pass.params.span().begin(), one_pass.params.span().end()),
                std::vector<float>(separate.params.span().begin(), separate.params.span().end()))
          << config << (precision == MatmulPrecision::bf16 ? " bf16" : " fp32");
    }
}

// The default plan (cap 0) gives each encoder layer two buckets of its own, its FFN block's and the
// rest's: the first bucket (DDP's 1 MB cap) takes classifier, pooler and the last layer's FFN
// block; then the rest of that layer, then two buckets per layer; the embeddings last. A cap as
// large as the model gives DDP's plan: one small first bucket, then everything else.
TEST(TrainStep, DefaultBucketPlanHasTwoBucketsPerEncoderLayer) {
  Replica r(StepOptions{});
  const int layers = static_cast<int>(r.layout.layer_count());
  ASSERT_GE(layers, 2);
  const BucketPlan plan = make_bucket_plan(r.layout, 0);
  std::vector<std::vector<int>> expected = {{layers + 1, layers, ffn_part_id(layers - 1)},
                                            {layers - 1}};
  for (int l = layers - 2; l >= 0; --l) {
    expected.push_back({ffn_part_id(l)});
    expected.push_back({l});
  }
  expected.push_back({kEmbeddingsLayer});
  ASSERT_EQ(plan.num_buckets(), static_cast<int>(expected.size())) << plan.describe();
  for (size_t b = 0; b < expected.size(); ++b)
    EXPECT_EQ(plan.buckets()[b].layers, expected[b]) << b << "\n" << plan.describe();
  // The FFN block's range is the tail of its layer's: ffn_in first (BERT's table order).
  const auto [begin, end] = r.layout.layer_range(0);
  EXPECT_EQ(r.layout.ffn_begin(0),
            r.layout.at(layer_prefix(r.layout.tables(), 0) + "intermediate.dense.weight").offset);
  EXPECT_GT(r.layout.ffn_begin(0), begin);
  EXPECT_LT(r.layout.ffn_begin(0), end);
  const BucketPlan whole = make_bucket_plan(r.layout, 1024);
  EXPECT_LT(whole.num_buckets(), plan.num_buckets());
  EXPECT_THROW(make_bucket_plan(r.layout, -1), Error);
}

// ModelLimits::recompute (--gradient_checkpointing) keeps neither the GELU outputs nor the
// attention probabilities and recomputes them in backward with the forward's code: the same loss,
// gradient norm and weights, bit for bit, over three steps with every dropout on.
TEST(TrainStep, RecomputingInBackwardGivesTheSameBits) {
  // Three layers: the first two are full layers, whose activations a recomputation replaces (the
  // last one is the first-token layer, which keeps its own).
  const char* config = R"({
    "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
    "intermediate_size": 48, "max_position_embeddings": 32, "num_labels": 3,
    "hidden_dropout_prob": 0.2, "attention_probs_dropout_prob": 0.2, "classifier_dropout": 0.3})";
  Replica kept(StepOptions{}, config), recomputed(StepOptions{}, config, true);
  for (int64_t step = 0; step < 3; ++step) {
    const Batch batch = random_batch(kept.config, {5, 9, 3, 12}, static_cast<uint32_t>(20 + step));
    const StepResult a = kept.step.run(step, {&batch, 1}, 1e-3);
    const StepResult b = recomputed.step.run(step, {&batch, 1}, 1e-3);
    EXPECT_EQ(a.loss, b.loss) << step;
    EXPECT_EQ(a.grad_norm, b.grad_norm) << step;
  }
  EXPECT_EQ(std::vector<float>(kept.params.span().begin(), kept.params.span().end()),
            std::vector<float>(recomputed.params.span().begin(), recomputed.params.span().end()));
}

// The word table's gradient holds memory only for the pages of the rows written since its pages
// were last handed back (every kWordTableReleaseSteps steps): during each step (seen from
// on_gradients, before clipping) at most those rows' pages, and none after the release; the table
// of 40,000 rows x 32 is 1250 pages, all written if a step zeroed it by writing. The clip and
// AdamW read the whole table, which maps the kernel's shared zero page and holds no memory, so a
// page counts when /proc/self/pagemap says it is present and this process's alone (bit 56).
TEST(TrainStep, WordTableGradientHoldsOnlyTheTouchedRowsPages) {
  const char* config = R"({
    "vocab_size": 40000, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 48, "max_position_embeddings": 32, "num_labels": 3,
    "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0})";
  Replica r(StepOptions{1, 1, 1e-6}, config);  // a tiny max_grad_norm: the clip scales
  const GradReducer::SparseRows rows = word_embedding_rows(r.layout);
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const int pagemap = open("/proc/self/pagemap", O_RDONLY);
  if (pagemap < 0) GTEST_SKIP() << "no /proc/self/pagemap";
  auto written_pages = [&] {
    const auto begin = reinterpret_cast<uintptr_t>(r.grads.data() + rows.begin) / page;
    const auto end =
        (reinterpret_cast<uintptr_t>(r.grads.data() + rows.begin + rows.rows * rows.width) + page -
         1) /
        page;
    std::vector<uint64_t> entries(end - begin);
    const auto bytes = static_cast<ssize_t>(entries.size() * sizeof(uint64_t));
    EXPECT_EQ(pread(pagemap, entries.data(), static_cast<size_t>(bytes),
                    static_cast<off_t>(begin * sizeof(uint64_t))),
              bytes);
    int64_t n = 0;
    for (uint64_t e : entries) n += (e >> 63 & 1) && (e >> 56 & 1);  // present, exclusive
    return n;
  };
  struct Probe : StepObserver {
    std::function<int64_t()> count;
    int64_t during = -1;
    void on_gradients(int64_t, std::span<const float>) override { during = count(); }
  } probe;
  probe.count = written_pages;
  r.step.set_observer(&probe);
  std::set<int32_t> written;  // the rows written since the last release
  for (int step = 0; step < kWordTableReleaseSteps; ++step) {
    const Batch batch = random_batch(r.config, {5, 9, 3}, static_cast<uint64_t>(step + 1));
    written.insert(batch.input_ids.begin(), batch.input_ids.end());
    const StepResult result = r.step.run(step, {&batch, 1}, 1e-3);
    EXPECT_GT(result.grad_norm, 1e-6);
    if (step == 0 && probe.during == 0)  // a sandbox's pagemap without the flags
      GTEST_SKIP() << "/proc/self/pagemap shows no written page";
    // A row is 128 bytes here, so each written row adds at most one page (two at the ends).
    EXPECT_LE(probe.during, static_cast<int64_t>(written.size()) + 2)
        << "step " << step << ": pages of rows no step wrote";
    EXPECT_TRUE(all_zero(r.grads)) << "step " << step;
  }
  EXPECT_LE(written_pages(), 2) << "after the release (the partial pages at the ends may stay)";
  close(pagemap);
}

// The sparse exchange of the word table finds each family's table (BERT's word_embeddings,
// ModernBERT's tok_embeddings).
TEST(TrainStep, WordEmbeddingRowsAreTheFamilysWordTable) {
  for (const char* config : {kTinyConfig, kTinyModernBertDropoutConfig}) {
    Replica r(StepOptions{}, config);
    const GradReducer::SparseRows rows = word_embedding_rows(r.layout);
    const ModelParams p = bind_params(r.layout, r.config, r.params.data());
    EXPECT_EQ(r.params.data() + rows.begin, p.word_emb);
    EXPECT_EQ(rows.rows, r.config.vocab_size);
    EXPECT_EQ(rows.width, r.config.hidden_size);
  }
}

}  // namespace
}  // namespace cpuft
