// AVX-512 losses of the two heads. N is the number of sequences (tens to thousands) and K the
// number of labels (2-3 for GLUE), so these are small; rows go to threads only when N * K is big.

#include "kernels/avx512/avx512.h"
#include "kernels/avx512/vmath.h"

namespace cpuft::avx512 {

// loss = mean_i((1 - eps)(lse_i - z_i[label_i]) + eps mean_k(lse_i - z_ik));
// d_logits = (softmax(z) - ((1 - eps) onehot + eps / K)) * (scale / N) (reference/losses.h).
// Per-row losses go to a scratch array summed in row order (deterministic), in double; the
// smoothing term is the reference's scalar loop (K is a handful of labels).
float cross_entropy_forward_backward(float* d_logits, const float* logits, const int32_t* labels,
                                     float loss_scale, int64_t N, int64_t K,
                                     float label_smoothing) {
  // Validated before any parallel region: exceptions must not leave an OpenMP region.
  for (int64_t i = 0; i < N; ++i)
    if (labels[i] < 0 || labels[i] >= K) throw_label_out_of_range(i, labels[i], K);
  const float g = loss_scale / static_cast<float>(N);
  const float off = label_smoothing / static_cast<float>(K);  // every other class's target
  const float on = (1.0f - label_smoothing) + off;            // the label's target
  Scratch<double> row_loss(N);
#pragma omp parallel for schedule(static) if (N * K >= kParallelMinElements)
  for (int64_t i = 0; i < N; ++i) {
    const float* z = logits + i * K;
    float* d = d_logits + i * K;
    const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
    __m512 mx = neg_inf;
    for (int64_t k = 0; k < K; k += kLanes)
      mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(neg_inf, lanes_mask(K - k), z + k));
    const float zmax = _mm512_reduce_max_ps(mx);
    const __m512 vmax = _mm512_set1_ps(zmax);
    __m512 sum = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k += kLanes) {
      const __mmask16 m = lanes_mask(K - k);
      const __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, z + k), vmax));
      sum = _mm512_mask_add_ps(sum, m, sum, e);
      _mm512_mask_storeu_ps(d + k, m, e);
    }
    const float total = _mm512_reduce_add_ps(sum);
    const float lse = zmax + __builtin_logf(total);
    double row = static_cast<double>(lse - z[labels[i]]);
    if (label_smoothing != 0.0f) {
      double smooth = 0;
      for (int64_t k = 0; k < K; ++k) smooth += static_cast<double>(lse - z[k]);
      const double e = static_cast<double>(label_smoothing);
      row = (1.0 - e) * row + e * (smooth / static_cast<double>(K));
    }
    row_loss.data[i] = row;
    const __m512 inv = _mm512_set1_ps(1.0f / total);
    const __m512 vg = _mm512_set1_ps(g);
    const __m512 v_off = _mm512_set1_ps(off);
    const __m512 v_on = _mm512_set1_ps(on);
    for (int64_t k = 0; k < K; k += kLanes) {
      const __mmask16 m = lanes_mask(K - k);
      const __m512 p = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, d + k), inv);
      __m512 target = v_off;
      const int64_t label_lane = labels[i] - k;
      if (label_lane >= 0 && label_lane < kLanes)
        target = _mm512_mask_mov_ps(target, static_cast<__mmask16>(1u << label_lane), v_on);
      _mm512_mask_storeu_ps(d + k, m, _mm512_mul_ps(_mm512_sub_ps(p, target), vg));
    }
  }
  double loss = 0;
  for (int64_t i = 0; i < N; ++i) loss += row_loss.data[i];
  return static_cast<float>(loss / static_cast<double>(N));
}

// loss = mean((pred - target)^2) accumulated in double; d_pred = (pred - target) * (2 scale / N).
// Serial: N is the batch size, far below the cost of forking a team.
float mse_forward_backward(float* d_pred, const float* pred, const float* target, float loss_scale,
                           int64_t N) {
  const __m512 vg = _mm512_set1_ps(2.0f * loss_scale / static_cast<float>(N));
  __m512d acc = _mm512_setzero_pd();
  for (int64_t i = 0; i < N; i += kLanes) {
    const __mmask16 m = lanes_mask(N - i);
    const __m512 diff =
        _mm512_sub_ps(_mm512_maskz_loadu_ps(m, pred + i), _mm512_maskz_loadu_ps(m, target + i));
    _mm512_mask_storeu_ps(d_pred + i, m, _mm512_mul_ps(diff, vg));
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(diff));
    const __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(diff, 1));
    acc = _mm512_fmadd_pd(lo, lo, acc);
    acc = _mm512_fmadd_pd(hi, hi, acc);
  }
  return static_cast<float>(_mm512_reduce_add_pd(acc) / static_cast<double>(N));
}

}  // namespace cpuft::avx512
