#include "train/trainer.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "core/fp_env.h"
#include "core/timer.h"
#include "io/hf_checkpoint.h"
#include "io/weight_files.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"
#include "step/train_step.h"
#include "train/checkpoint.h"
#include "train/evaluation.h"
#include "train/outputs.h"
#include "train/progress.h"
#include "train/trainer_state.h"

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

bool non_empty_dir(const fs::path& dir) {
  std::error_code error;
  return fs::is_directory(dir, error) && !fs::is_empty(dir, error);
}

}  // namespace

Trainer::Trainer(const TrainConfig& config) : s_(std::make_unique<State>(config)) {
  validate_train_config(s_->cfg);
  s_->dist = start_distributed(s_->cfg.dist_backend, s_->cfg.dist_timeout);
  s_->timeline = StepTimeline(s_->dist.rank());
}

void Trainer::abort_peers(int exit_code) {
  if (s_->dist.comm && s_->dist.world_size() > 1) s_->dist.comm->abort(exit_code);
}

void Trainer::prepare() {
  State& s = *s_;
  const TrainConfig& c = s.cfg;
  enable_flush_denormals_all_threads();

  // 1. Everything is read and checked before the output folder is touched.
  const fs::path model_dir(c.model_name_or_path);
  CPUFT_REQUIRE(fs::is_directory(model_dir), c.model_name_or_path,
                ": not a folder (expected a Hugging Face model folder)");
  if (s.is_writer() && c.do_train && non_empty_dir(c.output_dir) && !c.overwrite_output_dir &&
      c.resume_from_checkpoint.empty())
    throw Error(
        str("output directory ", c.output_dir,
            " already exists and is not empty; use --overwrite_output_dir to overwrite it"));
  s.config_text = read_text(model_dir / "config.json");
  s.model_config = parse_model_config(s.config_text, (model_dir / "config.json").string());
  s.task = load_task_data(c, s.model_config);
  const int64_t task_labels =
      s.task.regression ? 1 : static_cast<int64_t>(s.task.label_names.size());
  s.model_config.num_labels = task_labels;  // run_glue passes the task's num_labels
  s.model_config.problem_type = s.task.regression ? "regression" : "single_label_classification";
  if (c.max_seq_length > s.model_config.max_sequence_length()) {
    // As run_glue.py: the model's limit wins, with a warning.
    s.print(str(
        "--max_seq_length ", c.max_seq_length, " exceeds the ",
        s.model_config.max_sequence_length(), " positions of the model (max_position_embeddings ",
        s.model_config.max_position_embeddings, "); using ", s.model_config.max_sequence_length()));
    s.cfg.max_seq_length = static_cast<int>(s.model_config.max_sequence_length());
  }
  s.tokenizer = load_tokenizer(c.model_name_or_path);
  CPUFT_REQUIRE(s.tokenizer->vocab_size() <= s.model_config.vocab_size, c.model_name_or_path,
                ": the tokenizer has ", s.tokenizer->vocab_size(),
                " tokens but the model's vocab_size is ", s.model_config.vocab_size);

  s.layout = std::make_unique<ParamLayout>(s.model_config);
  s.params = AlignedBuffer<float>(static_cast<size_t>(s.layout->total_floats()));
  s.grads = AlignedBuffer<float>(static_cast<size_t>(s.layout->total_floats()));
  {
    // model.safetensors or the shards of its index; pickles refused with the conversion command.
    const std::vector<SafetensorsFile> files = open_weight_files(c.model_name_or_path);
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
      s.print("newly initialised (not in the checkpoint): " + name);
  }
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

  // 3. Every rank must run the same job: same parameter table, config, data and program; then all
  //    start from rank 0's weights (the new classifier head is random).
  std::string table;
  for (const ParamSpec& spec : s.layout->specs())
    table += str(spec.name, spec.shape.size(), spec.numel, ";");
  check_ranks_agree(*s.dist.comm,
                    {{"program", CPUFT_VERSION_STRING},
                     {"parameter table", fingerprint(table.data(), table.size())},
                     {"config", fingerprint(s.config_text.data(), s.config_text.size())},
                     {"train data", fingerprint(s.train.input_ids.data(),
                                                s.train.input_ids.size() * sizeof(int32_t))},
                     {"train labels",
                      fingerprint(s.train.labels.data(), s.train.labels.size() * sizeof(int32_t))},
                     {"flags", str(c.seed, " ", c.per_device_train_batch_size, " ",
                                   c.gradient_accumulation_steps, " ", c.learning_rate, " ",
                                   c.max_seq_length, " ", c.num_train_epochs, " ", c.max_steps)}});
  s.dist.comm->broadcast(s.params.data(), s.layout->total_floats() * sizeof(float), 0);
  if (s.dist.world_size() > 1) {
    s.buckets = std::make_unique<BucketPlan>(backward_layer_ranges(*s.layout),
                                             static_cast<int64_t>(c.bucket_cap_mb * 1024 * 1024));
    s.reducer = std::make_unique<GradReducer>(*s.dist.comm, *s.buckets, s.grads.data(),
                                              s.layout->total_floats());
    if (!c.timeline_dir.empty()) s.reducer->set_timeline(&s.timeline);
  }
  for (const std::string& line : describe_ranks(s.dist)) s.print(line);

  // 4. The model, sized for the largest batch any split can produce.
  int64_t longest = 1, max_batch = 1;
  auto consider = [&](const EncodedDataset& d, int64_t batch) {
    if (d.size() == 0) return;
    longest = std::max(longest, d.max_length());
    max_batch = std::max(max_batch, batch);
  };
  consider(s.train, c.per_device_train_batch_size);
  for (const auto& [suffix, d] : s.eval) consider(d, c.per_device_eval_batch_size);
  for (const auto& [suffix, d] : s.test) consider(d, c.per_device_eval_batch_size);
  s.model = std::make_unique<SequenceClassifier>(
      s.model_config, ModelLimits{max_batch * longest, max_batch, longest},
      c.bf16 ? MatmulPrecision::bf16 : MatmulPrecision::f32);
  s.model->refresh_bf16_weights(s.p);
}

