#include "model/disentangled_attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/profile.h"
#include "gemm/matmul_plan.h"
#include "kernels/kernels.h"
#include "model/model_config.h"

namespace cpuft {

int64_t log_bucket_position(int64_t r, int64_t buckets, int64_t max_position) {
  const int64_t mid = buckets / 2, magnitude = r < 0 ? -r : r;
  if (magnitude <= mid) return r;
  // torch: abs_pos / mid in float32, logs of float32 tensors, then * (mid - 1), ceil, + mid.
  const float ratio = static_cast<float>(magnitude) / static_cast<float>(mid);
  const float base =
      static_cast<float>(static_cast<double>(max_position - 1) / static_cast<double>(mid));
  const float scaled = std::log(ratio) / std::log(base) * static_cast<float>(mid - 1);
  const int64_t bucket = static_cast<int64_t>(std::ceil(scaled)) + mid;
  return r < 0 ? -bucket : bucket;
}

RelativePositions::RelativePositions(const ModelConfig& c, int64_t max_len)
    : span_(c.relative_span()), max_len_(max_len) {
  CPUFT_CHECK(max_len >= 1 && span_ >= 1, "relative positions need a length and a span");
  rows_.resize(static_cast<size_t>(2 * max_len - 1));
  for (int64_t r = -(max_len - 1); r <= max_len - 1; ++r) {
    const int64_t bucket = c.position_buckets > 0 ? log_bucket_position(r, c.position_buckets,
                                                                        c.max_relative_positions)
                                                  : r;
    rows_[static_cast<size_t>(r + max_len - 1)] =
        static_cast<int32_t>(std::clamp<int64_t>(bucket + span_, 0, 2 * span_ - 1));
  }
}

int64_t disentangled_scratch_floats(int64_t T) {
  // backward: dP, dropped P, P without the mask's signs, two (T, W <= 2T - 1) gradients
  return (7 * T * T + 15) / 16 * 16;
}

void disentangled_attention_forward(float* ctx, float* probs, const float* qkv, const float* pos,
                                    const int64_t* seq_offsets, const int64_t* prob_offsets,
                                    const int64_t* sample_ids, int64_t B,
                                    const DisentangledDims& dims, float dropout_p, RngKey key,
                                    float* scratch, int64_t scratch_per_thread) {
  CPUFT_PROFILE("disentangled_attention.fwd");
  const KernelTable& k = kernels();
  const RelativePositions& rel = *dims.positions;
  const int64_t D = dims.attention.D, H = dims.attention.H, Dh = dims.attention.Dh;
  const int64_t ld_qkv = 3 * D, ld_pos = 2 * D;
  const float scale = dims.scale;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t block = 0; block < B * H; ++block) {
    const int64_t s = block / H, h = block % H;
    const int64_t start = seq_offsets[s], T = seq_offsets[s + 1] - start;
    const int64_t lo = rel.first_row(T), W = rel.last_row(T) - lo + 1;
    const float* q = qkv + start * ld_qkv + h * Dh;  // (T, Dh), ld 3D
    const float* kk = q + D;
    const float* v = q + 2 * D;
    // (W, Dh) each, ld 2D; pos is nullptr without relative attention
    const float* pq = pos != nullptr ? pos + lo * ld_pos + h * Dh : nullptr;
    const float* pk = pos != nullptr ? pq + D : nullptr;
    float* p = probs + prob_offsets[s] + h * T * T;                    // (T, T)
    float* c2p = scratch + omp_get_thread_num() * scratch_per_thread;  // (T, W)
    float* p2c = c2p + T * W;                                          // (T, W)
    float* p_drop = p2c + T * W;                                       // (T, T)
    // scores = scale (Q K^T + gather(Q pk^T) + gather(K pq^T)^T); then softmax over keys.
    strided_gemm(false, true, T, T, Dh, scale, q, ld_qkv, kk, ld_qkv, 0.0f, p, T);
    if (dims.c2p) {
      strided_gemm(false, true, T, W, Dh, scale, q, ld_qkv, pk, ld_pos, 0.0f, c2p, W);
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) p[i * T + j] += c2p[i * W + rel.row(i - j) - lo];
    }
    if (dims.p2c) {
      strided_gemm(false, true, T, W, Dh, scale, kk, ld_qkv, pq, ld_pos, 0.0f, p2c, W);
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) p[i * T + j] += p2c[j * W + rel.row(i - j) - lo];
    }
    k.softmax_forward(p, p, T, T);
    const float* p_used = p;
    if (dropout_p > 0) {  // as attention_forward: the mask kept in P's sign bits
      k.dropout_forward_marking(p_drop, p, dropout_p, block_key(key, sample_ids, s, H, h), T * T);
      p_used = p_drop;
    }
    // ctx = P V  -> (T, Dh) at columns h*Dh of ctx (ld D).
    strided_gemm(false, false, T, Dh, T, 1.0f, p_used, T, v, ld_qkv, 0.0f, ctx + start * D + h * Dh,
                 D);
  }
}

