#include "model/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/profile.h"
#include "gemm/matmul_plan.h"
#include "kernels/kernels.h"

namespace cpuft {

namespace {

// Softmax of each row i of the (T, T) scores over the keys j with |i - j| <= window (window < 0:
// all), in place; the other probabilities are set to exactly 0. The keys of a row's window are
// contiguous, so each row is one softmax over its band. Backward needs nothing of its own: where
// a probability is 0, softmax_backward's P * (dP - rowsum) is 0.
void softmax_in_window(const KernelTable& k, float* p, int64_t T, int64_t window) {
  if (window < 0 || window >= T - 1) {
    k.softmax_forward(p, p, T, T);
    return;
  }
  for (int64_t i = 0; i < T; ++i) {
    const int64_t lo = std::max<int64_t>(0, i - window), hi = std::min(T, i + window + 1);
    float* row = p + i * T;
    std::fill(row, row + lo, 0.0f);
    k.softmax_forward(row + lo, row + lo, 1, hi - lo);
    std::fill(row + hi, row + T, 0.0f);
  }
}

// scores = Q K^T / sqrt(Dh), then softmax over the keys of the window: block (s, h)'s
// probabilities into p (T, T). Forward and the recomputing backward call this same code on the
// same inputs, so the recomputed probabilities are the forward's, bit for bit.
void block_probabilities(const KernelTable& k, float* p, const float* q, const float* kk,
                         int64_t ld_qkv, int64_t T, int64_t Dh, float scale, int64_t window) {
  strided_gemm(false, true, T, T, Dh, scale, q, ld_qkv, kk, ld_qkv, 0.0f, p, T);
  softmax_in_window(k, p, T, window);
}

}  // namespace

int64_t attention_scratch_floats(int64_t T) {
  return (3 * T * T + 15) / 16 * 16;
}

RngKey block_key(RngKey key, const int64_t* sample_ids, int64_t s, int64_t H, int64_t h) {
  return sequence_key(key, sample_ids[s] * H + h);
}

void attention_prob_offsets(int64_t* prob_offsets, const int64_t* seq_offsets, int64_t B,
                            int64_t H) {
  prob_offsets[0] = 0;
  for (int64_t s = 0; s < B; ++s) {
    const int64_t T = seq_offsets[s + 1] - seq_offsets[s];
    prob_offsets[s + 1] = prob_offsets[s] + H * T * T;
  }
}

void attention_forward(float* ctx, float* probs, const float* qkv, const int64_t* seq_offsets,
                       const int64_t* prob_offsets, const int64_t* sample_ids, int64_t B,
                       const AttentionDims& dims, float dropout_p, RngKey key, float* scratch,
                       int64_t scratch_per_thread) {
  CPUFT_PROFILE("attention.fwd");
  const KernelTable& k = kernels();
  const int64_t D = dims.D, H = dims.H, Dh = dims.Dh, ld_qkv = 3 * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t block = 0; block < B * H; ++block) {
    const int64_t s = block / H, h = block % H;
    const int64_t start = seq_offsets[s], T = seq_offsets[s + 1] - start;
    const float* q = qkv + start * ld_qkv + h * Dh;  // (T, Dh), ld 3D
    const float* kk = q + D;
    const float* v = q + 2 * D;
    float* thread_scratch = scratch + omp_get_thread_num() * scratch_per_thread;
    // (T, T): kept for backward, or (probs == nullptr) in the thread's scratch, recomputed there.
    float* p = probs != nullptr ? probs + prob_offsets[s] + h * T * T : thread_scratch + T * T;
    block_probabilities(k, p, q, kk, ld_qkv, T, Dh, scale, dims.window);
    const float* p_used = p;
    if (dropout_p > 0) {  // P_used = dropout(P); P keeps the mask in its sign bits for backward
      float* p_drop = thread_scratch;
      k.dropout_forward_marking(p_drop, p, dropout_p, block_key(key, sample_ids, s, H, h), T * T);
      p_used = p_drop;
    }
    // ctx = P V  -> (T, Dh) at columns h*Dh of ctx (ld D).
    strided_gemm(false, false, T, Dh, T, 1.0f, p_used, T, v, ld_qkv, 0.0f, ctx + start * D + h * Dh,
                 D);
  }
}

