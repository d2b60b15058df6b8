// Wall-clock timing, and the current time as text.
#pragma once

#include <chrono>
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

// The current UTC time in a strftime format, e.g. "%Y-%m-%dT%H:%M:%SZ".
inline std::string utc_now(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[64];
  return std::string(text, std::strftime(text, sizeof text, format, &utc));
}

}  // namespace cpuft
