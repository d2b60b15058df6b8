#include "scaling/scaling.h"

#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <memory>
#include <random>
#include <sstream>
#include <utility>

#include "core/buffer.h"
#include "core/check.h"
#include "core/fp_env.h"
#include "core/rng.h"
#include "core/stats.h"
#include "core/timer.h"
#include "kernels/kernels.h"
#include "model/grad_listener.h"
#include "model/param_layout.h"
#include "model/sequence_classifier.h"
#include "optim/adamw.h"
#include "parallel/communicator.h"
#include "parallel/launcher.h"
#include "step/train_step.h"

namespace cpuft {

LinkModel link_from_gbit(double gbit_per_second, double latency_seconds) {
  CPUFT_REQUIRE(gbit_per_second > 0, "--link_gbit must be positive, got ", gbit_per_second);
  CPUFT_REQUIRE(latency_seconds >= 0, "--latency_us must not be negative");
  char label[48];
  std::snprintf(label, sizeof label, "%g Gbit/s", gbit_per_second);
  return LinkModel{label, gbit_per_second * 1e9 / 8, latency_seconds};
}

double ring_allreduce_seconds(double bytes, int hosts, const LinkModel& link) {
  CPUFT_REQUIRE(hosts >= 1, "hosts must be at least 1, got ", hosts);
  if (hosts == 1) return 0;
  CPUFT_CHECK(link.bytes_per_second > 0);
  const double n = hosts;
  return 2 * (n - 1) / n * bytes / link.bytes_per_second + 2 * (n - 1) * link.latency_seconds;
}

std::vector<double> bucket_ready_seconds(const ComputeProfile& profile, const BucketPlan& plan) {
  CPUFT_CHECK(profile.layers.size() == profile.layer_ready_seconds.size());
  std::vector<double> ready;
  for (const Bucket& bucket : plan.buckets()) {
    double t = 0;
    for (int layer : bucket.layers) {
      const auto it = std::find(profile.layers.begin(), profile.layers.end(), layer);
      CPUFT_REQUIRE(it != profile.layers.end(), "no backward timing for layer ", layer);
      t = std::max(t,
                   profile.layer_ready_seconds[static_cast<size_t>(it - profile.layers.begin())]);
    }
    ready.push_back(t);
  }
  return ready;
}

ComputeProfile scale_profile(const ComputeProfile& profile, double host_speed) {
  CPUFT_REQUIRE(host_speed > 0 && std::isfinite(host_speed), "--host_speed must be positive, got ",
                host_speed);
  ComputeProfile scaled = profile;
  scaled.forward_seconds /= host_speed;
  scaled.backward_seconds /= host_speed;
  scaled.optimizer_seconds /= host_speed;
  for (double& t : scaled.layer_ready_seconds) t /= host_speed;
  return scaled;
}

double bucket_comm_seconds(int64_t floats, bool last_bucket, int hosts, const LinkModel& link,
                           const ExchangeModel& exchange) {
  const double values = static_cast<double>(floats);
  if (!last_bucket || exchange.sparse_rows_per_host <= 0)
    return ring_allreduce_seconds(values * exchange.bytes_per_value, hosts, link);
  const double rows = static_cast<double>(exchange.table_rows);
  const double width = static_cast<double>(exchange.table_width);
  CPUFT_CHECK(rows * width <= values, "the word table does not fit in the last bucket");
  const double union_rows = std::min(
      rows, static_cast<double>(hosts) * static_cast<double>(exchange.sparse_rows_per_host));
  // The rest of the bucket, the fp32 row flags, then the packed rows: three all-reduces in turn.
  return ring_allreduce_seconds((values - rows * width) * exchange.bytes_per_value, hosts, link) +
         ring_allreduce_seconds(rows * sizeof(float), hosts, link) +
         ring_allreduce_seconds(union_rows * width * exchange.bytes_per_value, hosts, link);
}

ScalingPoint predict_scaling(const ComputeProfile& profile, const BucketPlan& plan, int hosts,
                             const LinkModel& link, const ExchangeModel& exchange) {
  const std::vector<double> ready = bucket_ready_seconds(profile, plan);
  std::vector<BucketTask> tasks;
  for (size_t b = 0; b < ready.size(); ++b) {
    const double comm = bucket_comm_seconds(plan.buckets()[b].floats(), b + 1 == ready.size(),
                                            hosts, link, exchange);
    // A bucket cannot be ready after backward ends (guards rounding in measured profiles).
    tasks.push_back({std::min(ready[b], profile.backward_seconds), comm});
  }
  const OverlapResult r = simulate_overlap(profile.backward_seconds, tasks);
  ScalingPoint p;
  p.hosts = hosts;
  p.step_seconds = profile.forward_seconds +
                   std::max(profile.backward_seconds, r.comm_end_seconds) +
                   profile.optimizer_seconds;
  p.speedup = p.step_seconds > 0 ? hosts * profile.step_seconds() / p.step_seconds : 0;
  p.efficiency = p.speedup / hosts;
  p.comm_seconds = r.comm_seconds;
  p.exposed_seconds = r.exposed_seconds;
  p.overlap_ratio = r.overlap_ratio;
  return p;
}

int64_t steps_per_epoch(int64_t samples, int hosts, int per_host_batch) {
  CPUFT_REQUIRE(samples >= 0 && hosts >= 1 && per_host_batch >= 1,
                "a training run needs samples >= 0, hosts >= 1 and a batch >= 1");
  const int64_t per_rank = (samples + hosts - 1) / hosts;
  return (per_rank + per_host_batch - 1) / per_host_batch;
}

int64_t training_steps(const TrainingRun& run, int hosts, int per_host_batch) {
  CPUFT_REQUIRE(run.epochs > 0 && std::isfinite(run.epochs), "--epochs must be positive, got ",
                run.epochs);
  return static_cast<int64_t>(std::ceil(
      run.epochs * static_cast<double>(steps_per_epoch(run.samples, hosts, per_host_batch))));
}

std::string format_scaling_table(const std::vector<ScalingPoint>& points, const LinkModel& link,
                                 int per_host_batch, const TrainingRun& run) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "link %s, %.0f us per message, ring all-reduce:\n",
                link.label.c_str(), link.latency_seconds * 1e6);
  out << line;
  std::snprintf(line, sizeof line, "%6s %13s %9s %8s %10s %10s %12s %8s", "hosts", "global_batch",
                "step_s", "speedup", "efficiency", "comm_s", "exposed_s", "overlap");
  out << line;
  if (run.samples > 0) out << str(" ", std::setw(8), "steps", std::setw(11), "train_time");
  out << "\n";
  for (const ScalingPoint& p : points) {
    std::snprintf(line, sizeof line, "%6d %13d %9.3f %8.2f %10.2f %10.3f %12.3f %8.2f", p.hosts,
                  p.hosts * per_host_batch, p.step_seconds, p.speedup, p.efficiency, p.comm_seconds,
                  p.exposed_seconds, p.overlap_ratio);
    out << line;
    if (run.samples > 0) {
      const int64_t steps = training_steps(run, p.hosts, per_host_batch);
      out << str(" ", std::setw(8), steps, std::setw(11),
                 format_duration(static_cast<double>(steps) * p.step_seconds));
    }
    out << "\n";
  }
  if (run.samples > 0)
    out << str("train_time: ", run.epochs, " epochs of ", run.samples,
               " samples, steps x step_s (start-up, data and evaluation left out)\n");
  return out.str();
}