void disentangled_attention_backward(float* d_qkv, float* d_pos, const float* d_ctx,
                                     const float* qkv, const float* pos, const float* probs,
                                     const int64_t* seq_offsets, const int64_t* prob_offsets,
                                     int64_t B, const DisentangledDims& dims, float dropout_p,
                                     float* scratch, int64_t scratch_per_thread) {
  CPUFT_PROFILE("disentangled_attention.bwd");
  const KernelTable& k = kernels();
  const RelativePositions& rel = *dims.positions;
  const int64_t D = dims.attention.D, H = dims.attention.H, Dh = dims.attention.Dh;
  const int64_t ld_qkv = 3 * D, ld_pos = 2 * D;
  const float scale = dims.scale;
  // One thread per head: the head's columns of d_pos are its own (see the header).
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t h = 0; h < H; ++h) {
    float* d_p = scratch + omp_get_thread_num() * scratch_per_thread;  // (T, T)
    for (int64_t s = 0; s < B; ++s) {
      const int64_t start = seq_offsets[s], T = seq_offsets[s + 1] - start;
      const int64_t lo = rel.first_row(T), W = rel.last_row(T) - lo + 1;
      const float* q = qkv + start * ld_qkv + h * Dh;
      const float* kk = q + D;
      const float* v = q + 2 * D;
      const float* pq = pos != nullptr ? pos + lo * ld_pos + h * Dh : nullptr;
      const float* pk = pos != nullptr ? pq + D : nullptr;
      float* d_q = d_qkv + start * ld_qkv + h * Dh;
      float* d_k = d_q + D;
      float* d_v = d_q + 2 * D;
      float* d_pq = d_pos != nullptr ? d_pos + lo * ld_pos + h * Dh : nullptr;
      float* d_pk = d_pos != nullptr ? d_pq + D : nullptr;
      const float* d_c = d_ctx + start * D + h * Dh;  // (T, Dh), ld D
      const float* p = probs + prob_offsets[s] + h * T * T;
      float* p_drop = d_p + T * T;      // (T, T)
      float* p_plain = p_drop + T * T;  // (T, T)
      float* d_c2p = p_plain + T * T;   // (T, W)
      float* d_p2c = d_c2p + T * W;     // (T, W)
      const float* p_used = p;
      if (dropout_p > 0) {  // the forward's P and P_used, from the mask in P's sign bits
        k.dropout_unmark(p_drop, p_plain, p, dropout_p, T * T);
        p = p_plain;
        p_used = p_drop;
      }
      // undo ctx = P_used V:  d_V = P_used^T d_ctx,  d_P_used = d_ctx V^T
      strided_gemm(true, false, T, Dh, T, 1.0f, p_used, T, d_c, D, 0.0f, d_v, ld_qkv);
      strided_gemm(false, true, T, T, Dh, 1.0f, d_c, D, v, ld_qkv, 0.0f, d_p, T);
      // undo dropout (the mask read off P_used, as in attention_backward), then softmax:
      // d_scores = P * (d_P - rowsum(d_P * P))
      if (dropout_p > 0) k.dropout_backward_kept(d_p, d_p, p_used, dropout_p, T * T);
      k.softmax_backward(d_p, d_p, p, T, T);
      // undo scale Q K^T:  d_Q = scale d_S K,  d_K = scale d_S^T Q
      strided_gemm(false, false, T, Dh, T, scale, d_p, T, kk, ld_qkv, 0.0f, d_q, ld_qkv);
      strided_gemm(true, false, T, Dh, T, scale, d_p, T, q, ld_qkv, 0.0f, d_k, ld_qkv);
      // undo the gathers (scatter-add the score gradients into (T, W)), then the products:
      // c2p = scale Q pk^T:  d_Q += scale d_c2p pk,  d_pk += scale d_c2p^T Q
      if (dims.c2p) {
        std::fill_n(d_c2p, T * W, 0.0f);
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = 0; j < T; ++j) d_c2p[i * W + rel.row(i - j) - lo] += d_p[i * T + j];
        strided_gemm(false, false, T, Dh, W, scale, d_c2p, W, pk, ld_pos, 1.0f, d_q, ld_qkv);
        strided_gemm(true, false, W, Dh, T, scale, d_c2p, W, q, ld_qkv, 1.0f, d_pk, ld_pos);
      }
      // p2c = scale K pq^T:  d_K += scale d_p2c pq,  d_pq += scale d_p2c^T K
      if (dims.p2c) {
        std::fill_n(d_p2c, T * W, 0.0f);
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = 0; j < T; ++j) d_p2c[j * W + rel.row(i - j) - lo] += d_p[i * T + j];
        strided_gemm(false, false, T, Dh, W, scale, d_p2c, W, pq, ld_pos, 1.0f, d_k, ld_qkv);
        strided_gemm(true, false, W, Dh, T, scale, d_p2c, W, kk, ld_qkv, 1.0f, d_pq, ld_pos);
      }
    }
  }
}

}  // namespace cpuft
