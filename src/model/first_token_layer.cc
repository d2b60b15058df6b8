#include "model/first_token_layer.h"

#include <algorithm>

#include "kernels/kernels.h"

namespace cpuft {

namespace {

// Wqkv's rows [0, D) are the query's, [D, 3D) the key's and value's: the two products' weights and
// biases as views.
struct SplitQkv {
  Operand q_w, kv_w;
  const float* q_b;
  const float* kv_b;
};

SplitQkv split_qkv(const Operand& qkv_w, const float* qkv_b, int64_t D) {
  const int64_t kv_offset = D * D;
  return {qkv_w,
          {qkv_w.f32 + kv_offset, qkv_w.b16 == nullptr ? nullptr : qkv_w.b16 + kv_offset},
          qkv_b,
          qkv_b + D};
}

// The rows of a (B, width) tensor, one per sequence, for the dropout masks: each is its sequence's
// first row, whose mask is the full layer's first row (model/packed_dropout.h).
PackedRows first_rows(const PackedBatch& batch, int64_t width) {
  return PackedRows{batch.B, nullptr, batch.sample_ids, width};
}

}  // namespace

void first_token_layer_forward(FirstTokenActivations& a, const float* x, const LayerParams& p,
                               const LayerBf16Weights* w_b, const EncoderPlans& plans,
                               const FirstTokenPlans& first_plans, const PackedBatch& batch,
                               const EncoderDims& dims, const RngKey keys[3],
                               const EncoderScratch& scratch) {
  const int64_t N = batch.N, B = batch.B, D = dims.attention.D;
  const LayerWeights w = layer_weights(p, w_b);
  const SplitQkv qkv = split_qkv(w.qkv, p.qkv_b, D);

  // Keys and values of every token; queries of the first tokens only.
  const Operand x_in = as_input(x, a.x_b, N * D);
  first_plans.kv.forward(a.kv, x_in, qkv.kv_w, qkv.kv_b, N);
  for (int64_t s = 0; s < B; ++s) std::copy_n(x + batch.seq_offsets[s] * D, D, a.x_first + s * D);
  const Operand x_first_in = as_input(a.x_first, a.x_first_b, B * D);
  first_plans.q.forward(a.q, x_first_in, qkv.q_w, qkv.q_b, B);
  first_query_attention_forward(a.ctx, a.probs, a.q, a.kv, batch.seq_offsets, batch.sample_ids, B,
                                dims.attention, dims.attention_dropout, keys[kAttentionProbs],
                                scratch.attention, scratch.attention_per_thread);

  // From here on every part is row-wise: B rows, the residual being the first tokens' input.
  rowwise_forward(rowwise_view(a), a.x_first, p, w, plans, first_rows(batch, D), B, dims, keys,
                  scratch);
}

void first_token_layer_backward(float* d_x, const float* d_out, const float* x,
                                const FirstTokenActivations& a, const LayerParams& p,
                                const LayerParams& g, const LayerBf16Weights* w_b,
                                const EncoderPlans& plans, const FirstTokenPlans& first_plans,
                                const PackedBatch& batch, const EncoderDims& dims,
                                const RngKey keys[3], const EncoderScratch& scratch,
                                GradListener* listener, int layer) {
  const int64_t N = batch.N, B = batch.B, D = dims.attention.D;
  const LayerWeights w = layer_weights(p, w_b);
  const SplitQkv qkv = split_qkv(w.qkv, p.qkv_b, D);
  // The gradients of Wq, bq (rows [0, D)) and of Wkv, bkv (rows [D, 3D)).
  float* d_q_w = g.qkv_w;
  float* d_kv_w = g.qkv_w + D * D;
  float* d_q_b = g.qkv_b;
  float* d_kv_b = g.qkv_b + D;
  // Under bf16 one output gradient at a time is rounded into grad_b (encoder_layer.cc).
  bf16* grad_b = w_b == nullptr ? nullptr : scratch.grad_b;
  float* d_s1 = scratch.nd[0];   // (B, D)
  float* d_q = scratch.nd[1];    // (B, D)
  float* d_ctx = scratch.nd[2];  // (B, D), later d_x_first
  float* d_kv = scratch.n3d;     // (N, 2D)

  // undo: everything after attention, row by row
  rowwise_backward(d_ctx, d_s1, d_out, rowwise_view(a), p, g, w, grad_b, plans,
                   first_rows(batch, D), B, dims, keys, scratch, listener, layer);
  // undo: ctx = attention(q over its sequence's kv)
  first_query_attention_backward(d_q, d_kv, d_ctx, a.q, a.kv, a.probs, batch.seq_offsets, B,
                                 dims.attention, dims.attention_dropout, scratch.attention,
                                 scratch.attention_per_thread);
  progress_point(listener);
  // undo: q = x_first Wq^T + bq   (d_x_first into d_ctx's buffer, d_ctx being spent)
  float* d_x_first = d_ctx;
  {
    const Operand d_y = output_gradient(d_q_b, d_q, grad_b, B, D);
    first_plans.q.backward_weights(d_q_w, d_y, Operand{a.x_first, a.x_first_b}, B);
    first_plans.q.backward_data(d_x_first, d_y, qkv.q_w, B);
  }
  add_into(d_x_first, d_s1, B * D);  // residual branch of s1
  // undo: kv = x Wkv^T + bkv; then the first tokens' rows get their query and residual gradients
  {
    const Operand d_y = output_gradient(d_kv_b, d_kv, grad_b, N, 2 * D);
    first_plans.kv.backward_weights(d_kv_w, d_y, Operand{x, a.x_b}, N);
    progress_point(listener);
    first_plans.kv.backward_data(d_x, d_y, qkv.kv_w, N);
  }
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < B; ++s) {
    float* row = d_x + batch.seq_offsets[s] * D;
    const float* first = d_x_first + s * D;
    for (int64_t i = 0; i < D; ++i) row[i] += first[i];
  }
}

}  // namespace cpuft
