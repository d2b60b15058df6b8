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
  const KernelTable& k = kernels();
  const int64_t N = batch.N, B = batch.B, D = dims.attention.D, F = dims.F;
  float* tmp = scratch.nd[0];  // (B, D)
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

  // From here on every part is row-wise: B rows.
  const Operand ctx_in = as_input(a.ctx, a.ctx_b, B * D);
  plans.attn_out.forward(tmp, ctx_in, w.attn_out, p.attn_out_b, B);
  packed_dropout_forward(k, tmp, tmp, dims.attention_output_dropout, keys[kAttentionOutput],
                         first_rows(batch, D));
  k.add_layer_norm_forward(a.h1, a.s1, a.ln1_mean, a.ln1_rstd, tmp, a.x_first, p.attn_ln_w,
                           p.attn_ln_b, dims.layer_norm_eps, B, D);

  const Operand h1_in = as_input(a.h1, a.h1_b, B * D);
  plans.ffn_in.forward(a.ffn_pre, h1_in, w.ffn_in, p.ffn_in_b, B);
  k.gelu_forward(a.ffn_act, a.ffn_pre, B * F);
  const Operand act_in = as_input(a.ffn_act, a.act_b, B * F);
  plans.ffn_out.forward(tmp, act_in, w.ffn_out, p.ffn_out_b, B);
  packed_dropout_forward(k, tmp, tmp, dims.hidden_dropout, keys[kFfnOutput], first_rows(batch, D));
  k.add_layer_norm_forward(a.out, a.s2, a.ln2_mean, a.ln2_rstd, tmp, a.h1, p.ffn_ln_w, p.ffn_ln_b,
                           dims.layer_norm_eps, B, D);
}

void first_token_layer_backward(float* d_x, const float* d_out, const float* x,
                                const FirstTokenActivations& a, const LayerParams& p,
                                const LayerParams& g, const LayerBf16Weights* w_b,
                                const EncoderPlans& plans, const FirstTokenPlans& first_plans,
                                const PackedBatch& batch, const EncoderDims& dims,
                                const RngKey keys[3], const EncoderScratch& scratch) {
  const KernelTable& k = kernels();
  const int64_t N = batch.N, B = batch.B, D = dims.attention.D, F = dims.F;
  const LayerWeights w = layer_weights(p, w_b);
  const SplitQkv qkv = split_qkv(w.qkv, p.qkv_b, D);
  // The gradients of Wq, bq (rows [0, D)) and of Wkv, bkv (rows [D, 3D)).
  float* d_q_w = g.qkv_w;
  float* d_kv_w = g.qkv_w + D * D;
  float* d_q_b = g.qkv_b;
  float* d_kv_b = g.qkv_b + D;
  // Under bf16 one output gradient at a time is rounded into grad_b (encoder_layer.cc).
  bf16* grad_b = w_b == nullptr ? nullptr : scratch.grad_b;
  float* d_s = scratch.nd[0];    // (B, D) d_s2, later d_s1
  float* d_tmp = scratch.nd[1];  // (B, D) gradient at a dropout output
  float* d_h = scratch.nd[2];    // (B, D) d_h1, later d_ctx, later d_x_first
  float* d_ffn = scratch.nf;     // (B, F)
  float* d_kv = scratch.n3d;     // (N, 2D)
  float* d_q = d_tmp;            // (B, D) once d_tmp is spent

  // undo: out = LayerNorm(s2)
  k.layer_norm_backward(d_s, g.ffn_ln_w, g.ffn_ln_b, d_out, a.s2, a.ln2_mean, a.ln2_rstd,
                        p.ffn_ln_w, B, D);
  // undo: s2 = dropout(act W2^T + b2) + h1   (the h1 branch is added below)
  packed_dropout_backward(k, d_tmp, d_s, dims.hidden_dropout, keys[kFfnOutput],
                          first_rows(batch, D));
  {
    const Operand d_y = as_input(d_tmp, grad_b, B * D);
    plans.ffn_out.backward_weights(g.ffn_out_w, d_y, Operand{a.ffn_act, a.act_b}, B);
    k.bias_backward(g.ffn_out_b, d_tmp, B, D);
    plans.ffn_out.backward_data(d_ffn, d_y, w.ffn_out, B);
  }
  // undo: act = gelu(pre)
  k.gelu_backward(d_ffn, d_ffn, a.ffn_pre, B * F);
  // undo: pre = h1 W1^T + b1
  {
    const Operand d_y = as_input(d_ffn, grad_b, B * F);
    plans.ffn_in.backward_weights(g.ffn_in_w, d_y, Operand{a.h1, a.h1_b}, B);
    k.bias_backward(g.ffn_in_b, d_ffn, B, F);
    plans.ffn_in.backward_data(d_h, d_y, w.ffn_in, B);
  }
  add_into(d_h, d_s, B * D);  // residual branch of s2

  // undo: h1 = LayerNorm(s1)
  k.layer_norm_backward(d_s, g.attn_ln_w, g.attn_ln_b, d_h, a.s1, a.ln1_mean, a.ln1_rstd,
                        p.attn_ln_w, B, D);
  // undo: s1 = dropout(ctx Wo^T + bo) + x_first   (the x_first branch is added at the end)
  packed_dropout_backward(k, d_tmp, d_s, dims.attention_output_dropout, keys[kAttentionOutput],
                          first_rows(batch, D));
  float* d_ctx = d_h;
  {
    const Operand d_y = as_input(d_tmp, grad_b, B * D);
    plans.attn_out.backward_weights(g.attn_out_w, d_y, Operand{a.ctx, a.ctx_b}, B);
    k.bias_backward(g.attn_out_b, d_tmp, B, D);
    plans.attn_out.backward_data(d_ctx, d_y, w.attn_out, B);
  }
  // undo: ctx = attention(q over its sequence's kv)
  first_query_attention_backward(d_q, d_kv, d_ctx, a.q, a.kv, a.probs, batch.seq_offsets,
                                 batch.sample_ids, B, dims.attention, dims.attention_dropout,
                                 keys[kAttentionProbs], scratch.attention,
                                 scratch.attention_per_thread);
  // undo: q = x_first Wq^T + bq   (d_x_first into d_h, d_ctx being spent)
  float* d_x_first = d_h;
  {
    const Operand d_y = as_input(d_q, grad_b, B * D);
    first_plans.q.backward_weights(d_q_w, d_y, Operand{a.x_first, a.x_first_b}, B);
    k.bias_backward(d_q_b, d_q, B, D);
    first_plans.q.backward_data(d_x_first, d_y, qkv.q_w, B);
  }
  add_into(d_x_first, d_s, B * D);  // residual branch of s1
  // undo: kv = x Wkv^T + bkv; then the first tokens' rows get their query and residual gradients
  {
    const Operand d_y = as_input(d_kv, grad_b, N * 2 * D);
    first_plans.kv.backward_weights(d_kv_w, d_y, Operand{x, a.x_b}, N);
    k.bias_backward(d_kv_b, d_kv, N, 2 * D);
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
