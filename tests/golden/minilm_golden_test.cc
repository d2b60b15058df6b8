// The whole model against Hugging Face with the real all-MiniLM-L6-v2 weights (a bare
// BertModel checkpoint from sentence-transformers) on the first 8 MRPC dev pairs (unequal
// lengths): logits, loss, every element of every gradient, and every parameter element after 3
// AdamW steps.
//
// Tensors of up to 4096 elements (biases, LayerNorm, token types, the classifier) are in the
// fixture whole and compared exactly. For a larger tensor (the 39 weight matrices and embedding
// tables, up to 11.7 M elements) the fixture holds its norm and K = 256 projections P_k = <x, r_k>
// on random
// +-1 vectors (golden/projection.h). With e = ours - HF, the test computes
//   S^2 = (1/K) sum_k (<ours, r_k> - P_k)^2 = (1/K) sum_k <e, r_k>^2,
// which is an average of K independent draws of <e, r>^2, whose mean is ||e||^2: every element of e
// counts. The test requires S <= tau/2 ||HF|| (tau the tolerance), and claims ||e|| <= tau ||HF||.
// Soundness: if ||e|| > tau ||HF||, passing needs S^2 <= ||e||^2 / 4. For Rademacher r and
// ||e|| = 1, E[<e,r>^4] = 3 - 2 sum e_i^4 <= 3, so E[exp(-t <e,r>^2)] <= 1 - t + 3t^2/2
// (exp(-s) <= 1 - s + s^2/2), and Markov's inequality gives
//   P(S^2 <= 1/4) <= (exp(t/4) (1 - t + 3t^2/2))^K = 1.1e-12 at t = 0.263, K = 256
// (the argument of Achlioptas 2003, "Database-friendly random projections"). The probability is
// over the choice of the sign family, which no implementation can see: for any fixed error, at
// most 1.1e-12 of hash keys would let a tensor off by more than tau pass; 39 tensors, two checks
// each, so the whole test by less than 1e-10. The other way, a correct tensor fails only if S
// exceeds tau/2 when ||e|| is 20x or more below that: measured S are 2.5e-6 for gradients (tau/2 =
// 5e-5). Sums are in double over at most 589,824 nonzero elements (the zero-gradient rows of the
// word embeddings are skipped exactly), so rounding in them is below 6e-8 of the tensor's norm.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "core/buffer.h"
#include "golden/golden_util.h"
#include "golden/minilm_fixture.h"
#include "golden/projection.h"
#include "io/hf_checkpoint.h"
#include "model/sequence_classifier.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"

