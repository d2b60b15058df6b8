// bench_step: one training step (forward + backward + clip + AdamW: TrainStep, the step cpuft train
// runs) of a BERT-shaped model with random weights on batches whose sequence lengths follow MRPC's,
// reported per phase and as model FLOP/s and MFU against this machine's measured FMA peak.
//
// --batches FILE gives each step's sequence lengths (one line per step) so that another program
// (tools/side_by_side.py runs PyTorch) times the very same batches; --json FILE writes the per-step
// figures and the measured peaks for it.
//
// Model FLOPs (model/model_flops.h) count only useful work on real tokens; padding is not counted.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/buffer.h"
#include "core/check.h"
#include "core/fp_env.h"
#include "core/profile.h"
#include "core/rng.h"
#include "core/stats.h"
#include "gemm/matmul_plan.h"
#include "kernels/kernels.h"
#include "kernels/peak_probe.h"
#include "model/model_flops.h"
#include "model/param_layout.h"
#include "model/sequence_classifier.h"
#include "optim/adamw.h"
#include "scaling/scaling.h"
#include "step/train_step.h"

namespace cpuft {
namespace {

// Before anything is timed: the first batch's logits from the benchmarked model (packed, in its
// precision) against the same sequences one at a time through an fp32 model (no packing, no bf16):
// 1e-4 relative in fp32, 2e-2 with bf16 products (their rounding, docs/ARCHITECTURE.md); and a
// finite loss. Stops the benchmark with the figures otherwise.
void validate_against_one_at_a_time(SequenceClassifier& model, const ModelConfig& config,
                                    const ModelParams& p, const Batch& batch, bool bf16) {
  const StepContext eval{42, 0, false};  // no dropout: the two computations must agree
  const float loss = model.forward(p, batch, eval, true);
  const int64_t B = batch.num_sequences(), K = config.num_labels;
  const std::vector<float> packed(model.logits(), model.logits() + B * K);
  int64_t longest = 0;
  for (int64_t s = 0; s < B; ++s) longest = std::max(longest, batch.length(s));
  SequenceClassifier single(config, ModelLimits{longest, 1, longest}, MatmulPrecision::f32);
  double diff = 0, norm = 0;
  for (int64_t s = 0; s < B; ++s) {
    Batch one;
    const auto begin = batch.input_ids.begin() + batch.seq_offsets[s];
    const std::vector<int32_t> ids(begin, begin + batch.length(s));
    one.add_sequence(ids, std::vector<int32_t>(ids.size(), 0));
    single.forward(p, one, eval, false);
    for (int64_t k = 0; k < K; ++k) {
      const double d = packed[static_cast<size_t>(s * K + k)] - single.logits()[k];
      diff += d * d;
      norm += static_cast<double>(single.logits()[k]) * single.logits()[k];
    }
  }
  const double relative = std::sqrt(diff / std::max(norm, 1e-30));
  const double tolerance = bf16 ? 2e-2 : 1e-4;
  std::printf(
      "validated: %lld sequences' logits against one at a time in fp32: %.2g relative "
      "(tolerance %.0e), loss %.4f\n",
      static_cast<long long>(B), relative, tolerance, loss);
  CPUFT_REQUIRE(std::isfinite(loss) && relative <= tolerance,
                "bench_step: validation failed (logits ", relative, " from one at a time, loss ",
                loss, "); nothing timed");
}

// One line per batch, the lengths of its sequences separated by spaces.
std::vector<std::vector<int>> read_batches(const std::string& path) {
  std::ifstream in(path);
  CPUFT_REQUIRE(in.good(), "bench_step: cannot read ", path);
  std::vector<std::vector<int>> batches;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<int> lengths;
    int n = 0;
    while (words >> n) {
      CPUFT_REQUIRE(n >= 1, "bench_step: ", path, " line ", batches.size() + 1, ": length ", n);
      lengths.push_back(n);
    }
    CPUFT_REQUIRE(words.eof(), "bench_step: ", path, " line ", batches.size() + 1,
                  ": not a list of lengths");
    if (!lengths.empty()) batches.push_back(std::move(lengths));
  }
  return batches;
}

int run(int argc, char** argv) {
  CLI::App app{"bench_step: time a BERT training step"};
  std::string config_path, lengths_path, batches_path, json_path;
  int batch_size = 32, steps = 5, warmup = 1;
  int pad_to = 0;
  bool bf16 = false;
  app.add_option("--config", config_path, "HF config.json of the model shape")->required();
  auto* lengths_flag = app.add_option("--lengths", lengths_path, "Sequence lengths, one per line");
  app.add_option("--batches", batches_path,
                 "Each step's sequence lengths, one line per step (instead of --lengths)")
      ->excludes(lengths_flag);
  app.add_option("--json", json_path, "Write the per-step figures and peaks to this file");
  app.add_option("--batch", batch_size, "Sequences per batch");
  app.add_option("--steps", steps, "Timed steps");
  app.add_option("--warmup", warmup, "Untimed steps first");
  app.add_option("--pad_to", pad_to, "Pad every sequence to this length (0: packed)");
  app.add_flag("--bf16", bf16, "bf16 encoder products (as cpuft train --bf16)");
  CLI11_PARSE(app, argc, argv);
  CPUFT_REQUIRE(!lengths_path.empty() || !batches_path.empty(),
                "bench_step: give --lengths or --batches");

  if (bf16) require_bf16_matmul("--bf16");
  enable_flush_denormals_all_threads();
  ModelConfig config = load_model_config(config_path);
  config.num_labels = 2;
  const ParamLayout layout(config);
  AlignedBuffer<float> params(static_cast<size_t>(layout.total_floats()));
  AlignedBuffer<float> grads(static_cast<size_t>(layout.total_floats()));
  init_random_weights(layout, params.data(), 0.02f, 7);
  const ModelParams p = bind_params(layout, config, params.data());

  // Batches of MRPC-like lengths, drawn with a fixed seed, or as the --batches file gives them.
  std::vector<std::vector<int>> step_lengths;
  std::mt19937 rng(1234);
  if (!batches_path.empty()) {
    step_lengths = read_batches(batches_path);
    CPUFT_REQUIRE(static_cast<int>(step_lengths.size()) >= warmup + steps,
                  "bench_step: ", batches_path, " has ", step_lengths.size(),
                  " batches; --warmup + --steps need ", warmup + steps);
    step_lengths.resize(static_cast<size_t>(warmup + steps));
  } else {
    const std::vector<int> lengths = read_lengths(lengths_path);
    for (int step = 0; step < warmup + steps; ++step) {
      std::vector<int> drawn;
      for (int s = 0; s < batch_size; ++s) drawn.push_back(lengths[rng() % lengths.size()]);
      step_lengths.push_back(std::move(drawn));
    }
  }
  int max_len = pad_to;
  for (const auto& lengths : step_lengths)
    for (int n : lengths) {
      CPUFT_REQUIRE(pad_to == 0 || n <= pad_to, "bench_step: length ", n, " exceeds --pad_to");
      max_len = std::max(max_len, n);
    }
  std::vector<Batch> batches(step_lengths.size());
  int64_t max_tokens = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    Batch& batch = batches[b];
    for (int n : step_lengths[b]) {
      const int T = pad_to > 0 ? pad_to : n;
      std::vector<int32_t> ids(static_cast<size_t>(T)), types(static_cast<size_t>(T), 0);
      for (int& id : ids) id = static_cast<int32_t>(rng() % config.vocab_size);
      batch.add_sequence(ids, types);
      batch.labels.push_back(static_cast<int32_t>(rng() % 2));
    }
    max_tokens = std::max(max_tokens, batch.num_tokens());
  }
  batch_size = 0;  // the largest batch (a --batches file sets it)
  for (const auto& lengths : step_lengths)
    batch_size = std::max(batch_size, static_cast<int>(lengths.size()));
  SequenceClassifier model(config, ModelLimits{max_tokens, batch_size, max_len},
                           bf16 ? MatmulPrecision::bf16 : MatmulPrecision::f32);
  model.refresh_bf16_weights(p);
  validate_against_one_at_a_time(model, config, p, batches.front(), bf16);
  AdamW adamw(layout, AdamWOptions{0.9, 0.999, 1e-8, 0.01});
  // TrainStep times its phases; with CPUFT_PROFILE=1 its regions (and the model's) are profiled.
  TrainStep train_step(model, layout, params, grads, adamw, StepOptions{42, 1, 1.0});