void attention_backward(float* d_qkv, const float* d_ctx, const float* qkv, const float* probs,
                        const int64_t* seq_offsets, const int64_t* prob_offsets,
                        const int64_t* sample_ids, int64_t B, const AttentionDims& dims,
                        float dropout_p, RngKey key, float* scratch, int64_t scratch_per_thread) {
  CPUFT_PROFILE("attention.bwd");
  const KernelTable& k = kernels();
  const int64_t D = dims.D, H = dims.H, Dh = dims.Dh, ld_qkv = 3 * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t block = 0; block < B * H; ++block) {
    const int64_t s = block / H, h = block % H;
    const int64_t start = seq_offsets[s], T = seq_offsets[s + 1] - start;
    const float* q = qkv + start * ld_qkv + h * Dh;
    const float* kk = q + D;
    const float* v = q + 2 * D;
    float* d_q = d_qkv + start * ld_qkv + h * Dh;
    float* d_k = d_q + D;
    float* d_v = d_q + 2 * D;
    const float* d_c = d_ctx + start * D + h * Dh;  // (T, Dh), ld D
    float* thread_scratch = scratch + omp_get_thread_num() * scratch_per_thread;
    float* d_p = thread_scratch;  // (T, T)
    const float* p = probs != nullptr ? probs + prob_offsets[s] + h * T * T : nullptr;
    float* p_plain = thread_scratch + 2 * T * T;  // P recomputed, or P without the mask's signs
    float* p_drop = thread_scratch + T * T;
    const float* p_used = p;
    if (p == nullptr) {  // recompute the forward's probabilities, and draw its mask again
      block_probabilities(k, p_plain, q, kk, ld_qkv, T, Dh, scale, dims.window);
      p = p_plain;
      if (dropout_p > 0) {
        k.dropout_forward(p_drop, p, dropout_p, block_key(key, sample_ids, s, H, h), T * T);
        p_used = p_drop;
      }
    } else if (dropout_p > 0) {  // the forward's P and P_used, from the mask in P's sign bits
      k.dropout_unmark(p_drop, p_plain, p, dropout_p, T * T);
      p = p_plain;
      p_used = p_drop;
    }
    // undo ctx = P_used V:  d_V = P_used^T d_ctx,  d_P_used = d_ctx V^T
    strided_gemm(true, false, T, Dh, T, 1.0f, p_used, T, d_c, D, 0.0f, d_v, ld_qkv);
    strided_gemm(false, true, T, T, Dh, 1.0f, d_c, D, v, ld_qkv, 0.0f, d_p, T);
    // undo dropout, then softmax: d_scores = P * (d_P - rowsum(d_P * P)). The mask is read off
    // P_used (nonzero where kept) instead of drawn once more: where P is 0 it may say "dropped"
    // for a kept element, whose d_P then only meets P = 0 in softmax_backward.
    if (dropout_p > 0) k.dropout_backward_kept(d_p, d_p, p_used, dropout_p, T * T);
    k.softmax_backward(d_p, d_p, p, T, T);
    // undo scores = Q K^T * scale:  d_Q = d_S K * scale,  d_K = d_S^T Q * scale
    strided_gemm(false, false, T, Dh, T, scale, d_p, T, kk, ld_qkv, 0.0f, d_q, ld_qkv);
    strided_gemm(true, false, T, Dh, T, scale, d_p, T, q, ld_qkv, 0.0f, d_k, ld_qkv);
  }
}

