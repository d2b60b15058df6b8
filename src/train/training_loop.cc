// The training loop of `cpuft train` (see training_loop.h).
#include "train/training_loop.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/check.h"
#include "core/timer.h"
#include "io/hf_checkpoint.h"
#include "model/model_flops.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"
#include "step/train_step.h"
#include "train/checkpoint.h"
#include "train/evaluation.h"
#include "train/exchange_report.h"
#include "train/machine_peak.h"
#include "train/outputs.h"
#include "train/progress.h"
#include "train/stop_signals.h"
#include "train/trainer_state.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cpuft {

namespace {

// Batches a rank runs in one epoch (encoded_dataset.h), at least one.
int64_t checked_batches_per_epoch(const Trainer::State& s) {
  const TrainConfig& c = s.cfg;
  const int world = s.dist.world_size();
  const int64_t batches = batches_per_epoch(s.train.size(), world, c.per_device_train_batch_size,
                                            c.dataloader_drop_last);
  CPUFT_REQUIRE(batches > 0, "--dataloader_drop_last: each rank has ",
                (s.train.size() + world - 1) / world,
                " training examples, fewer than one batch of ", c.per_device_train_batch_size);
  return batches;
}

// Warmup steps: --warmup_steps (below 1: a fraction of the steps, as transformers 5), else
// --warmup_ratio.
int64_t warmup_steps(const TrainConfig& c, int64_t max_steps) {
  const double total = static_cast<double>(max_steps);
  if (c.warmup_steps >= 1) return static_cast<int64_t>(c.warmup_steps);
  if (c.warmup_steps > 0) return static_cast<int64_t>(std::ceil(c.warmup_steps * total));
  return static_cast<int64_t>(std::ceil(c.warmup_ratio * total));
}

// One evaluation during training: logged, shown, and compared with the best so far. Returns
// whether it is a new best.
bool evaluate_during_training(Trainer::State& s, Progress& progress) {
  json metrics = evaluate(s);
  metrics["epoch"] = round_to(s.epoch, 4);
  metrics["step"] = s.global_step;
  s.log(metrics);
  if (s.is_writer() && s.cfg.log_level != "error" && s.cfg.log_level != "critical")
    progress.message(str("eval at step ", s.global_step, ": ", metrics.dump()));
  return s.best.observe(metrics, s.global_step);
}

void save_checkpoint_now(Trainer::State& s, const fs::path& out, Optimizer& optimizer) {
  // Every rank knows the best checkpoint (the metrics are the same everywhere); the savers write.
  s.best.saved(s.global_step, (out / str("checkpoint-", s.global_step)).string());
  if (!s.is_saver()) return;
  CheckpointContent content{s.global_step, s.epoch, s.max_steps,
                            s.log_history, s.best,  s.dist.world_size()};
  save_checkpoint(
      out, content, *s.layout, s.params.data(), optimizer,
      fine_tuned_config(s.config_text, s.task.label_names, s.task.regression, s.task.task_name),
      *s.tokenizer, s.cfg.save_total_limit, s.cfg);
}

// --load_best_model_at_end: rank 0 reads the best checkpoint's weights and every rank takes them.
void load_best_model(Trainer::State& s) {
  const std::string& dir = s.best.best_model_checkpoint();
  if (!s.cfg.load_best_model_at_end) return;
  if (dir.empty()) {
    s.warn(
        "--load_best_model_at_end: no checkpoint was saved at a best evaluation; keeping the "
        "last weights");
    return;
  }
  s.info(
      str("loading best model from ", dir, " (", s.best.metric(), " ", *s.best.best_metric(), ")"));
  if (s.is_writer()) load_checkpoint_weights(dir, *s.layout, s.params.data());
  s.dist.comm->broadcast(s.params.data(), s.layout->total_floats() * sizeof(float), 0);
  s.model->refresh_bf16_weights(s.p);
}

}  // namespace

