// Hands out consecutive 64-byte aligned slices of one big buffer of T; with a null base it only
// counts, so a model can size its arena before allocating it (activation_bytes).
#pragma once

#include <cstdint>

namespace cpuft {

template <typename T>
class ArenaCarver {
 public:
  static constexpr int64_t kAlign = 64 / sizeof(T);  // elements per 64 bytes
  explicit ArenaCarver(T* base) : base_(base) {}
  T* take(int64_t count) {
    T* p = base_ == nullptr ? nullptr : base_ + used_;
    used_ += (count + kAlign - 1) / kAlign * kAlign;
    return p;
  }
  int64_t used() const { return used_; }

 private:
  T* base_;
  int64_t used_ = 0;
};

}  // namespace cpuft
