#include "train/trainer.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/check.h"
#include "core/fp_env.h"
#include "core/memory.h"
#include "core/timer.h"
#include "data/glue_source.h"
#include "io/hf_checkpoint.h"
#include "io/hub_cache.h"
#include "io/weight_files.h"
#include "step/train_step.h"
#include "train/best_model.h"
#include "train/checkpoint.h"
#include "train/evaluation.h"
#include "train/exchange_report.h"
#include "train/hf_arguments.h"
#include "train/machine_peak.h"
#include "train/model_card.h"
#include "train/output_lock.h"
#include "train/outputs.h"
#include "train/progress.h"
#include "train/train_flags.h"
#include "train/trainer_state.h"
#include "train/training_loop.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cpuft {

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  CPUFT_REQUIRE(in.good(), path.string(), ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A folder holding more than what a killed cpuft run leaves there alone (its lock file, the
// temporaries the next run removes).
bool non_empty_dir(const fs::path& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) return false;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const bool leftover =
        name == kOutputLockName || (name.starts_with(".checkpoint-") && name.ends_with(".tmp"));
    if (!leftover) return true;
  }
  return false;
}

// Where training starts, as run_glue.py decides: --resume_from_checkpoint DIR, or True (the
// latest checkpoint-N of output_dir); without it, an output_dir holding checkpoints is resumed
// from the latest unless --overwrite_output_dir, and any other non-empty output_dir is refused.
void resolve_resume_point(Trainer::State& s) {
  const TrainConfig& c = s.cfg;
  if (!c.do_train) return;
  const std::string& asked = c.resume_from_checkpoint;
  std::error_code error;
  const std::optional<bool> word = fs::exists(asked, error) ? std::nullopt : boolean_word(asked);
  if (!asked.empty() && !word) {
    s.resume_dir = asked;
  } else if (word && *word) {
    s.resume_dir = last_checkpoint(c.output_dir);
    CPUFT_REQUIRE(!s.resume_dir.empty(), "--resume_from_checkpoint ", asked,
                  ": no checkpoint-N folder in ", c.output_dir);
  } else if (non_empty_dir(c.output_dir) && !c.overwrite_output_dir) {
    s.resume_dir = last_checkpoint(c.output_dir);
    CPUFT_REQUIRE(!s.resume_dir.empty(), "output directory ", c.output_dir,
                  " already exists and is not empty; use --overwrite_output_dir to overwrite it");
    s.warn(str("checkpoint detected, resuming training at ", s.resume_dir,
               "; to train from scratch change --output_dir or add --overwrite_output_dir"));
  }
  // What resuming reads, there before the output folder is touched (its contents are checked
  // when it is read).
  if (s.resume_dir.empty()) return;
  for (const char* file : {"trainer_state.json", "model.safetensors", "optimizer.safetensors"})
    CPUFT_REQUIRE(fs::is_regular_file(fs::path(s.resume_dir) / file, error),
                  "--resume_from_checkpoint ", s.resume_dir, ": no ", file,
                  "; not a checkpoint-N folder of a cpuft run");
}

// Refuses, before anything is written, a folder this process could not write into: it must be a
// writable folder, or not exist yet under a writable one (it is created later, once everything
// has been checked).
void check_writable_folder(const std::string& folder, const std::string& flag) {
  if (folder.empty()) return;
  std::error_code error;
  fs::path existing = fs::absolute(folder, error);
  while (!existing.empty() && !fs::exists(existing, error) && existing != existing.root_path())
    existing = existing.parent_path();
  CPUFT_REQUIRE(fs::is_directory(existing, error), flag, " ", folder, ": ", existing.string(),
                " is not a folder");
  CPUFT_REQUIRE(::access(existing.c_str(), W_OK | X_OK) == 0, flag, " ", folder, ": ",
                existing.string(), " is not writable (", std::strerror(errno), ")");
}

// Bytes per parameter a training run holds: fp32 weights and gradients, the optimizer's state
// (AdamW: two moments; SGD: at most a momentum) and, under --bf16, the weights' bf16 copy.
double bytes_per_parameter(const TrainConfig& c) {
  return 4.0 + 4.0 + (c.optim == "sgd" ? 4.0 : 8.0) + (c.bf16 ? 2.0 : 0.0);
}

