// Wall-clock and CPU timing, and the current time as text.
#pragma once

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace cpuft {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void reset() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

// CPU seconds this process's threads have run, all of them together (CLOCK_PROCESS_CPUTIME_ID).
inline double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// "1h02m03s", "4m05s", "6s" ("?" for a negative or absurd time, e.g. an ETA before any step).
inline std::string format_duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  const auto total = static_cast<long long>(seconds + 0.5);
  const long long h = total / 3600, m = total / 60 % 60, s = total % 60;
  char buffer[32];
  if (h > 0)
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm%02llds", h, m, s);
  else if (m > 0)
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", m, s);
  else
    std::snprintf(buffer, sizeof buffer, "%llds", s);
  return buffer;
}

// The current UTC time in a strftime format, e.g. "%Y-%m-%dT%H:%M:%SZ".
inline std::string utc_now(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[64];
  return std::string(text, std::strftime(text, sizeof text, format, &utc));
}

}  // namespace cpuft
