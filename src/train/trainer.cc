#include "train/trainer.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/buffer.h"
#include "core/check.h"
#include "core/fp_env.h"
#include "core/timer.h"
#include "dist/bucket_plan.h"
#include "dist/grad_reducer.h"
#include "dist/step_timeline.h"
#include "io/bert_checkpoint.h"
#include "model/bert_model.h"
#include "optim/adamw.h"
#include "optim/lr_schedule.h"
#include "train/checkpoint.h"
#include "train/distributed.h"
#include "train/encoded_dataset.h"
#include "train/outputs.h"
#include "train/progress.h"
#include "train/task_data.h"

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

double round_to(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

}  // namespace

struct Trainer::State {
  TrainConfig cfg;
  TaskData task;
  std::string config_text;
  BertConfig model_config;
  std::optional<WordPieceTokenizer> tokenizer;  // set once the model folder is checked
  std::unique_ptr<ParamLayout> layout;
  AlignedBuffer<float> params, grads;
  BertParams p{}, g{};
  std::unique_ptr<BertModel> model;
  EncodedDataset train;
  std::vector<std::pair<std::string, EncodedDataset>> eval, test;
  json log_history = json::array();
  int64_t global_step = 0;
  double epoch = 0;
  int64_t max_steps = 0;
  int64_t steps_per_epoch = 0;
  double total_flos = 0;  // HF's count: 6 x non-embedding parameters x tokens
  double dense_params = 0;
  std::string log_jsonl;
  DistContext dist;
  std::unique_ptr<BucketPlan> buckets;
  std::unique_ptr<GradReducer> reducer;
  StepTimeline timeline;

  explicit State(const TrainConfig& config) : cfg(config), timeline(0) {}

  bool is_writer() const { return dist.rank() == 0; }
  void print(const std::string& line) const {
    if (is_writer()) std::printf("%s\n", line.c_str());
  }

  void log(const json& entry) {
    log_history.push_back(entry);
    log_jsonl += entry.dump() + "\n";
  }
};

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
  s.model_config = parse_bert_config(s.config_text, (model_dir / "config.json").string());
  s.task = load_task_data(c, s.model_config);
  const int64_t task_labels =
      s.task.regression ? 1 : static_cast<int64_t>(s.task.label_names.size());
  s.model_config.num_labels = task_labels;  // run_glue passes the task's num_labels
  s.model_config.problem_type = s.task.regression ? "regression" : "single_label_classification";
  if (c.max_seq_length > s.model_config.max_position_embeddings) {
    // As run_glue.py: the model's limit wins, with a warning.
    s.print(str("--max_seq_length ", c.max_seq_length,
                " exceeds the model's max_position_embeddings ",
                s.model_config.max_position_embeddings, "; using ",
                s.model_config.max_position_embeddings));
    s.cfg.max_seq_length = static_cast<int>(s.model_config.max_position_embeddings);
  }
  s.tokenizer.emplace(WordPieceTokenizer::from_folder(c.model_name_or_path));
  CPUFT_REQUIRE(s.tokenizer->vocab_size() <= s.model_config.vocab_size, c.model_name_or_path,
                ": the tokenizer has ", s.tokenizer->vocab_size(),
                " tokens but the model's vocab_size is ", s.model_config.vocab_size);

  s.layout = std::make_unique<ParamLayout>(s.model_config);
  s.params = AlignedBuffer<float>(static_cast<size_t>(s.layout->total_floats()));
  s.grads = AlignedBuffer<float>(static_cast<size_t>(s.layout->total_floats()));
  const fs::path weights = model_dir / "model.safetensors";
  CPUFT_REQUIRE(fs::exists(weights), weights.string(),
                ": missing (cpuft reads safetensors weights)");
  {
    const SafetensorsFile file = SafetensorsFile::open(weights.string());
    if (const TensorInfo* head = file.find("classifier.weight"))
      CPUFT_REQUIRE(head->shape.size() == 2 && head->shape[0] == task_labels, weights.string(),
                    ": the model's classifier has ", head->shape.empty() ? 0 : head->shape[0],
                    " labels but task ", s.task.task_name.empty() ? "data" : s.task.task_name,
                    " has ", task_labels);
    const LoadReport report = load_bert_weights(file, *s.layout, s.model_config, s.params.data(),
                                                LoadOptions{"", c.seed});
    for (const std::string& name : report.initialised)
      s.print("newly initialised (not in the checkpoint): " + name);
  }
  for (const ParamSpec& spec : s.layout->specs())
    if (spec.layer != kEmbeddingsLayer) s.dense_params += static_cast<double>(spec.numel);
  s.p = bind_params(*s.layout, s.model_config, s.params.data());
  s.g = bind_params(*s.layout, s.model_config, s.grads.data());

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
    std::vector<LayerRange> ranges;  // backward order: classifier, pooler, L-1 .. 0, embeddings
    for (int layer = classifier_layer(s.model_config); layer >= kEmbeddingsLayer; --layer) {
      const auto [begin, end] = s.layout->layer_range(layer);
      ranges.push_back(LayerRange{layer, begin, end});
    }
    s.buckets =
        std::make_unique<BucketPlan>(ranges, static_cast<int64_t>(c.bucket_cap_mb * 1024 * 1024));
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
  s.model = std::make_unique<BertModel>(s.model_config,
                                        ModelLimits{max_batch * longest, max_batch, longest},
                                        c.bf16 ? MatmulPrecision::bf16 : MatmulPrecision::f32);
  s.model->refresh_bf16_weights(s.p);
}

