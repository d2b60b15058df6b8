// Data parallelism changes nothing but speed: 2 ranks with half a batch each, gradients averaged by
// GradReducer, equal 1 rank with the whole batch. Run under mpirun -np 2 (ctest -L dist), with the
// MPI or the oneCCL communicator.
//
// On the tiny golden fixture (B = 4, dropout 0): rank r takes sequences r, r + 2. Each rank's loss
// is the mean over its 2 sequences, so the average of the two ranks' gradients is the gradient of
// the mean over all 4: the averaged gradients must match the whole-batch gradients (relative L2
// 1e-5 per tensor), and after 3 AdamW steps with clipping (every rank runs the optimizer on the
// averaged gradients) the parameters must match the whole-batch run within 1e-5 and be bitwise
// identical across ranks (hash compared with all_gather_string). The whole-batch reference is
// computed on every rank, in the same process.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/check.h"
#include "core/stats.h"
#include "golden/golden_util.h"
#include "io/hf_checkpoint.h"
#include "model/param_layout.h"
#include "model/sequence_classifier.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "parallel/bucket_plan.h"
#include "parallel/communicator.h"
#include "parallel/grad_reducer.h"
#include "parallel/launcher.h"
#include "step/train_step.h"

namespace cpuft {
namespace {

using namespace golden;

int g_rank = 0;
int g_failures = 0;

#define EXPECT_OR_COUNT(condition, ...)                                    \
  do {                                                                     \
    if (!(condition)) {                                                    \
      std::fprintf(stderr, "rank %d: FAILED %s: %s\n", g_rank, #condition, \
                   ::cpuft::str(__VA_ARGS__).c_str());                     \
      ++g_failures;                                                        \
    }                                                                      \
  } while (0)

Batch shard(const Batch& batch, int rank, int world) {
  Batch part;
  for (int64_t s = rank; s < batch.num_sequences(); s += world) {
    const int64_t begin = batch.seq_offsets[s], end = batch.seq_offsets[s + 1];
    const auto n = static_cast<size_t>(end - begin);
    part.add_sequence({batch.input_ids.data() + begin, n},
                      {batch.token_type_ids.data() + begin, n});
    if (!batch.labels.empty()) part.labels.push_back(batch.labels[static_cast<size_t>(s)]);
    if (!batch.targets.empty()) part.targets.push_back(batch.targets[static_cast<size_t>(s)]);
    part.sample_ids.push_back(s);  // its number in the whole batch: the same dropout masks
  }
  return part;
}

// A copy of one step's gradients as the step saw them before clipping (reduced, for a replica
// with a reducer).
class GradientsAt final : public StepObserver {
 public:
  explicit GradientsAt(int64_t step) : step_(step) {}
  void on_gradients(int64_t step, std::span<const float> grads) override {
    if (step == step_) copy.assign(grads.begin(), grads.end());
  }
  std::vector<float> copy;

