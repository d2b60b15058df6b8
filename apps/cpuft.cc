// cpuft: fine-tunes BERT-family encoders on CPUs.
//
// Reading order for a newcomer: this file -> src/model/bert_model.cc (forward, backward) ->
// src/model/encoder_layer.cc -> src/kernels/reference/*.
//
// Every error is one line on stderr ("error: ...") and exit code 1; --help/usage errors exit 2.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/check.h"
#include "gemm/matmul_plan.h"
#include "io/bert_checkpoint.h"
#include "kernels/kernels.h"
#include "model/bert_config.h"
#include "model/param_layout.h"
#include "train/distributed.h"
#include "train/scaling.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace cpuft {
namespace {

// What this run would use: kernels, oneDNN, and for every rank the launcher's view, the cores and
// threads it owns, the backend and the host.
void print_env(const std::string& backend) {
  DistContext dist = start_distributed(backend, 60);
  const std::vector<std::string> ranks = describe_ranks(dist);
  if (dist.rank() != 0) return;
  std::printf("cpuft %s\n", CPUFT_VERSION);
  std::printf("kernels: %s\n", kernels().isa);
  std::printf("oneDNN: %s\n", onednn_version_string());
  {  // which kernels oneDNN picks for a MiniLM-sized linear layer, in each precision
    const LinearPlans f32(64, 384, 1536);
    std::printf("matmul fp32: %s\n", f32.fwd.implementation().c_str());
    if (cpu_has_bf16_matmul()) {
      const LinearPlans b16(64, 384, 1536, MatmulPrecision::bf16);
      std::printf("matmul bf16: %s (--bf16 available)\n", b16.fwd.implementation().c_str());
    } else {
      std::printf("matmul bf16: no AVX512_BF16/AMX-BF16 (--bf16 refused)\n");
    }
  }
  std::printf("launcher: %s\n", dist.launch.describe().c_str());
  std::printf("backends: mpi, single%s\n",
              ccl_available() ? ", ccl (oneCCL)" : " (no ccl: built without oneCCL)");
  for (const std::string& line : ranks) std::printf("%s\n", line.c_str());
}

// Loads a Hugging Face model folder and reports what it holds.
void inspect_model(const std::string& dir) {
  const std::filesystem::path root(dir);
  const BertConfig config = load_bert_config((root / "config.json").string());
  const ParamLayout layout(config);
  std::vector<float> params(static_cast<size_t>(layout.total_floats()));
  const LoadReport report = load_bert_weights(
      SafetensorsFile::open((root / "model.safetensors").string()), layout, config, params.data());
  int64_t count = 0;
  for (const ParamSpec& spec : layout.specs()) count += spec.numel;
  std::printf("%s: BERT, %lld layers, hidden %lld, %lld heads, FFN %lld, vocab %lld, %lld labels\n",
              dir.c_str(), static_cast<long long>(config.num_hidden_layers),
              static_cast<long long>(config.hidden_size),
              static_cast<long long>(config.num_attention_heads),
              static_cast<long long>(config.intermediate_size),
              static_cast<long long>(config.vocab_size), static_cast<long long>(config.num_labels));
  std::printf("parameters: %lld in %zu tensors\n", static_cast<long long>(count),
              layout.specs().size());
  for (const std::string& name : report.initialised)
    std::printf("initialised (absent from the checkpoint): %s\n", name.c_str());
  for (const std::string& name : report.ignored)
    std::printf("ignored (not a model parameter): %s\n", name.c_str());
}

// Runs a Trainer; an error on this rank ends every rank of the job (no peer waits for a
// collective this one will never join).
int run_trainer(const TrainConfig& config) {
  Trainer trainer(config);
  try {
    trainer.prepare();
    trainer.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    std::fflush(stderr);
    trainer.abort_peers(1);
    return 1;
  }
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"cpuft: fine-tune BERT-family encoders on CPUs"};
  app.require_subcommand(1);

  // cpuft train: run_glue.py's flags; a single JSON file argument holds them instead, as
  // HfArgumentParser accepts.
  TrainConfig train_config;
  std::string args_file;
  CLI::App* train = app.add_subcommand(
      "train", "Fine-tune (and/or evaluate, predict) as run_glue.py does; see docs/cli.md");
  add_train_flags(*train, train_config);
  train->add_option("args_json", args_file, "JSON file of flags (run_glue.py style)");

  TrainConfig predict_config;
  CLI::App* predict = app.add_subcommand(
      "predict", "Predict with a fine-tuned output folder; writes predictions and logits");
  predict
      ->add_option("--model_name_or_path", predict_config.model_name_or_path,
                   "Fine-tuned model folder (an output_dir of cpuft train)")
      ->required();
  predict->add_option("--test_file", predict_config.test_file, "Data file (.csv, .tsv, .json)");
  predict->add_option("--task_name", predict_config.task_name, "GLUE task (uses its test split)");
  predict->add_option("--data_dir", predict_config.data_dir, "GLUE data folder, with --task_name");
  predict->add_option("--output_dir", predict_config.output_dir, "Where predictions go")
      ->required();
  predict->add_option("--max_seq_length", predict_config.max_seq_length, "Longest input")
      ->capture_default_str();
  predict
      ->add_option("--per_device_eval_batch_size", predict_config.per_device_eval_batch_size,
                   "Sequences per batch")
      ->capture_default_str();
  predict->add_flag("--bf16", predict_config.bf16,
                    "bfloat16 inputs to the encoder's matrix products (as cpuft train --bf16)");

  CLI::App* env = app.add_subcommand(
      "env", "Print the kernels, oneDNN version, launcher and every rank's cores and threads");
  std::string env_backend = "auto";
  env->add_option("--dist_backend", env_backend, "auto, mpi, ccl or single")->capture_default_str();
  std::string model_dir;
  CLI::App* inspect = app.add_subcommand("inspect", "Load a Hugging Face model folder and report");
  inspect->add_option("--model_name_or_path,model", model_dir, "Model folder")->required();
  BenchOptions bench_options;
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks: --scaling (see docs/scaling.md)");
  add_bench_flags(*bench, bench_options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (train->parsed()) {
    if (!args_file.empty()) load_train_config_json(args_file, train_config);
    return run_trainer(train_config);
  }
  if (predict->parsed()) {
    predict_config.do_predict = true;
    predict_config.save_logits = true;
    predict_config.overwrite_output_dir = true;
    return run_trainer(predict_config);
  }
  if (bench->parsed()) return run_bench(bench_options);
  if (env->parsed()) print_env(env_backend);
  if (inspect->parsed()) inspect_model(model_dir);
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
