// bench_allreduce: gradient all-reduce speed, run under mpirun with 2+ ranks.
//
// Part 1, bandwidth: for each size, a plain blocking MPI_Allreduce(MPI_IN_PLACE) against cpuft's
// path (Communicator::all_reduce_sum_async + wait, what GradReducer issues per bucket) with the
// --backend communicator (mpi, or ccl: oneCCL, MPI only for its rendezvous), each first checked to
// sum exactly. Reports the median time and the algorithm bandwidth (bytes / time) per size.
// Part 2, overlap: a synthetic backward pass over a BERT-shaped bucket plan (fixed FMA work per
// layer, calibrated to --compute_ms on an idle rank), three ways: compute only; compute with
// GradReducer polling between layers (the real schedule); compute then every bucket at the end
// (no overlap). Reports step times, exposed communication and GradReducer's overlap ratio.
//
// Example (2 ranks on this machine; see docs/distributed.md for the figures):
//   export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=100000000000
//   mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1
//     -x GLIBC_TUNABLES build/release/bench/cpuft_bench_allreduce
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/check.h"
#include "core/stats.h"
#include "parallel/bucket_plan.h"
#include "parallel/communicator.h"
#include "parallel/grad_reducer.h"
#include "parallel/launcher.h"

namespace cpuft {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
// Fixed floating-point work that stays in L1 (the backward pass stand-in).
volatile float g_sink = 0;
void compute(int64_t iterations) {
  float a[16], b = 1.0000001f;
  for (int i = 0; i < 16; ++i) a[i] = static_cast<float>(i);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 16; ++i) a[i] = a[i] * b + 1e-7f;
  g_sink = g_sink + a[3];
}

int64_t calibrate(double seconds) {
  int64_t iterations = 1 << 16;
  for (;;) {
    const Clock::time_point start = Clock::now();
    compute(iterations);
    const double took = since(start);
    if (took > 0.05) return static_cast<int64_t>(static_cast<double>(iterations) * seconds / took);
    iterations *= 2;
  }
}

// Before a size is timed, both paths must sum: every rank puts rank + 1 in every element, and every
// element must then hold 1 + 2 + ... + world (exact in fp32 for any world size here).
void validate_sums(Communicator& comm, float* data, int64_t n) {
  const int world = comm.world_size();
  const float want = static_cast<float>(world) * static_cast<float>(world + 1) / 2;
  for (int path = 0; path < 2; ++path) {
    std::fill(data, data + n, static_cast<float>(comm.rank() + 1));
    if (path == 0)
      CPUFT_REQUIRE(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                                  MPI_COMM_WORLD) == MPI_SUCCESS,
                    "MPI_Allreduce failed");
    else
      comm.wait(comm.all_reduce_sum_async(data, n));
    const int64_t wrong = std::count_if(data, data + n, [&](float x) { return x != want; });
    CPUFT_REQUIRE(wrong == 0, "bench_allreduce: ", path == 0 ? "MPI_Allreduce" : "cpuft's bucket",
                  " path left ", wrong, " of ", n, " elements not equal to ", want,
                  "; nothing timed");
  }
}

void bandwidth(Communicator& comm, const std::vector<double>& sizes_mb, int reps) {
  if (comm.rank() == 0)
    std::printf("%10s %14s %12s %14s %12s  (bucket backend: %s)\n", "size_MB", "MPI_Allreduce",
                "GB/s", "cpuft_bucket", "GB/s", comm.name().c_str());
  for (double mb : sizes_mb) {
    const auto n = static_cast<int64_t>(mb * 1024 * 1024 / 4);
    AlignedBuffer<float> data(static_cast<size_t>(n));
    validate_sums(comm, data.data(), n);
    for (int64_t i = 0; i < n; ++i) data[static_cast<size_t>(i)] = 1.0f;
    std::vector<double> plain, ours;
    for (int rep = 0; rep < reps + 1; ++rep) {  // first rep: warm-up
      comm.barrier();
      Clock::time_point start = Clock::now();
      CPUFT_REQUIRE(MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(n), MPI_FLOAT,
                                  MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
                    "MPI_Allreduce failed");
      if (rep > 0) plain.push_back(since(start));
      comm.barrier();
      start = Clock::now();
      comm.wait(comm.all_reduce_sum_async(data.data(), n));
      if (rep > 0) ours.push_back(since(start));
    }
    const double bytes = static_cast<double>(n) * 4;
    const double tp = median(plain), to = median(ours);
    if (comm.rank() == 0)
      std::printf("%10.1f %12.2f ms %12.2f %12.2f ms %12.2f\n", mb, tp * 1e3, bytes / tp / 1e9,
                  to * 1e3, bytes / to / 1e9);
  }
}

