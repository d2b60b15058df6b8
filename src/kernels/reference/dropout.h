// Scalar reference: inverted dropout with a counter-based mask, drawn again by the backward or, for
// attention's probabilities, recorded in their sign bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/rng.h"

namespace cpuft::reference {

// Scale 1/(1-p) rounded once from double, as torch computes it, then applied by multiplication.
inline double dropout_scale(float p) {
  return 1.0 / (1.0 - static_cast<double>(p));
}

// y[i] = keep(i) ? x[i] * (1/(1-p)) : 0, keep(i) = uniform_at(key, i) >= p. y may alias x.
// p == 0 copies x without touching the RNG.
template <typename T>
void dropout_forward(T* y, const T* x, float p, RngKey key, int64_t n) {
  if (p == 0.0f) {
    if (y != x)
      for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    return;
  }
  const T scale = static_cast<T>(dropout_scale(p));
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = uniform_at(key, static_cast<uint64_t>(i)) >= p;
    y[i] = keep ? x[i] * scale : T(0);
  }
}

// The same mask and scale applied to d_y.
template <typename T>
void dropout_backward(T* d_x, const T* d_y, float p, RngKey key, int64_t n) {
  dropout_forward(d_x, d_y, p, key, n);
}

// The same scale applied to d_y where the forward's output `kept` is nonzero, without drawing the
// mask again: d_x[i] = kept[i] != 0 ? d_y[i] * (1/(1-p)) : 0. Equals dropout_backward wherever the
// forward's input was nonzero. d_x may alias d_y; p == 0 copies d_y.
template <typename T>
void dropout_backward_kept(T* d_x, const T* d_y, const T* kept, float p, int64_t n) {
  if (p == 0.0f) {
    if (d_x != d_y)
      for (int64_t i = 0; i < n; ++i) d_x[i] = d_y[i];
    return;
  }
  const T scale = static_cast<T>(dropout_scale(p));
  for (int64_t i = 0; i < n; ++i) d_x[i] = kept[i] != T(0) ? d_y[i] * scale : T(0);
}

// dropout_forward that also records its mask in x, for a backward that does not draw it again
// (float only): y as dropout_forward; then x[i] = keep(i) ? |x[i]| : -|x[i]|, the sign bit set
// exactly where the element was dropped. For x >= 0 (probabilities) |x| is x, so
// dropout_unmark gives back x and y. y may not alias x. p == 0 copies x and marks nothing.
inline void dropout_forward_marking(float* y, float* x, float p, RngKey key, int64_t n) {
  if (p == 0.0f) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i];
    return;
  }
  const float scale = static_cast<float>(dropout_scale(p));
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = uniform_at(key, static_cast<uint64_t>(i)) >= p;
    y[i] = keep ? x[i] * scale : 0.0f;
    x[i] = keep ? std::fabs(x[i]) : -std::fabs(x[i]);
  }
}

// From x as dropout_forward_marking left it: x_abs[i] = |x[i]|, and y[i] = 0 where the sign bit of
// x[i] is set (dropped), else |x[i]| * (1/(1-p)): for x >= 0 before the marking, both outputs of
// the marking forward, bit for bit. None of the three may alias.
inline void dropout_unmark(float* y, float* x_abs, const float* marked, float p, int64_t n) {
  const float scale = static_cast<float>(dropout_scale(p));
  for (int64_t i = 0; i < n; ++i) {
    x_abs[i] = std::fabs(marked[i]);
    y[i] = std::signbit(marked[i]) ? 0.0f : x_abs[i] * scale;
  }
}

}  // namespace cpuft::reference