 private:
  int64_t step_;
};

// One model replica: parameters, gradients, a model sized for its batch, an optimizer and the
// trainer's step over them.
struct Replica {
  Replica(const SafetensorsFile& file, const ModelConfig& config, const ParamLayout& layout,
          const Batch& batch_in, const AdamWOptions& adamw_options, const StepOptions& options)
      : batch(batch_in),
        params(static_cast<size_t>(layout.total_floats())),
        grads(static_cast<size_t>(layout.total_floats())),
        model(config, ModelLimits{batch.num_tokens(), batch.num_sequences(), 64}),
        adamw(layout, adamw_options),
        step(model, layout, params, grads, adamw, options) {
    load_hf_weights(file, layout, config, params.data(), LoadOptions{"init.", 0});
  }
  Batch batch;
  AlignedBuffer<float> params, grads;
  SequenceClassifier model;
  AdamW adamw;
  TrainStep step;
};

int run(const std::string& backend) {
  auto comm = make_communicator(backend, detect_launch_from_process_env());
  g_rank = comm->rank();
  CPUFT_REQUIRE(comm->world_size() == 2, "run under mpirun -np 2 (world size is ",
                comm->world_size(), ")");

  const SafetensorsFile file = SafetensorsFile::open(fixture_path("golden_tiny_cls.safetensors"));
  const ModelConfig config = parse_model_config(file.metadata().at("config"), file.label());
  const ParamLayout layout(config);
  const Batch batch = batch_from_fixture(file, config);
  CPUFT_REQUIRE(batch.num_sequences() % comm->world_size() == 0, "batch of ", batch.num_sequences(),
                " does not split evenly");
  const nlohmann::json hyper = metadata_json(file, "hyper");
  const AdamWOptions adamw_options{hyper.at("beta1"), hyper.at("beta2"), hyper.at("eps"),
                                   hyper.at("weight_decay")};
  const LrSchedule schedule{ScheduleKind::linear, hyper.at("lr"), hyper.at("warmup_steps"),
                            hyper.at("total_steps")};
  const double max_grad_norm = hyper.at("max_grad_norm");
  const std::vector<std::string> zero = zero_true_grad(file);

  // The whole batch as rank 0 would see it alone; this rank's half, averaged with the other's.
  Replica whole(file, config, layout, batch, adamw_options, StepOptions{42, 1, max_grad_norm});
  Replica part(file, config, layout, shard(batch, comm->rank(), comm->world_size()), adamw_options,
               StepOptions{42, 1, max_grad_norm});
  // Small caps so that the tiny model gets several buckets: {classifier, pooler}, {1}, {0}, {-1}.
  const BucketPlan plan(backward_layer_ranges(layout), 16 * 1024, 1024);
  CPUFT_REQUIRE(plan.num_buckets() >= 3, "expected several buckets, got ", plan.num_buckets());
  GradReducer reducer(*comm, plan, part.grads.data(), layout.total_floats());
  // As cpuft train: the ranks' halves look up different word-embedding rows, exchanged sparsely.
  reducer.set_sparse_rows(word_embedding_rows(layout));
  part.step.set_reducer(&reducer);
  GradientsAt whole_step0(0), part_step0(0);
  whole.step.set_observer(&whole_step0);
  part.step.set_observer(&part_step0);

  const std::vector<std::string> fingerprints = comm->all_gather_string(plan.fingerprint());
  for (const std::string& f : fingerprints)
    CPUFT_REQUIRE(f == fingerprints[0], "ranks disagree on the bucket plan");

  double lr_sum = 0;
  for (int64_t step = 0; step < 3; ++step) {
    const double whole_norm = whole.step.run(step, {&whole.batch, 1}, schedule.lr(step)).grad_norm;
    const double part_norm = part.step.run(step, {&part.batch, 1}, schedule.lr(step)).grad_norm;
    EXPECT_OR_COUNT(std::abs(whole_norm - part_norm) <= 1e-5 * whole_norm, "step ", step,
                    " gradient norm ", part_norm, " vs whole batch ", whole_norm);
    lr_sum += schedule.lr(step);
  }

  // Step 0's averaged gradients against the whole batch's, before clipping.
  const double global = l2(whole_step0.copy.data(), layout.total_floats());
  for (const ParamSpec& spec : layout.specs()) {
    const float* ours = part_step0.copy.data() + spec.offset;
    const float* ref = whole_step0.copy.data() + spec.offset;
    const double ref_norm = l2(ref, spec.numel);
    const double error = relative_l2(ours, ref, spec.numel) * ref_norm;
    // Exactly-zero gradients (key biases) are rounding noise on both sides: floor of 1e-6 of the
    // global norm, as the golden tests.
    EXPECT_OR_COUNT(error <= 1e-5 * ref_norm + (contains(zero, spec.name) ? 1e-6 * global : 0),
                    "step 0 gradient ", spec.name, ": relative L2 error ",
                    error / (ref_norm > 0 ? ref_norm : 1));
  }

  for (const ParamSpec& spec : layout.specs()) {
    const float* ours = part.params.data() + spec.offset;
    const float* ref = whole.params.data() + spec.offset;
    if (contains(zero, spec.name)) {
      // AdamW turns rounding noise into steps of up to ~lr with arbitrary signs, so the two runs
      // may differ by up to the summed lr on each side, element by element.
      for (int64_t i = 0; i < spec.numel; ++i)
        EXPECT_OR_COUNT(std::abs(ours[i] - ref[i]) <= 2 * lr_sum, spec.name, "[", i, "]");
      continue;
    }
    EXPECT_OR_COUNT(relative_l2(ours, ref, spec.numel) <= 1e-5, "parameter ", spec.name,
                    " after 3 steps: relative L2 ", relative_l2(ours, ref, spec.numel));
  }

  const uint64_t hash = fnv1a64(part.params.data(), part.params.size() * sizeof(float));
  char text[32];
  std::snprintf(text, sizeof text, "%016" PRIx64, hash);
  const std::vector<std::string> hashes = comm->all_gather_string(text);
  for (size_t r = 0; r < hashes.size(); ++r)
    EXPECT_OR_COUNT(hashes[r] == hashes[0], "parameters of rank ", r, " (hash ", hashes[r],
                    ") differ from rank 0's (", hashes[0], ")");
  std::printf("rank %d: %s after 3 steps, parameter hash %s, overlap %.2f, %d buckets\n",
              comm->rank(), g_failures ? "MISMATCH" : "equivalent", text,
              reducer.last_stats().overlap_ratio, plan.num_buckets());
  // Both ranks must agree on the verdict before finalising.
  const std::vector<std::string> verdicts = comm->all_gather_string(std::to_string(g_failures));
  for (const std::string& v : verdicts)
    if (v != "0") return 1;
  return 0;
}

}  // namespace
}  // namespace cpuft

// Usage: dist_equivalence_test [BACKEND]   (auto, mpi or ccl; default auto)
int main(int argc, char** argv) {
  try {
    return cpuft::run(argc > 1 ? argv[1] : "auto");
  } catch (const cpuft::Error& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", cpuft::g_rank, e.what());
    return 1;
  }
}
