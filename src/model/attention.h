// Multi-head self-attention on packed sequences.
//
// qkv holds, for every token, its query, key and value rows side by side: (N, 3D) with head h of Q
// at columns [h*Dh, (h+1)*Dh), of K at D + that, of V at 2D + that. Each sequence attends only to
// its own tokens, so no mask is needed: HF's padded computation adds a large negative number to
// padded keys, whose softmax weight is exactly 0 in fp32, which is what leaving them out computes.
#pragma once

#include <cstdint>

#include "core/rng.h"

namespace cpuft {

struct AttentionDims {
  int64_t D;   // hidden size
  int64_t H;   // heads
  int64_t Dh;  // head dim = D / H
  // Sliding-window attention (ModernBERT's local layers): >= 0, a query sees only the keys of its
  // sequence within this distance, |i - j| <= window (HF's bidirectional sliding-window mask); the
  // probabilities outside it are exactly 0, as HF's after its additive mask. -1: every key.
  int64_t window = -1;
};

// Each (sequence, head) block draws its dropout mask from its own stream, numbered by the
// sequence's sample id (its place in the step's global batch; model/packed_dropout.h), so the mask
// of a block depends neither on the threads nor on how the step is split over ranks.
RngKey block_key(RngKey key, const int64_t* sample_ids, int64_t s, int64_t H, int64_t h);

// Where each (sequence, head) block of attention probabilities lives in the probs buffer:
// block (s, h) is T_s x T_s floats at prob_offsets[s] + h * T_s * T_s.
void attention_prob_offsets(int64_t* prob_offsets, const int64_t* seq_offsets, int64_t B,
                            int64_t H);

// Floats of per-thread scratch for sequences up to T tokens, forward and backward (backward's
// d_P, P_used and P without the mask's signs or recomputed: 3 T^2; the first-query forms need 3 T).
int64_t attention_scratch_floats(int64_t T);

// ctx(N, D) = softmax(Q K^T / sqrt(Dh)) [dropout] V per sequence and head. Writes probs (before
// dropout; with dropout each dropped probability gets its sign bit set, so backward reads the mask
// instead of drawing it: KernelTable::dropout_forward_marking). sample_ids (B): each sequence's
// number in the step's global batch, which keys its dropout streams (model/packed_dropout.h).
// scratch: per OpenMP thread, attention_scratch_floats(T_max).
//
// probs == nullptr keeps no probabilities: backward recomputes each block's from Q and K with the
// same code, bit for bit the forward's, and draws its mask again. It trades one Q K^T and softmax
// per block in backward for H x sum_s T_s^2 floats per layer (SequenceClassifier: MiniLM-L6 on MRPC
// batches of 32, 72 MB of a 952 MB run).
void attention_forward(float* ctx, float* probs, const float* qkv, const int64_t* seq_offsets,
                       const int64_t* prob_offsets, const int64_t* sample_ids, int64_t B,
                       const AttentionDims& dims, float dropout_p, RngKey key, float* scratch,
                       int64_t scratch_per_thread);

// d_qkv(N, 3D) overwritten from d_ctx(N, D). probs: the forward's (read only), or nullptr when
// the forward kept none (recomputed). scratch as attention_forward's.
void attention_backward(float* d_qkv, const float* d_ctx, const float* qkv, const float* probs,
                        const int64_t* seq_offsets, const int64_t* prob_offsets,
                        const int64_t* sample_ids, int64_t B, const AttentionDims& dims,
                        float dropout_p, RngKey key, float* scratch, int64_t scratch_per_thread);

// The same for the first query row of each sequence only (model/first_token_layer.h): q (B, D)
// holds each sequence's first query, kv (N, 2D) every token's key (columns [0, D)) and value
// ([D, 2D)). ctx (B, D); probs: block (s, h) is the T_s probabilities of that query at
// H * seq_offsets[s] + h * T_s. Dropout masks are the first T_s of the full block's (the first
// row of attention_forward's), kept in probs' sign bits as attention_forward keeps them. scratch
// as attention_forward's.
void first_query_attention_forward(float* ctx, float* probs, const float* q, const float* kv,
                                   const int64_t* seq_offsets, const int64_t* sample_ids, int64_t B,
                                   const AttentionDims& dims, float dropout_p, RngKey key,
                                   float* scratch, int64_t scratch_per_thread);

// d_q (B, D) and d_kv (N, 2D) overwritten from d_ctx (B, D).
void first_query_attention_backward(float* d_q, float* d_kv, const float* d_ctx, const float* q,
                                    const float* kv, const float* probs, const int64_t* seq_offsets,
                                    int64_t B, const AttentionDims& dims, float dropout_p,
                                    float* scratch, int64_t scratch_per_thread);

}  // namespace cpuft