void add_bench_flags(CLI::App& app, BenchOptions& o) {
  app.add_flag("--scaling", o.scaling, "Measure one step and predict data-parallel scaling");
  app.add_option("--config", o.config_path, "HF config.json of the model shape (required)");
  app.add_option("--lengths", o.lengths_path, "Sequence lengths, one per line")
      ->capture_default_str();
  app.add_option("--batch", o.batch, "Sequences per host per step")->capture_default_str();
  app.add_option("--steps", o.steps, "Timed steps (median reported)")->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed steps first")->capture_default_str();
  app.add_option("--link_gbit", o.link_gbit, "Link speeds in Gbit/s (repeat or comma list)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--hosts", o.hosts, "Host counts, comma list")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--latency_us", o.latency_us, "Per-message latency of the ring, microseconds")
      ->capture_default_str();
  app.add_option("--gradient_exchange_dtype", o.exchange_dtype,
                 "Gradient values on the wire, as cpuft train's flag: float32 or bfloat16")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  app.add_option("--sparse_rows", o.sparse_rows,
                 "Word-table rows one host touches per step: model the table's sparse exchange "
                 "(0: the whole table)")
      ->capture_default_str();
  app.add_option("--bucket_cap_mb", o.bucket_cap_mb,
                 "Gradient bucket cap in MB, as cpuft train (0: two buckets per encoder layer)")
      ->capture_default_str();
  app.add_option("--allreduce_reps", o.allreduce_reps, "All-reduce repetitions (2 ranks only)")
      ->capture_default_str();
  app.add_flag("--bf16", o.bf16, "Time the step with bf16 encoder products (as train --bf16)");
  app.add_option("--host_speed", o.host_speed,
                 "Model hosts this many times as fast as the measured step (comma list)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--train_samples", o.run.samples,
                 "Training examples of a whole run: add its steps and time to the tables");
  app.add_option("--epochs", o.run.epochs, "Epochs of that run")->capture_default_str();
}

