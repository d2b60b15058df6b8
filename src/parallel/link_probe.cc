#include "parallel/link_probe.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "core/timer.h"

namespace cpuft {

namespace {

constexpr int64_t kSmallValues = 1024;

// Median of `reps` timed all-reduces of `n` values, after one untimed one.
template <typename T>
double median_all_reduce_seconds(Communicator& comm, std::vector<T>& values, int reps) {
  auto one = [&] {
    Communicator::Handle handle;
    if constexpr (std::is_same_v<T, bf16>)
      handle = comm.all_reduce_sum_bf16_async(values.data(), static_cast<int64_t>(values.size()));
    else
      handle = comm.all_reduce_sum_async(values.data(), static_cast<int64_t>(values.size()));
    comm.wait(handle);
  };
  one();
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    // Zeros stay zeros (no overflow, the same bytes every time).
    std::fill(values.begin(), values.end(), T{});
    const Stopwatch watch;
    one();
    seconds.push_back(watch.seconds());
  }
  std::nth_element(seconds.begin(), seconds.begin() + reps / 2, seconds.end());
  return seconds[static_cast<size_t>(reps / 2)];
}

template <typename T>
void probe_points(Communicator& comm, int64_t large_values, int reps, LinkProbe& probe) {
  std::vector<T> values(static_cast<size_t>(kSmallValues));
  probe.small_seconds = median_all_reduce_seconds(comm, values, reps);
  values.assign(static_cast<size_t>(large_values), T{});
  probe.large_seconds = median_all_reduce_seconds(comm, values, reps);
  probe.small_bytes = kSmallValues * static_cast<int64_t>(sizeof(T));
  probe.large_bytes = large_values * static_cast<int64_t>(sizeof(T));
}

}  // namespace

double LinkProbe::seconds(double bytes) const {
  const double rate = bytes_per_second();
  if (rate <= 0) return 0;
  return std::max(small_seconds, bytes / rate);
}

double LinkProbe::bytes_per_second() const {
  if (world_size <= 1 || large_seconds <= 0) return 0;
  return static_cast<double>(large_bytes) / large_seconds;
}

LinkProbe probe_link(Communicator& comm, int64_t large_values, bool bf16, int reps) {
  CPUFT_CHECK(reps >= 1, "probe_link: reps ", reps);
  CPUFT_CHECK(large_values >= 2 * kSmallValues, "probe_link: ", large_values,
              " values for the large all-reduce (at least ", 2 * kSmallValues, ")");
  LinkProbe probe;
  probe.world_size = comm.world_size();
  probe.bf16 = bf16;
  if (comm.world_size() == 1) return probe;
  if (bf16)
    probe_points<cpuft::bf16>(comm, large_values, reps, probe);
  else
    probe_points<float>(comm, large_values, reps, probe);
  return probe;
}

}  // namespace cpuft