void first_query_attention_forward(float* ctx, float* probs, const float* q, const float* kv,
                                   const int64_t* seq_offsets, const int64_t* sample_ids, int64_t B,
                                   const AttentionDims& dims, float dropout_p, RngKey key,
                                   float* scratch, int64_t scratch_per_thread) {
  CPUFT_PROFILE("attention_first.fwd");
  const KernelTable& k = kernels();
  const int64_t D = dims.D, H = dims.H, Dh = dims.Dh, ld_kv = 2 * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t block = 0; block < B * H; ++block) {
    const int64_t s = block / H, h = block % H;
    const int64_t start = seq_offsets[s], T = seq_offsets[s + 1] - start;
    const float* q_row = q + s * D + h * Dh;        // (1, Dh)
    const float* kk = kv + start * ld_kv + h * Dh;  // (T, Dh), ld 2D
    const float* v = kk + D;                        // (T, Dh), ld 2D
    float* p = probs + H * start + h * T;           // (1, T)
    // scores = q K^T / sqrt(Dh); then softmax over keys.
    strided_gemm(false, true, 1, T, Dh, scale, q_row, D, kk, ld_kv, 0.0f, p, T);
    k.softmax_forward(p, p, 1, T);
    const float* p_used = p;
    if (dropout_p > 0) {  // as attention_forward: the mask kept in p's sign bits
      float* p_drop = scratch + omp_get_thread_num() * scratch_per_thread;
      k.dropout_forward_marking(p_drop, p, dropout_p, block_key(key, sample_ids, s, H, h), T);
      p_used = p_drop;
    }
    // ctx = p V  -> (1, Dh) at columns h*Dh of ctx row s (ld D).
    strided_gemm(false, false, 1, Dh, T, 1.0f, p_used, T, v, ld_kv, 0.0f, ctx + s * D + h * Dh, D);
  }
}

void first_query_attention_backward(float* d_q, float* d_kv, const float* d_ctx, const float* q,
                                    const float* kv, const float* probs, const int64_t* seq_offsets,
                                    int64_t B, const AttentionDims& dims, float dropout_p,
                                    float* scratch, int64_t scratch_per_thread) {
  CPUFT_PROFILE("attention_first.bwd");
  const KernelTable& k = kernels();
  const int64_t D = dims.D, H = dims.H, Dh = dims.Dh, ld_kv = 2 * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t block = 0; block < B * H; ++block) {
    const int64_t s = block / H, h = block % H;
    const int64_t start = seq_offsets[s], T = seq_offsets[s + 1] - start;
    const float* q_row = q + s * D + h * Dh;
    const float* kk = kv + start * ld_kv + h * Dh;
    const float* v = kk + D;
    float* d_q_row = d_q + s * D + h * Dh;
    float* d_k = d_kv + start * ld_kv + h * Dh;
    float* d_v = d_k + D;
    const float* d_c = d_ctx + s * D + h * Dh;  // (1, Dh)
    const float* p = probs + H * start + h * T;
    float* thread_scratch = scratch + omp_get_thread_num() * scratch_per_thread;
    float* d_p = thread_scratch;  // (1, T)
    const float* p_used = p;
    if (dropout_p > 0) {  // the forward's p and p_used, from the mask in p's sign bits
      float* p_drop = thread_scratch + T;
      float* p_plain = thread_scratch + 2 * T;
      k.dropout_unmark(p_drop, p_plain, p, dropout_p, T);
      p = p_plain;
      p_used = p_drop;
    }
    // undo ctx = p_used V:  d_V = p_used^T d_ctx (an outer product),  d_p_used = d_ctx V^T
    strided_gemm(true, false, T, Dh, 1, 1.0f, p_used, T, d_c, D, 0.0f, d_v, ld_kv);
    strided_gemm(false, true, 1, T, Dh, 1.0f, d_c, D, v, ld_kv, 0.0f, d_p, T);
    // undo dropout (the mask read off p_used, as in attention_backward), then softmax:
    // d_scores = p * (d_p - sum(d_p * p))
    if (dropout_p > 0) k.dropout_backward_kept(d_p, d_p, p_used, dropout_p, T);
    k.softmax_backward(d_p, d_p, p, 1, T);
    // undo scores = q K^T * scale:  d_q = d_s K * scale,  d_K = d_s^T q * scale
    strided_gemm(false, false, 1, Dh, T, scale, d_p, T, kk, ld_kv, 0.0f, d_q_row, D);
    strided_gemm(true, false, T, Dh, 1, scale, d_p, T, q_row, D, 0.0f, d_k, ld_kv);
  }
}

}  // namespace cpuft