void overlap(Communicator& comm, int layers, int64_t layer_floats, double compute_ms,
             double bucket_cap_mb, int reps) {
  // BERT-shaped: embeddings (3.4 layers), L layers, pooler (1/12 layer), classifier (tiny).
  std::vector<LayerRange> forward;
  int64_t cursor = 0;
  auto add = [&](int id, int64_t n) {
    forward.push_back({id, cursor, cursor + n});
    cursor += (n + 15) / 16 * 16;
  };
  add(-1, layer_floats * 34 / 10);
  for (int l = 0; l < layers; ++l) add(l, layer_floats);
  add(layers, layer_floats / 12);
  add(layers + 1, 1538);
  const std::vector<LayerRange> backward(forward.rbegin(), forward.rend());
  const BucketPlan plan(backward, static_cast<int64_t>(bucket_cap_mb * 1024 * 1024));
  AlignedBuffer<float> grads(static_cast<size_t>(cursor));
  GradReducer reducer(comm, plan, grads.data(), cursor);
  const int64_t work = calibrate(compute_ms / 1e3);
  std::vector<double> only, overlapped, sequential, exposed, ratio;
  for (int rep = 0; rep < reps + 1; ++rep) {
    comm.barrier();
    Clock::time_point start = Clock::now();
    for (size_t i = 0; i < backward.size(); ++i) compute(work);
    const double t_only = since(start);

    comm.barrier();
    start = Clock::now();
    for (const LayerRange& r : backward) {
      compute(work);
      reducer.layer_ready(r.layer);
    }
    reducer.finish();
    const double t_overlapped = since(start);

    comm.barrier();
    start = Clock::now();
    for (size_t i = 0; i < backward.size(); ++i) compute(work);
    std::vector<Communicator::Handle> handles;
    for (const Bucket& b : plan.buckets())
      handles.push_back(comm.all_reduce_sum_async(grads.data() + b.begin, b.floats()));
    for (Communicator::Handle h : handles) comm.wait(h);
    const double t_sequential = since(start);
    if (rep == 0) continue;
    only.push_back(t_only);
    overlapped.push_back(t_overlapped);
    sequential.push_back(t_sequential);
    exposed.push_back(reducer.last_stats().exposed_seconds);
    ratio.push_back(reducer.last_stats().overlap_ratio);
  }
  if (comm.rank() == 0) {
    std::printf("\noverlap: %d buckets, %.1f MB of gradients, %.1f ms of compute per layer\n",
                plan.num_buckets(), static_cast<double>(cursor) * 4 / 1048576, compute_ms);
    std::printf("  compute only               %8.1f ms\n", median(only) * 1e3);
    std::printf("  compute + polled buckets   %8.1f ms  (finish() %.1f ms, overlap ratio %.2f)\n",
                median(overlapped) * 1e3, median(exposed) * 1e3, median(ratio));
    std::printf("  compute, then all buckets  %8.1f ms\n", median(sequential) * 1e3);
  }
}

}  // namespace
}  // namespace cpuft

int main(int argc, char** argv) {
  CLI::App app{"gradient all-reduce bandwidth and overlap (run under mpirun)"};
  std::vector<double> sizes_mb = {1, 4, 25, 100};
  int reps = 5, layers = 12;
  int64_t layer_floats = 7087872;  // BERT-base encoder layer
  double compute_ms = 50, bucket_cap_mb = 25;
  std::string backend = "mpi";
  app.add_option("--backend", backend, "communicator for cpuft's path: mpi or ccl")
      ->capture_default_str();
  app.add_option("--sizes_mb", sizes_mb, "all-reduce sizes for part 1");
  app.add_option("--reps", reps, "timed repetitions (median reported)");
  app.add_option("--layers", layers, "encoder layers for part 2");
  app.add_option("--layer_floats", layer_floats, "floats per encoder layer for part 2");
  app.add_option("--compute_ms", compute_ms, "synthetic backward time per layer (0: skip part 2)");
  app.add_option("--bucket_cap_mb", bucket_cap_mb, "bucket cap for part 2");
  CLI11_PARSE(app, argc, argv);
  try {
    auto comm = cpuft::make_communicator(backend, cpuft::detect_launch_from_process_env());
    CPUFT_REQUIRE(comm->world_size() >= 2, "run under mpirun with 2 or more ranks");
    cpuft::bandwidth(*comm, sizes_mb, reps);
    if (compute_ms > 0)
      cpuft::overlap(*comm, layers, layer_floats, compute_ms, bucket_cap_mb, reps);
  } catch (const cpuft::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