  std::vector<double> t_forward, t_backward, t_optimizer, t_step, flops_per_s, flops;
  for (int step = 0; step < warmup + steps; ++step) {
    const Batch& batch = batches[static_cast<size_t>(step)];
    const StepResult r = train_step.run(step, {&batch, 1}, 2e-5);
    if (step < warmup) {
      profile::reset();
      continue;
    }
    t_forward.push_back(r.forward_seconds);
    t_backward.push_back(r.backward_seconds);
    t_optimizer.push_back(r.optimizer_seconds);
    t_step.push_back(r.seconds);
    flops.push_back(training_flops(config, batch));
    flops_per_s.push_back(flops.back() / r.seconds);
  }
  const int threads = omp_get_max_threads();
  const double peak = measure_fp32_fma_peak_gflops(threads);
  const double gflops = median(flops_per_s) / 1e9;
  std::printf(
      "model: %s (L=%lld D=%lld F=%lld), batch %d, %s, %s, %d threads, kernels %s, oneDNN %s\n",
      config_path.c_str(), static_cast<long long>(config.num_hidden_layers),
      static_cast<long long>(config.hidden_size), static_cast<long long>(config.intermediate_size),
      batch_size, pad_to > 0 ? "padded" : "packed", bf16 ? "bf16 products" : "fp32", threads,
      kernels().isa, onednn_version_string());
  std::printf("CPU: %s\n", cpu_model_string().c_str());
  std::printf("median of %d steps: step %.3f s = forward %.3f + backward %.3f + optimizer %.3f\n",
              steps, median(t_step), median(t_forward), median(t_backward), median(t_optimizer));
  if (peak > 0)
    std::printf("model FLOP/s: %.1f GFLOP/s; measured fp32 FMA peak %.1f GFLOP/s; MFU %.1f%%\n",
                gflops, peak, 100.0 * gflops / peak);
  else
    std::printf("model FLOP/s: %.1f GFLOP/s; no AVX-512, so no measured peak and no MFU\n", gflops);
  double dot_peak = 0, amx_peak = 0;
  if (bf16) {
    // oneDNN runs bf16 products on AMX tiles where the CPU has them, else on AVX512_BF16 dot
    // products: MFU against the peak of what it can use.
    dot_peak = measure_bf16_dot_peak_gflops(threads);
    amx_peak = measure_amx_bf16_peak_gflops(threads);
    std::printf("measured AVX512_BF16 dot-product peak %.1f GFLOP/s; MFU against it %.1f%%\n",
                dot_peak, dot_peak > 0 ? 100.0 * gflops / dot_peak : 0.0);
    if (amx_peak > 0)
      std::printf("measured AMX-BF16 tile peak %.1f GFLOP/s; MFU against it %.1f%%\n", amx_peak,
                  100.0 * gflops / amx_peak);
  }
  if (!json_path.empty()) {
    nlohmann::json out = {{"config", config_path},
                          {"bf16", bf16},
                          {"pad_to", pad_to},
                          {"threads", threads},
                          {"cpu", cpu_model_string()},
                          {"kernels", kernels().isa},
                          {"onednn", onednn_version_string()},
                          {"step_seconds", t_step},
                          {"forward_seconds", t_forward},
                          {"backward_seconds", t_backward},
                          {"optimizer_seconds", t_optimizer},
                          {"model_flops", flops},
                          {"fp32_fma_peak_gflops", peak},
                          {"bf16_dot_peak_gflops", dot_peak},
                          {"amx_bf16_peak_gflops", amx_peak}};
    std::ofstream file(json_path);
    file << out.dump(1) << "\n";
    CPUFT_REQUIRE(file.good(), "bench_step: cannot write ", json_path);
  }
  if (profile::enabled())
    std::printf("\nwhere the time goes (CPUFT_PROFILE=1):\n%s", profile::report().c_str());
  return 0;
}

}  // namespace
}  // namespace cpuft

int main(int argc, char** argv) {
  try {
    return cpuft::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
