// StepTimeline: complete events ("X") for chrome://tracing / Perfetto, written as JSON.
//
// Times are microseconds since the timeline was created (steady clock). Storage is reserved up
// front; events beyond the capacity are counted and dropped, so recording never allocates inside
// a step. Not thread-safe: record from the thread that runs the step.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cpuft {

class StepTimeline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StepTimeline(int pid = 0, size_t capacity = 1 << 16);

  // Microseconds from the timeline's origin to `t`.
  double micros(Clock::time_point t) const;
  double now_micros() const { return micros(Clock::now()); }
  // `name` and `category` must outlive the timeline (string literals or long-lived strings).
  void add(const char* name, const char* category, double start_us, double end_us, int tid = 0,
           int64_t arg = -1);
  size_t size() const { return events_.size(); }
  int64_t dropped() const { return dropped_; }
  void clear();

  // {"traceEvents":[{"name":..,"cat":..,"ph":"X","ts":..,"dur":..,"pid":..,"tid":..,
  //  "args":{"v":..}}, ...],"displayTimeUnit":"ms"}
  std::string to_json() const;
  // Writes to_json() to `path` (cpuft::Error naming the path on failure).
  void write(const std::string& path) const;

 private:
  struct Event {
    const char* name;
    const char* category;
    double start_us, duration_us;
    int tid;
    int64_t arg;
  };
  Clock::time_point origin_;
  int pid_;
  size_t capacity_;
  std::vector<Event> events_;
  int64_t dropped_ = 0;
};

}  // namespace cpuft
