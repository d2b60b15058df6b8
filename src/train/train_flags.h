// The flags of `cpuft train`: every field of run_glue.py's ModelArguments and
// DataTrainingArguments and of transformers' TrainingArguments (5.x, and the 4.x fields the
// reference stack's command lines still use), each in one of four classes:
//   implemented  sets a TrainConfig field, as run_glue.py + Trainer use it;
//   mapped       another name for a cpuft setting (--ddp_backend ccl -> --dist_backend ccl),
//                said in one line at start;
//   noticed      accepted, changes nothing here (--no_cuda: cpuft runs only on CPUs), said in
//                one line at start;
//   refused      a value cpuft cannot honour is a usage error giving the reason and the nearest
//                thing cpuft offers (--fp16: use --bf16); the value that changes nothing
//                (--fp16 False) is accepted as a noticed flag.
// docs/cli.md's flag table is train_flags_markdown(), checked by a test.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/hf_arguments.h"
#include "train/train_config.h"

namespace cpuft {

enum class FlagClass { implemented, mapped, noticed, refused };

struct TrainFlag {
  std::string name;  // without "--"
  FlagClass cls = FlagClass::implemented;
  FlagShape shape;
  // implemented: what it does; mapped: "-> --x"; noticed: why it changes nothing; refused: why,
  // and what to use instead.
  std::string doc;
  // implemented and mapped: stores the values (throws UsageError on a bad one).
  std::function<void(TrainConfig&, const std::vector<std::string>&)> set;
  // implemented: the value as training_args.json records it.
  std::function<nlohmann::json(const TrainConfig&)> get;
  // refused: the values accepted because they change nothing (compared lower-cased).
  std::vector<std::string> harmless;
  std::string origin;  // "run_glue", "TrainingArguments", "TrainingArguments 4.x", "cpuft"
};

// The table, in the order of docs/cli.md.
const std::vector<TrainFlag>& train_flags();

// Reads `cpuft train`'s arguments (after the subcommand): an optional args file (.json, .yaml,
// .yml) and flags, the command line winning over the file. Fills config, config.given and
// config.notices. Returns false when -h/--help was asked (nothing else is done). Throws
// UsageError for unknown flags and bad values, Error for an unreadable args file.
bool parse_train_arguments(const std::vector<std::string>& args, TrainConfig& config);

// `cpuft train --help`: the implemented and mapped flags with their help, then the rest by class.
std::string train_flags_help();

// training_args.json: every implemented flag with its resolved value, and the other flags as
// given (TrainingArguments.to_json_string's counterpart; HF's training_args.bin is a pickle).
nlohmann::json training_args_json(const TrainConfig& config);

// The four-class table of docs/cli.md (Markdown), generated from train_flags().
std::string train_flags_markdown();

}  // namespace cpuft