namespace cpuft {
namespace {

using namespace golden;

// Parameters after the 3 steps, per tensor, outside the unused rows (checked exactly instead):
// ||ours - HF|| <= kUpdateTolerance ||HF - init||, the error relative to the update itself (lr
// 1e-4: 0.01-1% of the weights). This is the precision fp32 has here: HF float32 is up to 3.3e-4
// from a float64 rerun in this measure (layer 5's output LayerNorm.bias and dense.bias, whose
// gradients are sums of 8 nearly cancelling per-pair terms, and LayerNorm weights, whose values
// near 1 round to 6e-8 while updates are ~1e-4), and cpuft 4.5e-4 from HF.
constexpr double kUpdateTolerance = 3e-3;

TEST(MiniLmGolden, RealWeightsOnMrpcPairs) {
  MiniLmGolden t;
  ASSERT_TRUE(t.ok) << "no all-MiniLM-L6-v2 weights in " << minilm_dir()
                    << ": run scripts/fetch_minilm.sh";
  const float loss = t.model.forward(t.p, t.batch, StepContext{});
  const std::vector<float> logits = t.file.read_f32("output.logits");
  EXPECT_LE(relative_max(t.model.logits(), logits.data(), static_cast<int64_t>(logits.size())),
            1e-5);
  const float hf_loss = t.file.read_f32("output.loss")[0];
  EXPECT_NEAR(loss, hf_loss, 1e-5 * std::abs(hf_loss));
  t.model.backward(t.p, t.g);

  // Gradients: every tensor whose exact gradient is nonzero to kGradTolerance relative L2 (exactly
  // where stored whole, through the projections otherwise); key.bias to kZeroGradBound of the
  // global norm (HF's own is 2e-10 to 9e-10 of it).
  const double global_norm = l2(t.grads.data(), t.layout.total_floats());
  const std::vector<std::string> zero = zero_true_grad(t.file);
  ASSERT_EQ(zero.size(), static_cast<size_t>(t.config.num_hidden_layers));  // fixture precondition
  Worst whole{"MiniLM gradients stored whole, relative L2", kGradTolerance};
  Worst projected{"MiniLM gradients through projections, estimated relative L2 (bound tau/2)",
                  kGradTolerance / 2};
  Worst noise{"MiniLM key.bias gradient / global gradient norm", kZeroGradBound};
  int projected_tensors = 0;
  for (const ParamSpec& spec : t.layout.specs()) {
    const float* ours = t.grads.data() + spec.offset;
    if (contains(zero, spec.name)) {
      EXPECT_LE(l2(ours, spec.numel), kZeroGradBound * global_norm) << spec.name;
      noise.see(l2(ours, spec.numel) / global_norm, spec.name);
    } else if (t.file.find("grad." + spec.name) != nullptr) {
      const std::vector<float> hf = t.file.read_f32("grad." + spec.name);
      ASSERT_EQ(static_cast<int64_t>(hf.size()), spec.numel) << spec.name;
      ASSERT_GT(l2(hf.data(), spec.numel), 0) << spec.name;
      // The claim is cpuft within kGradTolerance of the exact gradient; against HF's float32
      // gradient that allows, by the triangle inequality, HF's own float32 error too, measured
      // against a float64 rerun (tests/fixtures/README.md). It matters only for the four sums of
      // nearly cancelling terms below; every other tensor's is <= 2e-6.
      static const std::map<std::string, double> kReferenceError = {
          {"classifier.bias", 1.0e-4},
          {"bert.encoder.layer.5.output.LayerNorm.bias", 5.5e-5},
          {"bert.encoder.layer.5.output.dense.bias", 1.8e-5},
          {"bert.pooler.dense.bias", 1.3e-5}};
      const auto known = kReferenceError.find(spec.name);
      const double allowed =
          kGradTolerance + (known == kReferenceError.end() ? 0.0 : known->second);
      const double error = relative_l2(ours, hf.data(), spec.numel);
      EXPECT_LE(error, allowed) << "grad " << spec.name;
      whole.see(error / allowed * kGradTolerance, spec.name);
    } else {
      Projector projector(spec.name);
      projector.add(ours, 0, spec.numel);
      const double error =
          projected_relative_error(projector, read_f64(t.file, "grad_proj." + spec.name),
                                   read_f64(t.file, "grad_norm." + spec.name).at(0));
      EXPECT_LE(error, kGradTolerance / 2) << "grad " << spec.name << " (projected)";
      projected.see(error, spec.name);
      ++projected_tensors;
    }
  }
  EXPECT_EQ(projected_tensors, 39);  // 36 encoder matrices, word and position tables, pooler
  whole.print();
  projected.print();
  noise.print();

  ZeroGradientWatch watch(t);
  const auto records = t.train_three_steps(watch.observer());
  for (int step = 0; step < 3; ++step) {
    const float hf_step_loss = t.file.read_f32(str("loss.step", step))[0];
    EXPECT_NEAR(records[step].loss, hf_step_loss, 1e-5 * std::abs(hf_step_loss)) << "step " << step;
    const float hf_norm = t.file.read_f32(str("grad_norm.step", step))[0];
    EXPECT_NEAR(records[step].grad_norm, hf_norm, 1e-4 * hf_norm) << "step " << step;
  }

  // Parameters after the steps, outside the unused rows: the update to kUpdateTolerance.
  Worst update_whole{"MiniLM parameters stored whole, relative L2 of the update", kUpdateTolerance};
  Worst update_projected{
      "MiniLM parameters through projections, estimated relative L2 of the "
      "update (bound tau/2)",
      kUpdateTolerance / 2};
  for (const ParamSpec& spec : t.layout.specs()) {
    if (contains(zero, spec.name)) continue;  // key.bias: check_key_bias_updates below
    const float* ours = t.params.data() + spec.offset;
    const float* init = watch.init.data() + spec.offset;
    if (t.file.find("step3." + spec.name) != nullptr) {
      const std::vector<float> hf = t.file.read_f32("step3." + spec.name);
      ASSERT_EQ(static_cast<int64_t>(hf.size()), spec.numel) << spec.name;
      ASSERT_EQ(find_unused(watch.unused, spec), nullptr) << spec.name;
      double diff = 0, update = 0;
      for (int64_t i = 0; i < spec.numel; ++i) {
        diff += std::pow(static_cast<double>(ours[i]) - hf[i], 2);
        update += std::pow(static_cast<double>(hf[i]) - init[i], 2);
      }
      ASSERT_GT(update, 0) << spec.name;  // fixture precondition: HF's steps moved the tensor
      EXPECT_LE(std::sqrt(diff / update), kUpdateTolerance) << "step3 " << spec.name;
      update_whole.see(std::sqrt(diff / update), spec.name);
    } else {
      Projector projector(spec.name);
      const std::vector<bool> skip = unused_mask(find_unused(watch.unused, spec), spec);
      const int64_t row = spec.numel / spec.shape[0];
      for (int64_t r = 0; r < spec.shape[0]; ++r)
        if (!skip[static_cast<size_t>(r * row)]) projector.add(ours, r * row, (r + 1) * row);
      const double update_norm = read_f64(t.file, "step3_update_norm." + spec.name).at(0);
      ASSERT_GT(update_norm, 0) << spec.name;  // fixture precondition
      const double error = projected_relative_error(
          projector, read_f64(t.file, "step3_proj." + spec.name), update_norm);
      EXPECT_LE(error, kUpdateTolerance / 2) << "step3 " << spec.name << " (projected)";
      update_projected.see(error, spec.name);
    }
  }
  update_whole.print();
  update_projected.print();

  // Unused embedding rows: the fixture holds a hash of HF's values there (they are 11.6 M floats).
  // The decay-only value is computed here from the checkpoint's weights as torch computes it; its
  // hash must be HF's, which makes it HF's value bit for bit; then ours must be within the ulp
  // bound of it (ZeroGradientWatch::check_decay_only).
  const nlohmann::json unused_rows = metadata_json(t.file, "unused_rows");
  ASSERT_EQ(unused_rows.size(), watch.unused.size());
  ASSERT_GT(watch.unused_row_count(), 0) << "the fixture has no unused embedding rows";
  std::map<const ParamSpec*, double> weight_decay;
  for (const UnusedRows& u : watch.unused)
    weight_decay[u.spec] = hf_weight_decay(t.file, u.spec->name);
  auto decayed = [&](const ParamSpec& spec, int64_t i) {
    float w = watch.init[spec.offset + i];
    for (double lr : watch.lrs) w *= static_cast<float>(1.0 - lr * weight_decay.at(&spec));
    return w;
  };
  for (const UnusedRows& u : watch.unused) {
    EXPECT_EQ(unused_rows.at(u.spec->name).get<int64_t>(), static_cast<int64_t>(u.rows.size()))
        << u.spec->name;
    uint64_t hash = 0;
    for (int64_t r : u.rows)
      for (int64_t i = r * u.row_size; i < (r + 1) * u.row_size; ++i)
        hash += element_hash(i, decayed(*u.spec, i));
    EXPECT_EQ(static_cast<int64_t>(hash), t.file.read_i64("step3_unused_hash." + u.spec->name)[0])
        << u.spec->name << ": the decay-only values are not HF's";
  }
  watch.check_decay_only(
      [&](const ParamSpec& spec, int64_t i) { return static_cast<double>(decayed(spec, i)); });
  watch.check_key_bias_updates();
  watch.print_gradient_bound();
}

}  // namespace
}  // namespace cpuft
