// cpuft: fine-tunes BERT-family encoders on CPUs.
//
// Reading order for a newcomer: this file -> src/model/sequence_classifier.cc (forward, backward)
// -> src/model/encoder_layer.cc -> src/kernels/reference/*.
//
// Every error is one line on stderr ("error: ...") and exit code 1; a usage error (unknown flag,
// bad value) exits 2, as argparse does.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/check.h"
#include "scaling/scaling.h"
#include "train/distributed.h"
#include "train/environment.h"
#include "train/stop_signals.h"
#include "train/train_config.h"
#include "train/train_flags.h"
#include "train/trainer.h"

namespace cpuft {
namespace {

// Runs a Trainer; an error on this rank ends every rank of the job (no peer waits for a
// collective this one will never join).
int run_trainer(const TrainConfig& config) {
  Trainer trainer(config);
  try {
    trainer.prepare();
    trainer.run();
  } catch (const TrainingStopped& stopped) {
    // Every rank stopped after the same step with a checkpoint saved (rank 0 said where).
    return config.stop_exit_zero ? 0 : 128 + stopped.signal();
  } catch (const AgreedError& e) {
    // Every rank stopped here too: rank 0 says why and the job ends without MPI_Abort.
    if (trainer.prints_agreed_errors()) std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    std::fflush(stderr);
    trainer.abort_peers(1);
    return 1;
  }
  return 0;
}

// cpuft train: run_glue.py's command line, read with HfArgumentParser's grammar (train_flags.h).
int run_train(const std::vector<std::string>& args) {
  TrainConfig config;
  if (!parse_train_arguments(args, config)) {
    std::printf("%s", train_flags_help().c_str());
    return 0;
  }
  return run_trainer(config);
}

int run(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "train")
    return run_train(std::vector<std::string>(argv + 2, argv + argc));

  CLI::App app{"cpuft: fine-tune BERT-family encoders on CPUs"};
  app.require_subcommand(1);
  CLI::App* train = app.add_subcommand(
      "train", "Fine-tune (and/or evaluate, predict) as run_glue.py does; see docs/cli.md");
  train->prefix_command();  // never parsed here: run_train reads it
  CLI::App* flag_table = app.add_subcommand(
      "flag-table", "Print the table of cpuft train's flags by class (docs/cli.md holds it)");

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
  if (predict->parsed()) {
    predict_config.do_predict = true;
    predict_config.save_logits = true;
    predict_config.overwrite_output_dir = true;
    return run_trainer(predict_config);
  }
  if (bench->parsed()) return run_bench(bench_options);
  if (flag_table->parsed()) std::printf("%s", train_flags_markdown().c_str());
  if (env->parsed()) print_environment(env_backend);
  if (inspect->parsed()) print_model_summary(model_dir);
  return 0;
}

}  // namespace
}  // namespace cpuft

int main(int argc, char** argv) {
  // Log lines reach a file or a pipe as they are printed, also when the run is killed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return cpuft::run(argc, argv);
  } catch (const cpuft::UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