namespace {

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0, five = 0;
  if (!(in >> one >> five)) return "unknown";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f (1 min), %.2f (5 min)", one, five);
  return text;
}

// When each layer's gradients became final during backward: the step's listener and observer
// (storage reserved up front, so the step stays allocation-free).
class ReadyClock final : public GradListener, public StepObserver {
 public:
  using Clock = PhaseTime::Clock;
  explicit ReadyClock(size_t layers) { ready.reserve(layers); }
  void on_layer_grads_ready(int layer) override { ready.emplace_back(layer, Clock::now()); }
  void on_phase(const PhaseTime& time) override {
    if (time.phase == StepPhase::backward) backward_begin = time.begin;
  }
  std::vector<std::pair<int, Clock::time_point>> ready;  // (layer, when), in backward order
  Clock::time_point backward_begin;
};

// (a) + (b): medians over `steps` timed steps of a random-weight model on MRPC-like batches.
ComputeProfile measure_compute(const BenchOptions& o, const ModelConfig& config,
                               const ParamLayout& layout) {
  AlignedBuffer<float> params(static_cast<size_t>(layout.total_floats()));
  AlignedBuffer<float> grads(static_cast<size_t>(layout.total_floats()));
  init_random_weights(layout, params.data(), 0.02f, 7);
  const ModelParams p = bind_params(layout, config, params.data());

  const std::vector<int> lengths = read_lengths(o.lengths_path);
  const int64_t longest = std::min<int64_t>(*std::max_element(lengths.begin(), lengths.end()),
                                            config.max_sequence_length());
  std::mt19937 rng(1234);
  std::vector<Batch> batches(static_cast<size_t>(o.warmup + o.steps));
  int64_t max_tokens = 0;
  for (Batch& batch : batches) {
    for (int s = 0; s < o.batch; ++s) {
      const auto T = static_cast<size_t>(
          std::min<int64_t>(lengths[rng() % lengths.size()], config.max_sequence_length()));
      std::vector<int32_t> ids(T), types(T, 0);
      for (int32_t& id : ids) id = static_cast<int32_t>(rng() % config.vocab_size);
      batch.add_sequence(ids, types);
      batch.labels.push_back(static_cast<int32_t>(rng() % 2));
    }
    max_tokens = std::max(max_tokens, batch.num_tokens());
  }
  if (o.bf16) require_bf16_matmul("--bf16");
  SequenceClassifier model(config, ModelLimits{max_tokens, o.batch, longest},
                           o.bf16 ? MatmulPrecision::bf16 : MatmulPrecision::f32);
  model.refresh_bf16_weights(p);
  AdamW adamw(layout, AdamWOptions{0.9, 0.999, 1e-8, 0.01});
  TrainStep train_step(model, layout, params, grads, adamw, StepOptions{42, 1, 1.0});
  ReadyClock clock(static_cast<size_t>(classifier_layer(config) + 2));  // layers -1 .. L + 1
  train_step.set_listener(&clock);
  train_step.set_observer(&clock);

  std::vector<double> forward, backward, optimizer;
  std::vector<std::vector<double>> ready;  // per step, per layer
  std::vector<int> layers;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    clock.ready.clear();
    const StepResult r = train_step.run(step, {&batches[static_cast<size_t>(step)], 1}, 2e-5);
    if (step < o.warmup) continue;
    std::vector<int> step_layers;
    std::vector<double> seconds;  // since backward began
    for (const auto& [layer, at] : clock.ready) {
      step_layers.push_back(layer);
      seconds.push_back(std::chrono::duration<double>(at - clock.backward_begin).count());
    }
    CPUFT_CHECK(layers.empty() || layers == step_layers);
    layers = step_layers;
    forward.push_back(r.forward_seconds);
    backward.push_back(r.backward_seconds);
    optimizer.push_back(r.optimizer_seconds);
    ready.push_back(seconds);
  }
  ComputeProfile profile;
  profile.forward_seconds = median(forward);
  profile.backward_seconds = median(backward);
  profile.optimizer_seconds = median(optimizer);
  profile.layers = layers;
  double running = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    std::vector<double> at;
    for (const std::vector<double>& r : ready) at.push_back(r[l]);
    running = std::max(running, std::min(median(at), profile.backward_seconds));
    profile.layer_ready_seconds.push_back(running);  // medians per layer, kept non-decreasing
  }
  return profile;
}