Trainer::~Trainer() = default;

namespace {

struct EvalResult {
  std::map<std::string, double> metrics;  // without prefix, loss included when labelled
  std::vector<float> logits;              // (n, K), every rank has all of them
};

// Rank r runs rows r, r + world, ... of `data`; the logits are gathered so every rank holds the
// whole table and computes the same metrics as a single process would.
EvalResult run_inference(Trainer::State& s, const EncodedDataset& data) {
  const int64_t K = s.model_config.num_labels;
  const bool regression = s.task.regression;
  const int rank = s.dist.rank(), world = s.dist.world_size();
  std::vector<int64_t> mine;
  for (int64_t i = rank; i < data.size(); i += world) mine.push_back(i);
  std::vector<float> local(mine.size() * static_cast<size_t>(K));
  Batch batch;
  double loss_sum = 0;
  const auto batch_size = static_cast<size_t>(s.cfg.per_device_eval_batch_size);
  for (size_t start = 0; start < mine.size(); start += batch_size) {
    const size_t count = std::min(batch_size, mine.size() - start);
    fill_batch(batch, data, {mine.data() + start, count}, regression);
    StepContext context;
    context.training = false;
    const float loss = s.model->forward(s.p, batch, context, data.has_labels);
    loss_sum += static_cast<double>(loss) * static_cast<double>(count);
    std::copy_n(s.model->logits(), count * K, local.data() + start * K);
  }
  EvalResult result;
  result.logits = gather_strided_rows(*s.dist.comm, local, data.size(), K);
  if (!data.has_labels) return result;
  if (world > 1) {
    float total = static_cast<float>(loss_sum);
    s.dist.comm->wait(s.dist.comm->all_reduce_sum_async(&total, 1));
    loss_sum = total;
  }
  if (regression) {
    result.metrics = task_metrics(s.task, result.logits, data.scores);
  } else {
    std::vector<int32_t> predicted(static_cast<size_t>(data.size()));
    for (int64_t i = 0; i < data.size(); ++i) {
      const float* row = result.logits.data() + i * K;
      predicted[i] = static_cast<int32_t>(std::max_element(row, row + K) - row);
    }
    result.metrics = task_metrics(s.task, predicted, data.labels);
  }
  result.metrics["loss"] = data.size() > 0 ? loss_sum / static_cast<double>(data.size()) : 0.0;
  return result;
}

// Evaluates every evaluation split; returns {"eval_accuracy": ..., "eval_loss": ..., ...}.
json evaluate(Trainer::State& s) {
  json out = json::object();
  for (const auto& [suffix, data] : s.eval) {
    Stopwatch watch;
    const EvalResult r = run_inference(s, data);
    const double seconds = watch.seconds();
    for (const auto& [key, value] : r.metrics) out["eval_" + key + suffix] = value;
    const double batches =
        std::ceil(static_cast<double>(data.size()) /
                  static_cast<double>(s.cfg.per_device_eval_batch_size * s.dist.world_size()));
    out["eval_runtime" + suffix] = round_to(seconds, 4);
    out["eval_samples_per_second" + suffix] =
        round_to(static_cast<double>(data.size()) / seconds, 3);
    out["eval_steps_per_second" + suffix] = round_to(batches / seconds, 3);
  }
  return out;
}

// The mean of a per-rank value over all ranks (the value itself on one process).
double mean_over_ranks(Trainer::State& s, double value) {
  if (s.dist.world_size() == 1) return value;
  float total = static_cast<float>(value);
  s.dist.comm->wait(s.dist.comm->all_reduce_sum_async(&total, 1));
  return static_cast<double>(total) / s.dist.world_size();
}

// Tells the gradient reducer when a layer's gradients are final (the model knows nothing of dist).
class ReducerListener : public GradListener {
 public:
  explicit ReducerListener(GradReducer& reducer) : reducer_(reducer) {}
  void on_layer_grads_ready(int layer) override { reducer_.layer_ready(layer); }

