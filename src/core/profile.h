// Opt-in wall-clock profile of named regions, for "where does the step's time go".
//
// Off unless CPUFT_PROFILE=1 (then a region costs two clock reads). Slots are registered once per
// call site (a function-local static), so a step allocates nothing. Regions are timed on the
// calling thread; they are meant for the sequential structure of a step, not inside parallel loops.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace cpuft::profile {

bool enabled();
int register_slot(const char* name);  // once per call site
void add(int slot, double seconds);
void reset();
// A table "region  seconds  calls  share", sorted by time; empty when disabled.
std::string report();

class Scope {
 public:
  explicit Scope(int slot) : slot_(enabled() ? slot : -1) {
    if (slot_ >= 0) start_ = std::chrono::steady_clock::now();
  }
  ~Scope() {
    if (slot_ >= 0)
      add(slot_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  int slot_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace cpuft::profile

#define CPUFT_PROFILE_CONCAT2(a, b) a##b
#define CPUFT_PROFILE_CONCAT(a, b) CPUFT_PROFILE_CONCAT2(a, b)
// CPUFT_PROFILE("ffn_in.fwd"); times the rest of the enclosing block.
#define CPUFT_PROFILE(name)                                      \
  static const int CPUFT_PROFILE_CONCAT(cpuft_slot_, __LINE__) = \
      ::cpuft::profile::register_slot(name);                     \
  ::cpuft::profile::Scope CPUFT_PROFILE_CONCAT(                  \
      cpuft_scope_, __LINE__)(CPUFT_PROFILE_CONCAT(cpuft_slot_, __LINE__))

// CPUFT_TIMED("qkv.fwd", plans.qkv.forward(...)); runs one statement inside a profiled region.
#define CPUFT_TIMED(name, ...) \
  do {                         \
    CPUFT_PROFILE(name);       \
    __VA_ARGS__;               \
  } while (0)