// (c): all-reduce of every distinct bucket size between the 2 ranks of this job. Returns the
// algorithm bandwidth (bytes / time) of the largest bucket, which for a ring of 2 is the link
// speed S of assumption 2 with the latency folded in.
double measure_two_rank_bandwidth(Communicator& comm, const BucketPlan& plan, int reps,
                                  std::string& report) {
  std::vector<int64_t> sizes;
  for (const Bucket& b : plan.buckets()) sizes.push_back(b.floats());
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() > 3) sizes = {sizes.front(), sizes[sizes.size() / 2], sizes.back()};
  AlignedBuffer<float> data(static_cast<size_t>(sizes.back()));
  for (size_t i = 0; i < data.size(); ++i) data[i] = 1.0f;
  double bandwidth = 0;
  char line[160];
  for (int64_t n : sizes) {
    std::vector<double> times;
    for (int rep = 0; rep < reps + 1; ++rep) {  // first: warm-up
      comm.barrier();
      Stopwatch watch;
      comm.wait(comm.all_reduce_sum_async(data.data(), n));
      if (rep > 0) times.push_back(watch.seconds());
    }
    const double t = median(times), bytes = static_cast<double>(n) * sizeof(float);
    bandwidth = bytes / t;
    std::snprintf(line, sizeof line, "  %9.2f MB  %9.2f ms  %7.2f GB/s  (%.1f Gbit/s)\n",
                  bytes / 1048576, t * 1e3, bandwidth / 1e9, bandwidth * 8 / 1e9);
    report += line;
  }
  return bandwidth;
}

}  // namespace

std::vector<int> read_lengths(const std::string& path) {
  std::ifstream in(path);
  CPUFT_REQUIRE(in.good(), path, ": cannot open");
  std::vector<int> lengths;
  for (int n; in >> n;) {
    CPUFT_REQUIRE(n > 0, path, ": length ", n, " is not positive");
    lengths.push_back(n);
  }
  CPUFT_REQUIRE(!lengths.empty(), path, ": no lengths");
  return lengths;
}