 private:
  GradReducer& reducer_;
};

std::string format_prediction(const Trainer::State& s, const float* row) {
  const int64_t K = s.model_config.num_labels;
  if (s.task.regression) {
    char value[32];
    std::snprintf(value, sizeof value, "%3.3f", static_cast<double>(row[0]));
    return value;
  }
  return s.task.label_names[static_cast<size_t>(std::max_element(row, row + K) - row)];
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
  AdamW adamw(*s.layout, AdamWOptions{c.adam_beta1, c.adam_beta2, c.adam_epsilon, c.weight_decay});
  const int64_t eval_every = c.eval_steps > 0 ? c.eval_steps : c.logging_steps;

  ResumePoint resume;
  if (!c.resume_from_checkpoint.empty()) {
    resume = load_checkpoint(c.resume_from_checkpoint, *s.layout, s.params.data(), adamw);
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
  Progress progress(s.max_steps, tty);
  std::unique_ptr<ReducerListener> listener;
  if (s.reducer) listener = std::make_unique<ReducerListener>(*s.reducer);
  Stopwatch run_watch;
  Batch batch;
  double loss_since_log = 0, train_loss_sum = 0, overlap_sum = 0;
  int64_t steps_since_log = 0, samples_seen = 0;
  double last_grad_norm = 0;
  const float loss_scale = 1.0f / static_cast<float>(c.gradient_accumulation_steps);
  bool done = s.global_step >= s.max_steps;
  for (int64_t epoch = s.global_step / s.steps_per_epoch; !done; ++epoch) {
    const std::vector<int64_t> order = shard_order(
        epoch_order(s.train, c.seed, epoch, c.group_by_length, c.per_device_train_batch_size),
        s.dist.rank(), world);
    const int64_t first_step_of_epoch = epoch * s.steps_per_epoch;
    double step_loss = 0;
    int64_t micro_in_step = 0;
    for (int64_t b = 0; b < batches_per_epoch && !done; ++b) {
      const int64_t step_in_epoch = b / c.gradient_accumulation_steps;
      if (first_step_of_epoch + step_in_epoch < s.global_step) continue;  // resuming
      const int64_t begin = b * c.per_device_train_batch_size;
      const int64_t end = std::min<int64_t>(static_cast<int64_t>(order.size()),
                                            begin + c.per_device_train_batch_size);
      fill_batch(batch, s.train, {order.data() + begin, static_cast<size_t>(end - begin)},
                 s.task.regression);
      const bool last_of_epoch = b + 1 == batches_per_epoch;
      const bool last_micro = micro_in_step + 1 == c.gradient_accumulation_steps || last_of_epoch;
      const double t0 = s.timeline.now_micros();
      const float loss = s.model->forward(
          s.p, batch,
          StepContext{
              c.seed,
              static_cast<uint64_t>(s.global_step * c.gradient_accumulation_steps + micro_in_step),
              static_cast<uint32_t>(s.dist.rank()), true},
          true, loss_scale);
      const double t1 = s.timeline.now_micros();
      // Gradients are reduced once per optimizer step, during the last micro-batch's backward.
      if (last_micro && s.reducer) s.reducer->begin_step(s.global_step);
      s.model->backward(s.p, s.g, last_micro ? listener.get() : nullptr);
      const double t2 = s.timeline.now_micros();
      s.total_flos += 6.0 * s.dense_params * static_cast<double>(batch.num_tokens()) * world;
      step_loss += loss;
      ++micro_in_step;
      samples_seen += (end - begin) * world;
      if (!c.timeline_dir.empty()) {
        s.timeline.add("forward", "compute", t0, t1, 0, s.global_step);
        s.timeline.add("backward", "compute", t1, t2, 0, s.global_step);
      }
      if (!last_micro) continue;

      double mean_loss = step_loss / static_cast<double>(micro_in_step);
      if (s.reducer) {
        s.reducer->finish();
        overlap_sum += s.reducer->last_stats().overlap_ratio;
      }
      const double t3 = s.timeline.now_micros();
      last_grad_norm = clip_grad_norm(s.grads.data(), s.layout->total_floats(), c.max_grad_norm);
      adamw.step(s.params.data(), s.grads.data(), schedule.lr(s.global_step));
      s.model->refresh_bf16_weights(s.p);  // the bf16 copy follows every update (--bf16)
      s.grads.zero();
      if (!c.timeline_dir.empty())
        s.timeline.add("optimizer", "compute", t3, s.timeline.now_micros(), 0, s.global_step);
      step_loss = 0;
      micro_in_step = 0;
      ++s.global_step;
      loss_since_log += mean_loss;
      train_loss_sum += mean_loss;
      ++steps_since_log;
      s.epoch = static_cast<double>(s.global_step) / static_cast<double>(s.steps_per_epoch);
      done = s.global_step >= s.max_steps;
      const bool epoch_end = last_of_epoch;
      progress.update(s.global_step, mean_loss,
                      static_cast<double>(samples_seen) / run_watch.seconds());

      const bool log_now =
          (c.logging_strategy == "steps" && s.global_step % c.logging_steps == 0) ||
          (c.logging_strategy == "epoch" && epoch_end);
      if (log_now && steps_since_log > 0) {
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
      const bool eval_now = (c.eval_strategy == "steps" && s.global_step % eval_every == 0) ||
                            (c.eval_strategy == "epoch" && epoch_end);
      if (eval_now) {
        json metrics = evaluate(s);
        metrics["epoch"] = round_to(s.epoch, 4);
        metrics["step"] = s.global_step;
        s.log(metrics);
        if (s.is_writer())
          progress.message(str("eval at step ", s.global_step, ": ", metrics.dump()));
      }
      const bool save_now = (c.save_strategy == "steps" && s.global_step % c.save_steps == 0) ||
                            (c.save_strategy == "epoch" && epoch_end);
      if (save_now && s.is_writer()) {
        CheckpointContent content{s.global_step, s.epoch, s.max_steps, s.log_history};
        save_checkpoint(out, content, *s.layout, s.params.data(), adamw,
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
    save_bert_weights((out / "model.safetensors").string(), *s.layout, s.params.data());
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

// The evaluation at the end (--do_eval): eval_results.json on rank 0. Returns the metrics.
json evaluate_at_end(Trainer::State& s, const fs::path& out) {
  json eval_results = evaluate(s);
  eval_results["epoch"] = round_to(s.epoch, 4);
  for (const auto& [suffix, data] : s.eval) eval_results["eval_samples" + suffix] = data.size();
  if (s.is_writer()) write_json((out / "eval_results.json").string(), eval_results);
  json entry = eval_results;
  entry["step"] = s.global_step;
  s.log(entry);
  s.print("eval: " + eval_results.dump());
  return eval_results;
}

// --do_predict: predict_results_<task>.txt (GLUE submission format) and, with --save_logits,
// predict_logits_<task>.tsv, on rank 0.
void write_predictions(Trainer::State& s, const fs::path& out) {
  const TrainConfig& c = s.cfg;
  for (const auto& [suffix, data] : s.test) {
    const EvalResult r = run_inference(s, data);
    if (!s.is_writer()) continue;
    const int64_t K = s.model_config.num_labels;
    std::string text = "index\tprediction\n";
    for (int64_t i = 0; i < data.size(); ++i)
      text += str(data.indices[i], "\t", format_prediction(s, r.logits.data() + i * K), "\n");
    const std::string task = s.task.task_name.empty() ? "data" : s.task.task_name;
    const std::string tag = str(task, suffix.empty() ? "" : "-mm");
    const fs::path results = out / str("predict_results_", tag, ".txt");
    write_file_atomically(results.string(), text);
    s.print("predictions: " + results.string());
    if (c.save_logits) {
      std::string logits = "index";
      for (int64_t k = 0; k < K; ++k) logits += str("\tlogit_", k);
      logits += "\n";
      for (int64_t i = 0; i < data.size(); ++i) {
        logits += str(data.indices[i]);
        for (int64_t k = 0; k < K; ++k) {
          char value[32];
          std::snprintf(value, sizeof value, "\t%.9g", static_cast<double>(r.logits[i * K + k]));
          logits += value;
        }
        logits += "\n";
      }
      write_file_atomically((out / str("predict_logits_", tag, ".tsv")).string(), logits);
    }
  }
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