// After a step whose gradient norm (the same on every rank) or loss is not finite: the weights are
// lost, so the run stops naming the step and the first non-finite weight; nothing is written as if
// fine.
void stop_if_not_finite(const Trainer::State& s, const StepResult& step) {
  if (std::isfinite(step.grad_norm) && std::isfinite(step.loss)) return;
  std::string first = "none";
  for (const ParamSpec& spec : s.layout->specs()) {
    const float* w = s.params.data() + spec.offset;
    if (!std::all_of(w, w + spec.numel, [](float v) { return std::isfinite(v); })) {
      first = spec.name;
      break;
    }
  }
  throw Error(str("step ", s.global_step + 1, ": the loss (", step.loss, ") or gradient norm (",
                  step.grad_norm, ") is not finite; first non-finite weight after the update: ",
                  first, "; lower --learning_rate or check the data (no model was written)"));
}

// A stop signal on any rank stops every rank after the same step: one small all-reduce per step
// when there are several ranks. Every rank returns the same signal, one that some rank received
// (the first of SIGTERM, SIGINT, SIGUSR1 that any rank has), or 0: a signal the launcher forwards
// reaches the ranks at different moments, and a rank that had not got it yet named another one
// (mpirun forwarding SIGUSR1: rank 0 said "stopped by SIGTERM" and exited 143).
int agreed_stop_signal(Trainer::State& s) {
  const int mine = StopSignals::pending();
  if (s.dist.world_size() == 1) return mine;
  float received[3];  // how many ranks have each of kStopSignals
  for (int k = 0; k < 3; ++k) received[k] = mine == kStopSignals[k] ? 1.0f : 0.0f;
  s.dist.comm->wait(s.dist.comm->all_reduce_sum_async(received, 3));
  for (int k = 0; k < 3; ++k)
    if (received[k] != 0) return kStopSignals[k];
  return 0;
}

// Once, after this run's first optimizer step: how long reading, tokenizing and the first step
// (with its one-time set-up: oneDNN primitives, buffers, first touches) took since the start.
void report_start_up(const Trainer::State& s) {
  const double now = s.since_start.seconds();
  s.info(str("start-up: weights read at ", round_to(s.weights_read_at, 2), " s, data tokenized at ",
             round_to(s.data_ready_at, 2), " s, first optimizer step done at ", round_to(now, 2),
             " s (", round_to(now - s.weights_read_at, 2), " s after the weights were read)"));
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
  }
  return "a signal";
}

// One line at the end of training: the work padding would have cost. run_glue.py pads every
// sequence to --max_seq_length unless --pad_to_max_length False; cpuft computes real tokens only.
void report_padding_avoided(Trainer::State& s, int64_t local_tokens, int64_t local_sequences) {
  const double tokens = s.mean_over_ranks(static_cast<double>(local_tokens));
  const double sequences = s.mean_over_ranks(static_cast<double>(local_sequences));
  const double padded = sequences * static_cast<double>(s.cfg.max_seq_length);
  if (padded <= 0) return;
  const int world = s.dist.world_size();
  s.info(str("padding avoided: ", static_cast<int64_t>(std::llround(tokens * world)),
             " real tokens trained; padded to --max_seq_length ", s.cfg.max_seq_length,
             " (run_glue.py's default) the batches would hold ",
             static_cast<int64_t>(std::llround(padded * world)), ", ",
             round_to(100.0 * (1.0 - tokens / padded), 1), "% of them padding"));
}

// Runs at least this long probe the peak again at their end: the probe (about 0.1-0.2 s) then costs
// under 1% of the run.
constexpr double kReprobeMinRunSeconds = 20;

// x with one decimal and never in exponent notation (str() writes 1.31727e+06): a peak planted or
// probed far too low makes MFU read millions of percent.
std::string one_decimal(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", x);
  return text;
}

// raise_machine_peak, or `start` (with a warning naming `when`) when the probe fails: a failed
// probe never stops a run.
MachinePeak probe_again(const Trainer::State& s, bool bf16, const MachinePeak& start,
                        const std::string& when) {
  try {
    return raise_machine_peak(bf16, s.dist.threads, start);
  } catch (const Error& e) {
    s.warn(str("compute peak: the probe ", when, " failed (", e.what(), ")"));
    return start;
  }
}

