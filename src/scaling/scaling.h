// Scaling model: predicts the data-parallel step time on N hosts from one host's measured step.
//
// `cpuft bench --scaling` measures, in this process, one training step of a BERT-shaped model
// (forward, backward, clip + AdamW) and the moment each layer's gradients become final during
// backward (GradListener). It then replays the gradient all-reduce of every bucket of the real
// BucketPlan against those moments for N hosts and a link of S Gbit/s and prints step time,
// speedup, exposed communication and overlap ratio. docs/scaling.md explains how to run it.
//
// The model (its assumptions, each a simplification that makes the prediction optimistic or
// pessimistic in a known direction):
//   1. Data parallel, weak scaling: every host runs the same per-host batch, so forward, backward
//      and optimizer times do not depend on N; the global batch is N x batch. Speedup vs 1 host is
//      N x T(1) / T(N) (samples per second ratio); T(1) has no communication.
//   2. One rank per host, and the all-reduce is a ring: a bucket of b bytes costs
//        2 (N-1)/N x b / S  +  2 (N-1) x latency
//      (reduce-scatter then all-gather: 2(N-1) messages in sequence, each carrying b/N bytes).
//      S is the per-direction bandwidth the ring achieves (take the NIC's TCP goodput, not its
//      nominal rate); latency is per message (default 30 us, TCP on a datacenter LAN).
//   3. One link: buckets go over it one at a time, in BucketPlan order (the order MPI requires),
//      each starting as soon as all of its layers' gradients are final AND the previous bucket is
//      done. Progress is continuous (as with a NIC/progress thread); cpuft's GradReducer polls
//      between layers, so a real run can only be later than this (docs/distributed.md).
//   4. Communication takes no compute: backward runs at its measured speed while buckets fly.
//      True when the NIC and the kernel move the bytes; false for shared-memory ranks on one host.
//   5. The step ends when backward and the last bucket are both done; then clip + AdamW (every
//      host updates its full copy of the parameters, as DDP does). Averaging cost is ignored.
//   6. Stragglers, jitter and the data loader are not modelled.
//   7. What each bucket sends: ExchangeModel (fp32 or bf16 values; optionally the word table as
//      flags plus the union of the touched rows, bounded above).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/bucket_plan.h"
#include "parallel/exchange_forecast.h"  // simulate_overlap

namespace CLI {
class App;
}

namespace cpuft {

// What one host measured: phase times and, for each layer in backward order (classifier, pooler,
// L-1 .. 0, embeddings), the time from the start of backward until its gradients were final.
struct ComputeProfile {
  double forward_seconds = 0;
  double backward_seconds = 0;
  double optimizer_seconds = 0;  // clip + AdamW + zeroing the gradients
  std::vector<int> layers;
  std::vector<double> layer_ready_seconds;  // parallel to layers, non-decreasing
  double step_seconds() const { return forward_seconds + backward_seconds + optimizer_seconds; }
};

// The profile of a host `host_speed` times as fast as the measured one: every compute time divided
// by it (a uniform speed-up: the layers keep their shares of backward). This is how a measured step
// here stands for a bigger host's (docs/scaling.md, "The reference's table, modelled").
ComputeProfile scale_profile(const ComputeProfile& profile, double host_speed);

struct LinkModel {
  std::string label;            // "25 Gbit/s"
  double bytes_per_second = 0;  // S, per direction, achieved
  double latency_seconds = 0;   // per message
};
LinkModel link_from_gbit(double gbit_per_second, double latency_seconds);

// Ring all-reduce of `bytes` over `hosts` ranks (assumption 2); 0 when hosts == 1.
double ring_allreduce_seconds(double bytes, int hosts, const LinkModel& link);

// For each bucket of the plan, the ready time of its last layer (the profile must list every
// layer of the plan; cpuft::Error otherwise).
std::vector<double> bucket_ready_seconds(const ComputeProfile& profile, const BucketPlan& plan);

// What the gradient exchange sends (GradReducer): each value as fp32, or as bf16 under
// --gradient_exchange_dtype bfloat16; and, when sparse_rows_per_host > 0, the word table of the
// last bucket as cpuft sends it: one fp32 flag per row all-reduced, then the rows some host
// touched, packed. The union of the hosts' rows is taken as min(rows, N x sparse_rows_per_host):
// disjoint rows, an upper bound (hosts share their common tokens).
struct ExchangeModel {
  double bytes_per_value = 4;
  int64_t sparse_rows_per_host = 0;  // 0: the table goes whole
  int64_t table_rows = 0;            // V
  int64_t table_width = 0;           // D (E)
};

// Link time of bucket `floats` (the last bucket: the table's flags and rows, when sparse).
double bucket_comm_seconds(int64_t floats, bool last_bucket, int hosts, const LinkModel& link,
                           const ExchangeModel& exchange);

struct ScalingPoint {
  int hosts = 1;
  double step_seconds = 0;
  double speedup = 1;     // N x T(1) / T(N)
  double efficiency = 1;  // speedup / N
  double comm_seconds = 0;
  double exposed_seconds = 0;
  double overlap_ratio = 0;
};

ScalingPoint predict_scaling(const ComputeProfile& profile, const BucketPlan& plan, int hosts,
                             const LinkModel& link, const ExchangeModel& exchange = {});

// A whole fine-tuning run at each host count: `epochs` passes over `samples` examples. Each rank
// takes ceil(samples / hosts) of them per epoch (DistributedSampler's share) in batches of
// `per_host_batch`, the last one partial: ceil(ceil(samples / hosts) / batch) steps per epoch, as
// HF Trainer counts them. samples == 0: no run (the table has no time columns).
struct TrainingRun {
  int64_t samples = 0;
  double epochs = 3;
};
int64_t steps_per_epoch(int64_t samples, int hosts, int per_host_batch);
int64_t training_steps(const TrainingRun& run, int hosts, int per_host_batch);  // ceil(epochs x ..)

// The table printed by the bench, one line per host count, for one link; with a TrainingRun, the
// run's steps and its time (steps x predicted step: start-up, data and evaluation left out).
std::string format_scaling_table(const std::vector<ScalingPoint>& points, const LinkModel& link,
                                 int per_host_batch, const TrainingRun& run = {});

// `cpuft bench` flags and entry point (apps/cpuft.cc only wires them).
struct BenchOptions {
  bool scaling = false;
  std::string config_path;  // HF config.json of the model shape (required)
  std::string lengths_path = "bench/data/mrpc_train_lengths_cased.txt";
  int batch = 32;
  int steps = 3;
  int warmup = 1;
  std::vector<double> link_gbit = {25};
  std::vector<int> hosts = {1, 2, 4, 8, 16};
  double latency_us = 30;
  double bucket_cap_mb = 0;  // 0: two buckets per encoder layer (make_bucket_plan)
  int allreduce_reps = 3;
  bool bf16 = false;                       // bf16 encoder products, as cpuft train --bf16
  std::string exchange_dtype = "float32";  // --gradient_exchange_dtype
  int64_t sparse_rows = 0;  // word-table rows one host touches per step (0: dense exchange)
  std::vector<double> host_speed = {1};  // model hosts this many times as fast as measured
  TrainingRun run;                       // --train_samples, --epochs: whole-run times in the tables
};
// Sequence lengths, one positive integer per line (e.g. bench/data/mrpc_train_lengths_cased.txt).
std::vector<int> read_lengths(const std::string& path);

void add_bench_flags(CLI::App& app, BenchOptions& options);
// Runs the benchmark and prints its report on rank 0; returns the exit code.
int run_bench(const BenchOptions& options);

}  // namespace cpuft