int run_bench(const BenchOptions& o) {
  CPUFT_REQUIRE(o.scaling, "cpuft bench: choose a benchmark (--scaling)");
  CPUFT_REQUIRE(!o.config_path.empty(), "cpuft bench --scaling: --config is required");
  CPUFT_REQUIRE(o.batch >= 1 && o.steps >= 1 && o.warmup >= 0, "--batch and --steps must be >= 1");
  CPUFT_REQUIRE(!o.hosts.empty() && !o.link_gbit.empty(), "--hosts and --link_gbit need values");
  for (int h : o.hosts) CPUFT_REQUIRE(h >= 1, "--hosts: ", h, " is not a host count");
  enable_flush_denormals_all_threads();

  ModelConfig config = load_model_config(o.config_path);
  config.num_labels = 2;
  const ParamLayout layout(config);
  const BucketPlan plan = make_bucket_plan(layout, o.bucket_cap_mb);

  std::vector<LinkModel> links;
  for (double gbit : o.link_gbit) links.push_back(link_from_gbit(gbit, o.latency_us * 1e-6));

  // (c) only under a launcher with exactly 2 ranks; then rank 1 leaves and rank 0 measures alone.
  const LaunchInfo launch = detect_launch_from_process_env();
  std::string allreduce_report;
  if (launch.world_size > 1) {
    CPUFT_REQUIRE(launch.world_size == 2, "cpuft bench --scaling: run with 1 rank or 2 (got ",
                  launch.world_size, ")");
    double bandwidth = 0;
    int rank = 0;
    {
      std::unique_ptr<Communicator> comm = make_communicator("mpi", launch);
      rank = comm->rank();
      bandwidth = measure_two_rank_bandwidth(*comm, plan, o.allreduce_reps, allreduce_report);
      comm->barrier();
    }  // MPI_Finalize on both ranks: rank 0's compute measurement runs alone
    if (rank != 0) return 0;
    char label[80];
    std::snprintf(label, sizeof label, "measured between 2 local ranks: %.1f Gbit/s",
                  bandwidth * 8 / 1e9);
    links.push_back(LinkModel{label, bandwidth, 0});  // latency folded into the bandwidth
  }

  CPUFT_REQUIRE(o.sparse_rows >= 0, "--sparse_rows must be >= 0");
  ExchangeModel exchange;
  exchange.bytes_per_value = o.exchange_dtype == "bfloat16" ? 2 : 4;
  if (o.sparse_rows > 0) {
    const GradReducer::SparseRows table = word_embedding_rows(layout);
    exchange.sparse_rows_per_host = std::min(o.sparse_rows, table.rows);
    exchange.table_rows = table.rows;
    exchange.table_width = table.width;
  }

  CPUFT_REQUIRE(o.run.samples >= 0, "--train_samples must be >= 0");
  if (o.run.samples > 0) training_steps(o.run, 1, o.batch);  // checks --epochs before measuring
  for (double speed : o.host_speed) scale_profile(ComputeProfile{}, speed);  // checks the values
  const ComputeProfile profile = measure_compute(o, config, layout);
  const std::vector<double> ready = bucket_ready_seconds(profile, plan);

  std::printf("cpuft bench --scaling\n");
  std::printf("model: %s (L=%lld D=%lld F=%lld), %.1f M parameters, batch %d per host, %s, %s\n",
              o.config_path.c_str(), static_cast<long long>(config.num_hidden_layers),
              static_cast<long long>(config.hidden_size),
              static_cast<long long>(config.intermediate_size),
              static_cast<double>(layout.total_floats()) / 1e6, o.batch, o.lengths_path.c_str(),
              o.bf16 ? "bf16 products" : "fp32");
  std::printf("machine: %d OpenMP threads, kernels %s, load average %s\n", omp_get_max_threads(),
              kernels().isa, load_average().c_str());
  std::printf(
      "\n(a) one step, median of %d: %.3f s = forward %.3f + backward %.3f + optimizer %.3f\n",
      o.steps, profile.step_seconds(), profile.forward_seconds, profile.backward_seconds,
      profile.optimizer_seconds);
  std::printf("\n(b) backward by layer (ready = gradients final, since backward start):\n");
  std::printf("%8s %10s %10s %14s\n", "layer", "layer_ms", "ready_ms", "remaining_ms");
  double previous = 0;
  for (size_t l = 0; l < profile.layers.size(); ++l) {
    const double t = profile.layer_ready_seconds[l];
    std::printf("%8s %10.1f %10.1f %14.1f\n", grad_part_name(profile.layers[l]).c_str(),
                (t - previous) * 1e3, t * 1e3, (profile.backward_seconds - t) * 1e3);
    previous = t;
  }
  std::printf("\nbuckets (%s, launch order) and the backward time left to hide each:\n",
              o.bucket_cap_mb > 0 ? str("cap ", o.bucket_cap_mb, " MB").c_str()
                                  : "two per encoder layer: its FFN block, the rest");
  std::printf("%7s %10s %10s %14s  layers\n", "bucket", "MB", "ready_ms", "remaining_ms");
  for (size_t b = 0; b < plan.buckets().size(); ++b) {
    const Bucket& bucket = plan.buckets()[b];
    std::string names;
    for (int layer : bucket.layers) names += (names.empty() ? "" : ",") + grad_part_name(layer);
    std::printf("%7zu %10.2f %10.1f %14.1f  %s\n", b,
                static_cast<double>(bucket.floats()) * sizeof(float) / 1048576, ready[b] * 1e3,
                (profile.backward_seconds - std::min(ready[b], profile.backward_seconds)) * 1e3,
                names.c_str());
  }
  if (!allreduce_report.empty())
    std::printf("\n(c) all-reduce between the 2 ranks of this job (shared memory, ring):\n%s",
                allreduce_report.c_str());
  else
    std::printf("\n(c) not under mpirun with 2 ranks: network modelled from --link_gbit only\n");

  std::printf("\nprediction (model and assumptions: docs/scaling.md); speedup = N x T(1) / T(N)\n");
  std::printf("exchange: %s values; word table %s\n", o.exchange_dtype.c_str(),
              exchange.sparse_rows_per_host > 0
                  ? str("sparse, ", exchange.sparse_rows_per_host, " of ", exchange.table_rows,
                        " rows per host (union bounded by N x that)")
                        .c_str()
                  : "whole");
  for (double speed : o.host_speed) {
    const ComputeProfile host = scale_profile(profile, speed);
    if (speed != 1)
      std::printf(
          "\nhosts %g x as fast as this measurement (--host_speed): one step %.3f s = forward %.3f "
          "+ backward %.3f + optimizer %.3f\n",
          speed, host.step_seconds(), host.forward_seconds, host.backward_seconds,
          host.optimizer_seconds);
    for (const LinkModel& link : links) {
      std::vector<ScalingPoint> points;
      for (int h : o.hosts) points.push_back(predict_scaling(host, plan, h, link, exchange));
      std::printf("\n%s", format_scaling_table(points, link, o.batch, o.run).c_str());
    }
  }
  return 0;
}

}  // namespace cpuft