// The end-of-run probe: on a shared host a first probe taken in a slow moment reads low, and every
// later run's MFU would read high from the cache. Rank-local, no collective (ranks may disagree on
// whether their run was long enough): the writer reports its own probe.
void report_raised_peak(const Trainer::State& s, bool bf16, const MachinePeak& start,
                        double mfu_gflops, double run_seconds) {
  if (run_seconds < kReprobeMinRunSeconds) return;
  const MachinePeak raised = probe_again(s, bf16, start, "at the end of training");
  // Against the peak the MFU figures used (the mean over the ranks).
  if (raised.peak.gflops <= (1 + kPeakRaiseMargin) * mfu_gflops) return;
  s.info(
      str("compute peak: ", one_decimal(raised.peak.gflops), " GFLOP/s ", raised.peak.unit,
          " measured at the end of training, above the ", one_decimal(mfu_gflops),
          " GFLOP/s this run's MFU figures used (they read ",
          one_decimal(100 * (raised.peak.gflops / mfu_gflops - 1)), "% high)",
          raised.saved ? str("; saved to ", raised.cache_path, " for later runs") : std::string()));
}

// A log line's MFU above 100% cannot be: the peak it was measured against was probed in a slow
// moment and read low (the README's short job on a fresh VM read 115%). Probes again on every rank
// (the caller decides alike on all of them) and returns the new per-rank peak in FLOP/s, the mean
// over the ranks; `peak_flops` when the probe failed or read no higher.
double reprobe_after_impossible_mfu(const Trainer::State& s, bool bf16, const MachinePeak& start,
                                    double peak_flops, double mfu) {
  const std::string read = str("compute peak: MFU read ", one_decimal(100 * mfu), "% against ",
                               one_decimal(peak_flops / 1e9), " GFLOP/s, so that probe read low");
  const MachinePeak probed = probe_again(s, bf16, start, "after MFU read above 100%");
  const double flops = s.mean_over_ranks(probed.peak.gflops) * 1e9;
  if (flops <= (1 + kPeakRaiseMargin) * peak_flops) {
    s.info(read + "; probing again read no higher");
    return peak_flops;
  }
  s.info(str(read, "; probed again: ", one_decimal(flops / 1e9), " GFLOP/s ", probed.peak.unit,
             probed.saved ? str(" (saved to ", probed.cache_path, ")") : std::string(),
             "; MFU from here on is over it"));
  return flops;
}

