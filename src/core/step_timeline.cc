#include "core/step_timeline.h"

#include <cstdio>
#include <fstream>

#include "core/check.h"

namespace cpuft {

namespace {

void append_json_string(std::string& out, const char* text) {
  out += '"';
  for (const char* c = text; *c; ++c) {
    const auto u = static_cast<unsigned char>(*c);
    if (*c == '"' || *c == '\\') {
      out += '\\';
      out += *c;
    } else if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      out += escaped;
    } else {
      out += *c;
    }
  }
  out += '"';
}

}  // namespace

StepTimeline::StepTimeline(int pid, size_t capacity)
    : origin_(Clock::now()), pid_(pid), capacity_(capacity) {
  events_.reserve(capacity);
}

double StepTimeline::micros(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

void StepTimeline::add(const char* name, const char* category, double start_us, double end_us,
                       int tid, int64_t arg) {
  if (events_.size() >= capacity_) {
    ++dropped_;
    return;
  }
  events_.push_back(Event{name, category, start_us, end_us - start_us, tid, arg});
}

void StepTimeline::clear() {
  events_.clear();
  dropped_ = 0;
}

std::string StepTimeline::to_json() const {
  std::string out = "{\"traceEvents\":[";
  char numbers[160];
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    out += i ? ",\n{\"name\":" : "\n{\"name\":";
    append_json_string(out, e.name);
    out += ",\"cat\":";
    append_json_string(out, e.category);
    std::snprintf(numbers, sizeof numbers,
                  ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d", e.start_us,
                  e.duration_us, pid_, e.tid);
    out += numbers;
    if (e.arg >= 0) {
      std::snprintf(numbers, sizeof numbers, ",\"args\":{\"v\":%lld}",
                    static_cast<long long>(e.arg));
      out += numbers;
    }
    out += '}';
  }
  out += "\n],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

void StepTimeline::write(const std::string& path) const {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  CPUFT_REQUIRE(file.good(), "cannot write the timeline to ", path);
  const std::string json = to_json();
  file.write(json.data(), static_cast<std::streamsize>(json.size()));
  file.close();
  CPUFT_REQUIRE(!file.fail(), "cannot write the timeline to ", path);
}

}  // namespace cpuft