// Refuses, in one line and before allocating, a job that would not fit in the memory left on
// this host, which its local ranks share: `need` bytes per rank, of which `what` says what.
void check_memory(const Trainer::State& s, double need, const std::string& what) {
  const int64_t available = available_memory_bytes();
  if (available < 0) return;  // unknown: nothing to compare with
  const int ranks_here = std::max(1, s.dist.launch.local_size);
  CPUFT_REQUIRE(need * ranks_here <= static_cast<double>(available), what, " need ",
                format_bytes(need),
                ranks_here > 1 ? str(" per rank x ", ranks_here, " ranks on this host") : "",
                ", but ", format_bytes(static_cast<double>(available)), " of memory are available");
}

// Steps 1-2 of prepare(): every input read and checked, the weights loaded, the data tokenized.
// No collective: prepare() agrees on its outcome across the ranks (agree_on_failure).
void read_and_check_inputs(Trainer::State& s) {
  const TrainConfig& c = s.cfg;
  enable_flush_denormals_all_threads();

  for (const std::string& notice : c.notices) s.warn(notice);
  if (s.is_writer() || s.is_saver()) check_writable_folder(c.output_dir, "--output_dir");
  if (!c.timeline_dir.empty()) check_writable_folder(c.timeline_dir, "--timeline_dir");
  const bool tensorboard =
      std::any_of(c.report_to.begin(), c.report_to.end(),
                  [](const std::string& r) { return r == "tensorboard" || r == "all"; });
  if (s.is_writer() && tensorboard) check_writable_folder(c.logging_dir, "--logging_dir");

  // 1. Everything is read and checked before the output folder is touched. Hub names are looked
  //    up in the Hugging Face cache, as transformers does offline.
  const std::string cache_root = c.cache_dir.empty() ? hf_hub_cache_dir() : c.cache_dir;
  const ResolvedModel model = resolve_model_folder(c.model_name_or_path, c.model_revision,
                                                   cache_root, "--model_name_or_path");
  const ResolvedModel config_source =
      c.config_name.empty()
          ? model
          : resolve_model_folder(c.config_name, c.model_revision, cache_root, "--config_name");
  const ResolvedModel tokenizer_source =
      c.tokenizer_name.empty() ? model
                               : resolve_model_folder(c.tokenizer_name, c.model_revision,
                                                      cache_root, "--tokenizer_name");
  for (const ResolvedModel* r : {&model, &config_source, &tokenizer_source})
    if (!r->note.empty() && (r == &model || r->folder != model.folder)) s.info(r->note);
  s.model_folder = model.folder;
  resolve_resume_point(s);
  const fs::path model_dir(config_source.folder);
  s.config_text = read_text(model_dir / "config.json");
  s.model_config = parse_model_config(s.config_text, (model_dir / "config.json").string());
  s.task = load_task_data(c, s.model_config);
  if (!s.task.data_origin.empty()) s.info(str("data: ", s.task.data_origin));
  for (const Dataset* d : s.task.datasets())
    for (const std::string& note : d->notes) s.warn(note);
  const int64_t task_labels =
      s.task.regression ? 1 : static_cast<int64_t>(s.task.label_names.size());
  s.model_config.num_labels = task_labels;  // run_glue passes the task's num_labels
  s.model_config.problem_type = s.task.regression ? "regression" : "single_label_classification";
  if (c.max_seq_length > s.model_config.max_sequence_length()) {
    // As run_glue.py: the model's limit wins, with a warning.
    s.info(str(
        "--max_seq_length ", c.max_seq_length, " exceeds the ",
        s.model_config.max_sequence_length(), " positions of the model (max_position_embeddings ",
        s.model_config.max_position_embeddings, "); using ", s.model_config.max_sequence_length()));
    s.cfg.max_seq_length = static_cast<int>(s.model_config.max_sequence_length());
  }
  s.tokenizer = load_tokenizer(tokenizer_source.folder);
  CPUFT_REQUIRE(s.tokenizer->vocab_size() <= s.model_config.vocab_size, tokenizer_source.folder,
                ": the tokenizer has ", s.tokenizer->vocab_size(),
                " tokens but the model's vocab_size is ", s.model_config.vocab_size);

  s.layout = std::make_unique<ParamLayout>(s.model_config);
  const double parameters = static_cast<double>(s.layout->total_floats());
  char parameter_count[32];
  std::snprintf(parameter_count, sizeof parameter_count, "%.3g", parameters);
  check_memory(s, parameters * (c.do_train ? bytes_per_parameter(c) : 4.0),
               str("the model's ", parameter_count, " parameters",
                   c.do_train ? " with their gradients and optimizer state" : ""));
  s.params = AlignedBuffer<float>(static_cast<size_t>(s.layout->total_floats()));
  s.grads = AlignedBuffer<float>(static_cast<size_t>(s.layout->total_floats()));
  release_word_table_gradient(*s.layout, s.grads);  // a step writes only its tokens' rows
  {
    // model.safetensors or the shards of its index; pickles refused with the conversion command.
    const std::vector<SafetensorsFile> files = open_weight_files(s.model_folder);
    // The head's output layer ("classifier.weight", "classifier.out_proj.weight") must have the
    // task's labels, if the checkpoint has one.
    std::string head_out_name;
    for (const ParamSpec& spec : s.layout->specs())
      if (spec.layer == classifier_layer(s.model_config) && spec.kind == ParamKind::matrix)
        head_out_name = spec.name;
    for (const SafetensorsFile& file : files)
      if (const TensorInfo* head = file.find(head_out_name))
        CPUFT_REQUIRE(head->shape.size() == 2 && head->shape[0] == task_labels, file.label(),
                      ": the model's classifier has ", head->shape.empty() ? 0 : head->shape[0],
                      " labels but task ", s.task.task_name.empty() ? "data" : s.task.task_name,
                      " has ", task_labels);
    const LoadReport report =
        load_hf_weights(files, *s.layout, s.model_config, s.params.data(), LoadOptions{"", c.seed});
    for (const std::string& name : report.initialised)
      s.info("newly initialised (not in the checkpoint): " + name);
  }
  s.weights_read_at = s.since_start.seconds();
  for (const ParamSpec& spec : s.layout->specs())
    if (spec.layer != kEmbeddingsLayer) s.dense_params += static_cast<double>(spec.numel);
  s.p = bind_params(*s.layout, s.model_config, s.params.data());

  // 2. Tokenize every split once.
  if (s.task.train) s.train = encode_dataset(*s.task.train, *s.tokenizer, c.max_seq_length);
  for (const NamedDataset& d : s.task.eval)
    s.eval.emplace_back(d.suffix, encode_dataset(d.data, *s.tokenizer, c.max_seq_length));
  for (const NamedDataset& d : s.task.test)
    s.test.emplace_back(d.suffix, encode_dataset(d.data, *s.tokenizer, c.max_seq_length));
  if (c.do_eval || c.eval_strategy != "no")
    for (const auto& [suffix, data] : s.eval)
      CPUFT_REQUIRE(data.has_labels, "evaluation data", suffix, " has no labels");
  s.data_ready_at = s.since_start.seconds();
}

}  // namespace