// Fine-tunes for max_steps optimizer steps, logging, evaluating and saving checkpoints on the way
// as the strategies say; then writes the model, config, tokenizer and train_results.json.
// Returns train_results.
json train(Trainer::State& s, const fs::path& out, bool tty) {
  const TrainConfig& c = s.cfg;
  const int world = s.dist.world_size();
  const int64_t n = s.train.size();
  const int64_t epoch_batches = checked_batches_per_epoch(s);
  s.steps_per_epoch = steps_per_epoch(n, world, c.per_device_train_batch_size,
                                      c.gradient_accumulation_steps, c.dataloader_drop_last);
  s.max_steps = c.max_steps > 0 ? c.max_steps
                                : static_cast<int64_t>(std::ceil(
                                      c.num_train_epochs * static_cast<double>(s.steps_per_epoch)));
  const LrSchedule schedule =
      make_lr_schedule(c.lr_scheduler_type, c.learning_rate, warmup_steps(c, s.max_steps),
                       s.max_steps, c.lr_scheduler_kwargs);
  const std::unique_ptr<Optimizer> optimizer =
      make_optimizer(c.optim == "adamw_hf" ? "adamw_torch" : c.optim, c.optim_args, *s.layout,
                     OptimizerOptions{c.adam_beta1, c.adam_beta2, c.adam_epsilon, c.weight_decay});
  const Cadence log_cadence = Cadence::parse(c.logging_strategy, c.logging_steps, s.max_steps);
  const Cadence eval_cadence = Cadence::parse(
      c.eval_strategy, c.eval_steps > 0 ? c.eval_steps : c.logging_steps, s.max_steps);
  const Cadence save_cadence = Cadence::parse(c.save_strategy, c.save_steps, s.max_steps);

  ResumePoint resume;
  if (!s.resume_dir.empty()) {
    resume = load_checkpoint(s.resume_dir, *s.layout, s.params.data(), *optimizer);
    check_resumable(resume.trainer_state, s.resume_dir, c, world, n, s.max_steps);
    s.model->refresh_bf16_weights(s.p);
    s.global_step = resume.global_step;
    s.log_history = resume.log_history;
    s.best.restore(resume.trainer_state);
    s.info(str("resumed from ", s.resume_dir, " at step ", s.global_step));
  }

  s.info(str("training: ", n, " examples, ",
             (s.max_steps + s.steps_per_epoch - 1) / s.steps_per_epoch, " epochs, ", world,
             " rank(s) x batch ", c.per_device_train_batch_size, " x ",
             c.gradient_accumulation_steps, " accumulation, ", s.max_steps, " steps, ",
             s.dist.threads, " threads per rank", c.bf16 ? ", bf16 matrix products" : ""));
  // The step: forward/backward over the micro-batches, reduction over the ranks, clip, optimizer.
  TrainStep train_step(*s.model, *s.layout, s.params, s.grads, *optimizer,
                       StepOptions{c.seed, c.gradient_accumulation_steps, c.max_grad_norm});
  train_step.set_reducer(s.reducer.get());
  TimelineRecorder recorder(s.timeline);
  if (!c.timeline_dir.empty()) train_step.set_observer(&recorder);

  const StopSignals stop_signals;  // SIGTERM, SIGINT, SIGUSR1: stop after the step, resumable
  Progress progress(s.max_steps, tty);
  if (c.eval_on_start && s.global_step == 0) evaluate_during_training(s, progress);
  // MFU's yardstick: this rank's peak for the run's products (probed once per machine, cached;
  // raised at the end of long runs, report_raised_peak); the job's is the sum over the ranks.
  const MachinePeak peak = machine_peak(c.bf16, s.dist.threads);
  double peak_flops = s.mean_over_ranks(peak.peak.gflops) * 1e9;  // per rank
  bool reprobed = false;  // after an MFU above 100% (at most once a run)
  const std::string peak_source =
      peak.cached ? str("cached in ", peak.cache_path)
      : peak.busy
          ? str("measured now, not cached: its threads got ", round_to(100 * peak.core_share, 0),
                "% of the CPU time they could have had (another process, or a CPU quota), so it "
                "reads low")
      : peak.cache_path.empty() ? std::string("measured now")
                                : str("measured now, saved to ", peak.cache_path);
  s.info(str("compute peak: ", round_to(peak.peak.gflops, 1), " GFLOP/s ", peak.peak.unit, " on ",
             s.dist.threads, " threads per rank (", peak_source,
             "); MFU below is model FLOP/s over it"));
  Stopwatch run_watch;
  const int64_t first_step = s.global_step;  // of this run (a resumed run starts past 0)
  std::vector<Batch> micro_batches(static_cast<size_t>(c.gradient_accumulation_steps));
  double loss_since_log = 0, train_loss_sum = 0, overlap_sum = 0;
  int64_t steps_since_log = 0, samples_seen = 0;
  // This rank's real tokens and sequences, since the last log line and in all: the speed in the
  // log, and the padding a padded batch would have computed (the summary at the end).
  int64_t tokens_since_log = 0, samples_since_log = 0, local_tokens = 0, local_sequences = 0;
  // This rank's model FLOPs (model/model_flops.h), since the last log line and in all: MFU.
  double flops_since_log = 0, local_flops = 0;
  Stopwatch log_watch;
  // The wait for the gradient all-reduce after backward, and the steps' time, since the last log
  // line: the exposed communication (what overlap with backward did not hide).
  double reduce_wait_since_log = 0, step_seconds_since_log = 0;
  ExchangeReport exchange_report(s.max_steps - s.global_step);
  double last_grad_norm = 0;
  const uint64_t data_seed = c.data_seed >= 0 ? static_cast<uint64_t>(c.data_seed) : c.seed;
  bool done = s.global_step >= s.max_steps;
  const int64_t first_epoch = s.global_step / s.steps_per_epoch;
  for (int64_t epoch = first_epoch; !done; ++epoch) {
    const std::vector<int64_t> order = pad_to_ranks(
        epoch_order(s.train, data_seed, epoch, c.group_by_length, c.per_device_train_batch_size),
        world);
    // Resuming: the steps of the first epoch already trained are skipped with their data, unless
    // --ignore_data_skip: then the epoch's data starts over (the step count goes on).
    const int64_t skipped_steps =
        epoch == first_epoch && !c.ignore_data_skip ? s.global_step - epoch * s.steps_per_epoch : 0;
    // Step k of the epoch runs batches [k * accumulation, (k + 1) * accumulation) of the epoch's
    // order; the epoch's last step may have fewer.
    for (int64_t k = skipped_steps; k * c.gradient_accumulation_steps < epoch_batches && !done;
         ++k) {
      const int64_t first_batch = k * c.gradient_accumulation_steps;
      const int64_t micros =
          std::min<int64_t>(c.gradient_accumulation_steps, epoch_batches - first_batch);
      for (int64_t m = 0; m < micros; ++m) {
        // Micro-batch m of the step: `batch` examples per rank from the epoch's padded order,
        // dealt to the ranks by their tokens; each numbered by its place in the step's share of
        // the order (dropout masks: the same numbers whatever the split, so 2 ranks of batch b
        // match 1 rank of batch 2b).
        const int64_t global_batch = c.per_device_train_batch_size * world;
        const int64_t begin = (first_batch + m) * global_batch;
        const int64_t end =
            std::min<int64_t>(static_cast<int64_t>(order.size()), begin + global_batch);
        const RankRows mine =
            rank_rows(s.train, {order.data() + begin, static_cast<size_t>(end - begin)},
                      m * global_batch, s.dist.rank(), world);
        fill_batch(micro_batches[static_cast<size_t>(m)], s.train, mine.rows, s.task.regression,
                   mine.numbers);
        samples_seen += end - begin;
      }
      const StepResult step =
          train_step.run(s.global_step, {micro_batches.data(), static_cast<size_t>(micros)},
                         schedule.lr(s.global_step));
      stop_if_not_finite(s, step);
      for (int64_t m = 0; m < micros; ++m) {
        const Batch& batch = micro_batches[static_cast<size_t>(m)];
        s.total_flos += 6.0 * s.dense_params * static_cast<double>(batch.num_tokens()) * world;
        tokens_since_log += batch.num_tokens();
        const double flops = training_flops(s.model_config, batch);
        flops_since_log += flops;
        local_flops += flops;
        samples_since_log += batch.num_sequences();
        local_tokens += batch.num_tokens();
        local_sequences += batch.num_sequences();
      }
      if (s.reducer) overlap_sum += s.reducer->last_stats().overlap_ratio;
      reduce_wait_since_log += step.reduce_seconds;
      step_seconds_since_log += step.seconds;
      last_grad_norm = step.grad_norm;
      ++s.global_step;
      if (s.global_step == first_step + 1) report_start_up(s);
      exchange_report.after_step(s, s.global_step - first_step, step);
      loss_since_log += step.loss;
      train_loss_sum += step.loss;
      ++steps_since_log;
      s.epoch = static_cast<double>(s.global_step) / static_cast<double>(s.steps_per_epoch);
      done = s.global_step >= s.max_steps;
      const bool epoch_end = first_batch + micros == epoch_batches;
      const double run_seconds = run_watch.seconds();
      progress.update(s.global_step, step.loss, static_cast<double>(samples_seen) / run_seconds,
                      static_cast<double>(local_tokens * world) / run_seconds,
                      peak_flops > 0 ? local_flops / run_seconds / peak_flops : -1);

      const bool log_due =
          log_cadence.due(s.global_step, epoch_end) || (c.logging_first_step && s.global_step == 1);
      if (log_due && steps_since_log > 0) {
        // The logged loss is the mean over ranks: one small all-reduce per log line, not per step
        // (every rank takes the same logging decisions).
        loss_since_log = s.mean_over_ranks(loss_since_log);
        // Speed since the last log line, all ranks: real tokens (no padding) and sequences.
        const double seconds = log_watch.seconds();
        const double tokens_per_second =
            s.mean_over_ranks(static_cast<double>(tokens_since_log)) * world / seconds;
        const double samples_per_second =
            s.mean_over_ranks(static_cast<double>(samples_since_log)) * world / seconds;
        json entry = {{"loss", round_to(loss_since_log / static_cast<double>(steps_since_log), 4)},
                      {"grad_norm", last_grad_norm},
                      {"learning_rate", schedule.lr(s.global_step)},
                      {"epoch", round_to(s.epoch, 4)},
                      {"samples_per_second", round_to(samples_per_second, 2)},
                      {"tokens_per_second", round_to(tokens_per_second, 1)},
                      {"step", s.global_step}};
        // Model FLOP/s over the measured peak, all ranks (the mean of each rank's share). Above
        // 100% on any rank, the peak is probed again (every rank takes part).
        const double rank_flops = s.mean_over_ranks(flops_since_log);
        double mfu = peak_flops > 0 ? rank_flops / seconds / peak_flops : -1;
        if (!reprobed && peak_flops > 0 && s.mean_over_ranks(mfu > 1 ? 1.0 : 0.0) > 0) {
          reprobed = true;
          peak_flops = reprobe_after_impossible_mfu(s, c.bf16, peak, peak_flops, mfu);
          mfu = rank_flops / seconds / peak_flops;
        }
        if (mfu >= 0) entry["mfu"] = round_to(mfu, 6);
        if (s.reducer) {
          entry["overlap_ratio"] = round_to(overlap_sum / static_cast<double>(steps_since_log), 3);
          // The mean over the ranks, so that every rank decides alike.
          const double exposed =
              s.mean_over_ranks(reduce_wait_since_log / std::max(step_seconds_since_log, 1e-12));
          entry["exposed_communication"] = round_to(exposed, 3);
          exchange_report.measured(s, exposed);
        }
        s.log(entry);
        if (!tty)
          s.info(str("step ", s.global_step, "/", s.max_steps, "  loss ",
                     loss_since_log / static_cast<double>(steps_since_log), "  lr ",
                     schedule.lr(s.global_step), "  epoch ", round_to(s.epoch, 2), "  ",
                     round_to(samples_per_second, 1), " samples/s  ",
                     round_to(tokens_per_second, 0), " tokens/s",
                     mfu >= 0 ? str("  MFU ", round_to(100 * mfu, 1), "%") : ""));
        loss_since_log = 0;
        flops_since_log = 0;
        reduce_wait_since_log = 0;
        step_seconds_since_log = 0;
        tokens_since_log = 0;
        samples_since_log = 0;
        log_watch.reset();
        overlap_sum = 0;
        steps_since_log = 0;
      }
      // --eval_delay: no evaluation before that many steps (epochs for the epoch strategy).
      const double progress_point =
          eval_cadence.kind == Cadence::Kind::epoch ? s.epoch : static_cast<double>(s.global_step);
      bool new_best = false;
      if (eval_cadence.due(s.global_step, epoch_end) && progress_point >= c.eval_delay)
        new_best = evaluate_during_training(s, progress);
      const bool save =
          save_cadence.due(s.global_step, epoch_end) || (c.save_strategy == "best" && new_best);
      if (save) save_checkpoint_now(s, out, *optimizer);
      if (const int signal = agreed_stop_signal(s)) {
        if (!save) save_checkpoint_now(s, out, *optimizer);
        progress.finish();
        const std::string checkpoint = (out / str("checkpoint-", s.global_step)).string();
        if (s.is_writer())
          std::fprintf(stderr,
                       "stopped by %s after step %lld of %lld: resume with "
                       "--resume_from_checkpoint %s\n",
                       signal_name(signal), static_cast<long long>(s.global_step),
                       static_cast<long long>(s.max_steps), checkpoint.c_str());
        throw TrainingStopped(str("stopped by ", signal_name(signal)), signal);
      }
    }
  }
  progress.finish();
  report_padding_avoided(s, local_tokens, local_sequences);
  exchange_report.at_end(s);
  load_best_model(s);
  train_loss_sum = s.mean_over_ranks(train_loss_sum);
  const double runtime = run_watch.seconds();
  const int64_t trained_steps = s.global_step - resume.global_step;
  json train_results = {
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

  if (s.is_saver()) {  // the fine-tuned model, in the Trainer's layout
    save_hf_weights((out / "model.safetensors").string(), *s.layout, s.params.data());
    write_json(
        (out / "config.json").string(),
        fine_tuned_config(s.config_text, s.task.label_names, s.task.regression, s.task.task_name));
    s.tokenizer->save(c.output_dir);
  }
  if (s.is_writer()) write_json((out / "train_results.json").string(), train_results);
  if (!c.timeline_dir.empty()) {
    fs::create_directories(c.timeline_dir);
    s.timeline.write(
        (fs::path(c.timeline_dir) / str("timeline-rank", s.dist.rank(), ".json")).string());
  }
  // After the outputs are written: a failing probe costs nothing but its line.
  report_raised_peak(s, c.bf16, peak, peak_flops / 1e9, runtime);
  return train_results;
}

}  // namespace cpuft