Trainer::~Trainer() = default;

namespace {

// The mean of a per-rank value over all ranks (the value itself on one process).
double mean_over_ranks(Trainer::State& s, double value) {
  if (s.dist.world_size() == 1) return value;
  float total = static_cast<float>(value);
  s.dist.comm->wait(s.dist.comm->all_reduce_sum_async(&total, 1));
  return static_cast<double>(total) / s.dist.world_size();
}

// Fine-tunes for max_steps optimizer steps, logging, evaluating and saving checkpoints on the way
// as the strategies say; then (rank 0) writes the model, config, tokenizer and
// train_results.json. Returns train_results.
json train(Trainer::State& s, const fs::path& out, bool tty) {
  const TrainConfig& c = s.cfg;
  const int world = s.dist.world_size();
  json train_results;
  const int64_t n = s.train.size();
  // Every rank sees ceil(n / world) examples an epoch (DistributedSampler's padding).
  const int64_t per_rank = (n + world - 1) / world;
  const int64_t batches_per_epoch =
      (per_rank + c.per_device_train_batch_size - 1) / c.per_device_train_batch_size;
  s.steps_per_epoch = std::max<int64_t>(
      1, (batches_per_epoch + c.gradient_accumulation_steps - 1) / c.gradient_accumulation_steps);
  s.max_steps = c.max_steps > 0 ? c.max_steps
                                : static_cast<int64_t>(std::ceil(
                                      c.num_train_epochs * static_cast<double>(s.steps_per_epoch)));
  const int64_t warmup =
      c.warmup_steps > 0
          ? c.warmup_steps
          : static_cast<int64_t>(std::ceil(c.warmup_ratio * static_cast<double>(s.max_steps)));
  const LrSchedule schedule{parse_schedule_kind(c.lr_scheduler_type), c.learning_rate, warmup,
                            s.max_steps};
  // TODO(optim): TrainingArguments.optim / optim_args, once TrainConfig has them.
  const std::unique_ptr<Optimizer> optimizer =
      make_optimizer("adamw_torch", "", *s.layout,
                     OptimizerOptions{c.adam_beta1, c.adam_beta2, c.adam_epsilon, c.weight_decay});
  const Cadence log_cadence = Cadence::parse(c.logging_strategy, c.logging_steps);
  const Cadence eval_cadence =
      Cadence::parse(c.eval_strategy, c.eval_steps > 0 ? c.eval_steps : c.logging_steps);
  const Cadence save_cadence = Cadence::parse(c.save_strategy, c.save_steps);

  ResumePoint resume;
  if (!c.resume_from_checkpoint.empty()) {
    resume = load_checkpoint(c.resume_from_checkpoint, *s.layout, s.params.data(), *optimizer);
    s.model->refresh_bf16_weights(s.p);
    s.global_step = resume.global_step;
    s.log_history = resume.log_history;
    s.print(str("resumed from ", c.resume_from_checkpoint, " at step ", s.global_step));
  }

  s.print(str("training: ", n, " examples, ",
              (s.max_steps + s.steps_per_epoch - 1) / s.steps_per_epoch, " epochs, ", world,
              " rank(s) x batch ", c.per_device_train_batch_size, " x ",
              c.gradient_accumulation_steps, " accumulation, ", s.max_steps, " steps, ",
              s.dist.threads, " threads per rank", c.bf16 ? ", bf16 matrix products" : ""));
  // The step: forward/backward over the micro-batches, reduction over the ranks, clip, AdamW.
  TrainStep train_step(*s.model, *s.layout, s.params, s.grads, *optimizer,
                       StepOptions{c.seed, static_cast<uint32_t>(s.dist.rank()),
                                   c.gradient_accumulation_steps, c.max_grad_norm});
  train_step.set_reducer(s.reducer.get());
  TimelineRecorder recorder(s.timeline);
  if (!c.timeline_dir.empty()) train_step.set_observer(&recorder);

  Progress progress(s.max_steps, tty);
  Stopwatch run_watch;
  std::vector<Batch> micro_batches(static_cast<size_t>(c.gradient_accumulation_steps));
  double loss_since_log = 0, train_loss_sum = 0, overlap_sum = 0;
  int64_t steps_since_log = 0, samples_seen = 0;
  double last_grad_norm = 0;
  bool done = s.global_step >= s.max_steps;
  for (int64_t epoch = s.global_step / s.steps_per_epoch; !done; ++epoch) {
    const std::vector<int64_t> order = shard_order(
        epoch_order(s.train, c.seed, epoch, c.group_by_length, c.per_device_train_batch_size),
        s.dist.rank(), world);
    const int64_t first_step_of_epoch = epoch * s.steps_per_epoch;
    // Step k of the epoch runs batches [k * accumulation, (k + 1) * accumulation) of the epoch's
    // order; the epoch's last step may have fewer.
    for (int64_t k = 0; k * c.gradient_accumulation_steps < batches_per_epoch && !done; ++k) {
      if (first_step_of_epoch + k < s.global_step) continue;  // resuming
      const int64_t first_batch = k * c.gradient_accumulation_steps;
      const int64_t micros =
          std::min<int64_t>(c.gradient_accumulation_steps, batches_per_epoch - first_batch);
      for (int64_t m = 0; m < micros; ++m) {
        const int64_t begin = (first_batch + m) * c.per_device_train_batch_size;
        const int64_t end = std::min<int64_t>(static_cast<int64_t>(order.size()),
                                              begin + c.per_device_train_batch_size);
        fill_batch(micro_batches[static_cast<size_t>(m)], s.train,
                   {order.data() + begin, static_cast<size_t>(end - begin)}, s.task.regression);
        samples_seen += (end - begin) * world;
      }
      const StepResult step =
          train_step.run(s.global_step, {micro_batches.data(), static_cast<size_t>(micros)},
                         schedule.lr(s.global_step));
      for (int64_t m = 0; m < micros; ++m)
        s.total_flos += 6.0 * s.dense_params *
                        static_cast<double>(micro_batches[static_cast<size_t>(m)].num_tokens()) *
                        world;
      if (s.reducer) overlap_sum += s.reducer->last_stats().overlap_ratio;
      last_grad_norm = step.grad_norm;
      ++s.global_step;
      loss_since_log += step.loss;
      train_loss_sum += step.loss;
      ++steps_since_log;
      s.epoch = static_cast<double>(s.global_step) / static_cast<double>(s.steps_per_epoch);
      done = s.global_step >= s.max_steps;
      const bool epoch_end = first_batch + micros == batches_per_epoch;
      progress.update(s.global_step, step.loss,
                      static_cast<double>(samples_seen) / run_watch.seconds());

      if (log_cadence.due(s.global_step, epoch_end) && steps_since_log > 0) {
        // The logged loss is the mean over ranks: one small all-reduce per log line, not per step
        // (every rank takes the same logging decisions).
        loss_since_log = mean_over_ranks(s, loss_since_log);
        json entry = {{"loss", round_to(loss_since_log / static_cast<double>(steps_since_log), 4)},
                      {"grad_norm", last_grad_norm},
                      {"learning_rate", schedule.lr(s.global_step)},
                      {"epoch", round_to(s.epoch, 4)},
                      {"step", s.global_step}};
        if (s.reducer)
          entry["overlap_ratio"] = round_to(overlap_sum / static_cast<double>(steps_since_log), 3);
        s.log(entry);
        if (!tty)
          s.print(str("step ", s.global_step, "/", s.max_steps, "  loss ",
                      loss_since_log / static_cast<double>(steps_since_log), "  lr ",
                      schedule.lr(s.global_step), "  epoch ", round_to(s.epoch, 2)));
        loss_since_log = 0;
        overlap_sum = 0;
        steps_since_log = 0;
      }
      if (eval_cadence.due(s.global_step, epoch_end)) {
        json metrics = evaluate(s);
        metrics["epoch"] = round_to(s.epoch, 4);
        metrics["step"] = s.global_step;
        s.log(metrics);
        if (s.is_writer())
          progress.message(str("eval at step ", s.global_step, ": ", metrics.dump()));
      }
      if (save_cadence.due(s.global_step, epoch_end) && s.is_writer()) {
        CheckpointContent content{s.global_step, s.epoch, s.max_steps, s.log_history};
        save_checkpoint(out, content, *s.layout, s.params.data(), *optimizer,
                        fine_tuned_config(s.config_text, s.task.label_names, s.task.regression,
                                          s.task.task_name),
                        *s.tokenizer, c.save_total_limit, c);
      }
    }
  }
  progress.finish();
  train_loss_sum = mean_over_ranks(s, train_loss_sum);
  const double runtime = run_watch.seconds();
  const int64_t trained_steps = s.global_step - resume.global_step;
  train_results = {
      {"epoch", round_to(s.epoch, 4)},
      {"total_flos", s.total_flos},
      {"train_loss", trained_steps > 0 ? train_loss_sum / static_cast<double>(trained_steps) : 0.0},
      {"train_runtime", round_to(runtime, 4)},
      {"train_samples", n},
      {"train_samples_per_second", round_to(static_cast<double>(samples_seen) / runtime, 3)},
      {"train_steps_per_second", round_to(static_cast<double>(trained_steps) / runtime, 3)},
  };
  json summary = train_results;
  summary.erase("train_samples");
  summary["step"] = s.global_step;
  s.log(summary);

  if (s.is_writer()) {  // the fine-tuned model, in the Trainer's layout
    save_hf_weights((out / "model.safetensors").string(), *s.layout, s.params.data());
    write_json(
        (out / "config.json").string(),
        fine_tuned_config(s.config_text, s.task.label_names, s.task.regression, s.task.task_name));
    s.tokenizer->save(c.output_dir);
    write_json((out / "train_results.json").string(), train_results);
  }
  if (!c.timeline_dir.empty()) {
    fs::create_directories(c.timeline_dir);
    s.timeline.write(
        (fs::path(c.timeline_dir) / str("timeline-rank", s.dist.rank(), ".json")).string());
  }
  return train_results;
}

// all_results.json, and after training trainer_state.json, training_curves.svg and log.jsonl.
void write_run_summary(Trainer::State& s, const fs::path& out, const json& train_results,
                       const json& eval_results) {
  if (!s.is_writer()) return;
  const TrainConfig& c = s.cfg;
  json all = json::object();
  for (const json* part : {&train_results, &eval_results})
    for (const auto& [key, value] : part->items()) all[key] = value;
  if (!all.empty()) write_json((out / "all_results.json").string(), all);
  if (c.do_train) {
    write_json((out / "trainer_state.json").string(),
               trainer_state_json(s.global_step, s.epoch, s.max_steps, s.log_history, c));
    write_file_atomically((out / "training_curves.svg").string(),
                          training_curves_svg(s.log_history, "cpuft: " + c.output_dir));
    write_file_atomically((out / "log.jsonl").string(), s.log_jsonl);
  }
}

}  // namespace

void Trainer::run() {
  State& s = *s_;
  const TrainConfig& c = s.cfg;
  const fs::path out(c.output_dir);
  if (s.is_writer()) fs::create_directories(out);
  const bool tty = !c.disable_tqdm && s.is_writer() && ::isatty(2);
  const json train_results = c.do_train ? train(s, out, tty) : json();
  const json eval_results = c.do_eval ? evaluate_at_end(s, out) : json();
  if (c.do_predict) write_predictions(s, out);
  write_run_summary(s, out, train_results, eval_results);
  s.dist.comm->barrier();
}

}  // namespace cpuft
