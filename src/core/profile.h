// Opt-in wall-clock profile of named regions, for "where does the step's time go".
//
// Off unless CPUFT_PROFILE=1 (then a region costs two clock reads). Slots are registered once per
// call site or object (a function-local static, a member), so a step allocates nothing. Regions are
// timed on the calling thread and never nest: a region opened inside another one (or inside an
// OpenMP parallel region) is not timed, so the regions of a report are disjoint and their shares
// add up. The math itself carries no markers: the kernel table, the linear plans and the attention
// functions time themselves (kernels.cc, matmul_plan.cc, attention.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace cpuft::profile {

bool enabled();
int register_slot(const std::string& name);  // once per call site or object; same name, same slot
void add(int slot, double seconds);
void reset();
// A table "region  seconds  calls  share", sorted by time; empty when disabled.
std::string report();

// True (and then false until the returned region is closed) when a region may open here: profiling
// is on, no region is open on this thread and the thread is not inside an OpenMP parallel region.
bool open_outermost();
void close_outermost();

class Scope {
 public:
  explicit Scope(int slot) : slot_(enabled() && open_outermost() ? slot : -1) {
    if (slot_ >= 0) start_ = std::chrono::steady_clock::now();
  }
  ~Scope() {
    if (slot_ < 0) return;
    add(slot_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    close_outermost();
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
