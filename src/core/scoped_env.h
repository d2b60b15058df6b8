// ScopedEnv: sets (or, with nullopt, unsets) an environment variable for a scope and restores what
// was there, or its absence, at the end of it. For tests that steer code read from the
// environment (CPUFT_PEAK_CACHE, HF_HOME, CCL_WORKER_OFFLOAD, ...).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace cpuft {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace cpuft