Trainer::Trainer(const TrainConfig& config) : s_(std::make_unique<State>(config)) {
  validate_train_config(s_->cfg);
  peak_min_core_share();  // a bad CPUFT_PEAK_MIN_SHARE is an error before anything is written
  s_->dist = start_distributed(s_->cfg.dist_backend, s_->cfg.dist_timeout);
  s_->timeline = StepTimeline(s_->dist.rank());
  // --local_rank $PMI_RANK (the reference scripts' habit) is the launcher's global rank on one
  // host, its local rank on several: either agrees with the launcher; anything else does not.
  const LaunchInfo& launch = s_->dist.launch;
  const int given = s_->cfg.local_rank;
  if (given >= 0 && given != launch.local_rank && given != launch.rank)
    throw UsageError(str("--local_rank ", given, " contradicts the launcher (", launch.describe(),
                         "); drop the flag: cpuft reads the launcher itself"));
}

void Trainer::abort_peers(int exit_code) {
  if (s_->dist.comm && s_->dist.world_size() > 1) s_->dist.comm->abort(exit_code);
}

bool Trainer::prints_agreed_errors() const {
  return s_->dist.rank() == 0;
}

void Trainer::prepare() {
  State& s = *s_;
  const TrainConfig& c = s.cfg;
  // 1-2. An error while reading the inputs stops every rank with one line and no MPI_Abort: the
  //      ranks first agree on the outcome (a missing file on a shared disk fails on all of them).
  std::string failure;
  try {
    read_and_check_inputs(s);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  agree_on_failure(*s.dist.comm, failure);
  const double parameters = static_cast<double>(s.layout->total_floats());

  // 3. Every rank must run the same job: same parameter table, config, data and program; then all
  //    start from rank 0's weights (the new classifier head is random).
  std::string table;
  for (const ParamSpec& spec : s.layout->specs())
    table += str(spec.name, spec.shape.size(), spec.numel, ";");
  std::vector<std::pair<std::string, std::string>> facts = {
      {"program", CPUFT_VERSION_STRING},
      {"parameter table", fingerprint(table.data(), table.size())},
      {"config", fingerprint(s.config_text.data(), s.config_text.size())},
      {"train data",
       fingerprint(s.train.input_ids.data(), s.train.input_ids.size() * sizeof(int32_t))},
      {"train labels", fingerprint(s.train.labels.data(), s.train.labels.size() * sizeof(int32_t))},
      {"resumed from", s.resume_dir}};
  // The weights each rank read (its model folder, the seeded new head): a node with another copy
  // of the model is named instead of being silently overwritten by rank 0's broadcast below.
  if (s.dist.world_size() > 1)
    facts.emplace_back("model weights", fingerprint_floats(s.params.data(), s.params.size()));
  // Every resolved argument (all of them change the math or the files); --local_rank differs by
  // design.
  const json args = training_args_json(c);
  for (const auto& [name, value] : args.items())
    if (name != "local_rank") facts.emplace_back("--" + name, value.dump());
  check_ranks_agree(*s.dist.comm, facts);
  s.dist.comm->broadcast(s.params.data(), s.layout->total_floats() * sizeof(float), 0);
  if (s.dist.world_size() > 1) {
    s.buckets = std::make_unique<BucketPlan>(make_bucket_plan(*s.layout, c.bucket_cap_mb));
    s.reducer = std::make_unique<GradReducer>(*s.dist.comm, *s.buckets, s.grads.data(),
                                              s.layout->total_floats());
    if (!c.timeline_dir.empty()) s.reducer->set_timeline(&s.timeline);
    // A batch looks up a few hundred rows of the word-embedding table; only those rows of its
    // gradient are nonzero, and only the rows some rank touched are exchanged (the same sums;
    // MiniLM: 47 of its 91 MB per step, in the bucket backward finishes last).
    s.reducer->set_sparse_rows(word_embedding_rows(*s.layout));
    s.reducer->set_bf16_exchange(c.gradient_exchange_dtype == "bfloat16");
  }
  for (const std::string& line : describe_ranks(s.dist)) s.info(line);
  probe_link_at_start(s);  // says what the gradient exchange costs before it costs it

  // 4. The model, sized for the largest batch any split can produce: never more sequences than a
  //    rank's share of the data, whatever the batch flags say; checked against the memory left.
  //    A batch holds at most the tokens of its size's longest examples (packed: no padding), which
  //    on MRPC is 16% below batch x longest.
  int64_t longest = 1, max_batch = 1, max_tokens = 1;
  auto consider = [&](const EncodedDataset& d, int64_t batch) {
    if (d.size() == 0) return;
    const int64_t share = (d.size() + s.dist.world_size() - 1) / s.dist.world_size();
    longest = std::max(longest, d.max_length());
    max_batch = std::max(max_batch, std::min(batch, share));
    max_tokens = std::max(max_tokens, d.longest_tokens(std::min(batch, share)));
  };
  consider(s.train, c.per_device_train_batch_size);
  for (const auto& [suffix, d] : s.eval) consider(d, c.per_device_eval_batch_size);
  for (const auto& [suffix, d] : s.test) consider(d, c.per_device_eval_batch_size);
  const ModelLimits limits{max_tokens, max_batch, longest, c.gradient_checkpointing};
  const MatmulPrecision precision = c.bf16 ? MatmulPrecision::bf16 : MatmulPrecision::f32;
  check_memory(s,
               parameters * (c.do_train ? bytes_per_parameter(c) : 4.0) +
                   static_cast<double>(
                       SequenceClassifier::activation_bytes(s.model_config, limits, precision)),
               str("the model and the activations of a batch of ", max_batch,
                   " sequences of up to ", longest,
                   " tokens (lower --per_device_train_batch_size, "
                   "--per_device_eval_batch_size or --max_seq_length)"));
  s.model = std::make_unique<SequenceClassifier>(s.model_config, limits, precision);
  s.model->refresh_bf16_weights(s.p);
  if (c.label_smoothing_factor > 0) {
    if (s.task.regression)
      throw UsageError(str("--label_smoothing_factor smooths class labels; task ",
                           s.task.task_name.empty() ? "data" : s.task.task_name,
                           " is a regression"));
    s.model->set_loss_options(LossOptions{static_cast<float>(c.label_smoothing_factor)});
  }
}

Trainer::~Trainer() = default;

namespace {

// all_results.json; after training trainer_state.json, training_args.json, the model card
// README.md, training_curves.svg and log.jsonl.
void write_run_summary(Trainer::State& s, const fs::path& out, const json& train_results,
                       const json& eval_results) {
  if (!s.is_writer()) return;
  const TrainConfig& c = s.cfg;
  json all = json::object();
  for (const json* part : {&train_results, &eval_results})
    for (const auto& [key, value] : part->items()) all[key] = value;
  if (!all.empty()) write_json((out / "all_results.json").string(), all);
  if (!c.do_train) return;
  write_json((out / "trainer_state.json").string(),
             trainer_state_json(s.global_step, s.epoch, s.max_steps, s.log_history, c, s.best,
                                s.dist.world_size()));
  write_json((out / "training_args.json").string(), training_args_json(c));
  ModelCardFacts facts;
  facts.model_name = fs::path(c.output_dir).lexically_normal().filename().string();
  if (facts.model_name.empty()) facts.model_name = fs::path(c.output_dir).parent_path().filename();
  facts.finetuned_from = c.model_name_or_path;
  facts.task_name = s.task.task_name;
  facts.world_size = s.dist.world_size();
  facts.total_train_batch_size =
      c.per_device_train_batch_size * s.dist.world_size() * c.gradient_accumulation_steps;
  facts.eval_results = &eval_results;
  facts.log_history = &s.log_history;
  facts.version = CPUFT_VERSION_STRING;
  write_file_atomically((out / "README.md").string(), model_card(facts, c));
  write_file_atomically((out / "training_curves.svg").string(),
                        training_curves_svg(s.log_history, "cpuft: " + c.output_dir));
  write_file_atomically((out / "log.jsonl").string(), s.log_jsonl);
}

// --report_to tensorboard (or all): rank 0 writes event files into --logging_dir (default
// output_dir/runs/DATE_HOST), starting with the arguments and the model config as texts.
void start_tensorboard(Trainer::State& s) {
  const TrainConfig& c = s.cfg;
  const bool wanted = std::any_of(c.report_to.begin(), c.report_to.end(), [](const std::string& r) {
    return r == "tensorboard" || r == "all";
  });
  if (!wanted || !s.is_writer()) return;
  const std::string dir = c.logging_dir.empty() ? tensorboard_log_dir(c.output_dir) : c.logging_dir;
  s.tensorboard = std::make_unique<TensorBoardWriter>(dir);
  if (c.do_train) {
    s.tensorboard->add_text("args", training_args_json(c).dump(2));
    s.tensorboard->add_text("model_config", s.config_text);
    s.tensorboard->flush();
  }
  s.info("tensorboard: " + s.tensorboard->path());
}

}  // namespace

void Trainer::run() {
  State& s = *s_;
  const TrainConfig& c = s.cfg;
  const fs::path out(c.output_dir);
  std::error_code error;
  const bool created = !fs::exists(out, error) && (s.is_writer() || s.is_saver());
  if (s.is_writer() || s.is_saver()) fs::create_directories(out);
  try {
    // One job per output folder, held until the end; then nothing half-written of an interrupted
    // run stays behind (output_lock.h).
    const ClaimedOutputFolder claimed = claim_output_folder(*s.dist.comm, out, s.is_saver());
    if (!claimed.removed.empty())
      s.info(str("removed what an interrupted run left half-written in ", c.output_dir, ": ",
                 claimed.removed));
    const bool tty = !c.disable_tqdm && s.is_writer() && ::isatty(2);
    start_tensorboard(s);
    const json train_results = c.do_train ? train(s, out, tty) : json();
    const json eval_results = c.do_eval ? evaluate_at_end(s, out) : json();
    if (c.do_predict) write_predictions(s, out);
    write_run_summary(s, out, train_results, eval_results);
  } catch (...) {
    // A run that fails before writing anything leaves no empty output folder behind (its lock,
    // released by now, took its file with it).
    if (created && fs::is_empty(out, error)) fs::remove(out, error);
    throw;
  }
  s.dist.comm->barrier();
}

}  // namespace cpuft
