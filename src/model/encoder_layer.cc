#include "model/encoder_layer.h"

#include "core/check.h"
#include "core/profile.h"
#include "kernels/kernels.h"

namespace cpuft {

void add_into(float* y, const float* x, int64_t n) {
  CPUFT_PROFILE("residual.bwd");
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

LayerWeights layer_weights(const LayerParams& p, const LayerBf16Weights* b) {
  if (b == nullptr) return {{p.qkv_w}, {p.attn_out_w}, {p.ffn_in_w}, {p.ffn_out_w}};
  return {{p.qkv_w, b->qkv_w},
          {p.attn_out_w, b->attn_out_w},
          {p.ffn_in_w, b->ffn_in_w},
          {p.ffn_out_w, b->ffn_out_w}};
}

Operand as_input(const float* x, bf16* storage, int64_t n) {
  if (storage == nullptr) return {x};
  kernels().round_to_bf16(storage, x, n);
  return {x, storage};
}

Operand output_gradient(float* d_b, const float* d_y, bf16* storage, int64_t rows, int64_t cols) {
  if (storage == nullptr) {
    kernels().bias_backward(d_b, d_y, rows, cols);
    return {d_y};
  }
  kernels().bias_backward_bf16(storage, d_b, d_y, rows, cols);
  return {d_y, storage};
}

void rowwise_forward(const RowwiseActivations& a, const float* residual, const LayerParams& p,
                     const LayerWeights& w, const EncoderPlans& plans, const PackedRows& rows,
                     int64_t R, const EncoderDims& dims, const RngKey keys[3],
                     const EncoderScratch& scratch) {
  const KernelTable& k = kernels();
  const int64_t D = dims.attention.D, F = dims.F;
  float* tmp = scratch.nd[0];  // (R, D)
  const Operand ctx_in = as_input(a.ctx, a.ctx_b, R * D);
  plans.attn_out.forward(tmp, ctx_in, w.attn_out, p.attn_out_b, R);
  packed_dropout_forward(k, tmp, tmp, dims.attention_output_dropout, keys[kAttentionOutput], rows);
  k.add_layer_norm_forward(a.h1, a.s1, a.ln1_mean, a.ln1_rstd, tmp, residual, p.attn_ln_w,
                           p.attn_ln_b, dims.layer_norm_eps, R, D);

  const Operand h1_in = as_input(a.h1, a.h1_b, R * D);
  plans.ffn_in.forward(a.ffn_pre, h1_in, w.ffn_in, p.ffn_in_b, R);
  // act is kept only when backward reads it in fp32 (ffn_act); under bf16 only its rounding act_b
  // is stored, in one pass; else it lives in scratch.nf.
  Operand act_in;
  if (a.act_b != nullptr && a.ffn_act == nullptr) {
    k.gelu_forward_bf16(a.act_b, a.ffn_pre, R * F);
    act_in = {nullptr, a.act_b};
  } else {
    float* act = a.ffn_act != nullptr ? a.ffn_act : scratch.nf;
    k.gelu_forward(act, a.ffn_pre, R * F);
    act_in = as_input(act, a.act_b, R * F);
  }
  plans.ffn_out.forward(tmp, act_in, w.ffn_out, p.ffn_out_b, R);
  packed_dropout_forward(k, tmp, tmp, dims.hidden_dropout, keys[kFfnOutput], rows);
  k.add_layer_norm_forward(a.out, a.s2, a.ln2_mean, a.ln2_rstd, tmp, a.h1, p.ffn_ln_w, p.ffn_ln_b,
                           dims.layer_norm_eps, R, D);
}

void rowwise_backward(float* d_ctx, float* d_s1, const float* d_out, const RowwiseActivations& a,
                      const LayerParams& p, const LayerParams& g, const LayerWeights& w,
                      bf16* grad_b, const EncoderPlans& plans, const PackedRows& rows, int64_t R,
                      const EncoderDims& dims, const RngKey keys[3], const EncoderScratch& scratch,
                      GradListener* listener, int layer) {
  CPUFT_CHECK(listener == nullptr || layer >= 0, "rowwise_backward: a listener needs the layer");
  const KernelTable& k = kernels();
  const int64_t D = dims.attention.D, F = dims.F;
  float* d_s = d_s1;             // d_s2, later d_s1
  float* d_tmp = scratch.nd[1];  // gradient at a dropout output
  float* d_h = d_ctx;            // d_h1, later d_ctx
  float* d_ffn = scratch.nf;

  // undo: out = LayerNorm(s2)
  k.layer_norm_backward(d_s, g.ffn_ln_w, g.ffn_ln_b, d_out, a.s2, a.ln2_mean, a.ln2_rstd,
                        p.ffn_ln_w, R, D);
  // undo: s2 = dropout(act W2^T + b2) + h1   (the h1 branch is added below)
  packed_dropout_backward(k, d_tmp, d_s, dims.hidden_dropout, keys[kFfnOutput], rows);
  {
    const Operand d_y = output_gradient(g.ffn_out_b, d_tmp, grad_b, R, D);
    // The product's input act: under bf16 its rounding (act_b); in fp32 the kept ffn_act, or,
    // when forward kept none (ModelLimits::recompute), gelu(pre) again into d_ffn's buffer (the
    // same kernel on the same input: the same bits).
    const bool recompute = a.act_b == nullptr && a.ffn_act == nullptr;
    if (recompute) k.gelu_forward(d_ffn, a.ffn_pre, R * F);
    const Operand act = a.act_b != nullptr ? Operand{nullptr, a.act_b}
                        : recompute        ? Operand{d_ffn}
                                           : Operand{a.ffn_act};
    plans.ffn_out.backward_weights(g.ffn_out_w, d_y, act, R);
    progress_point(listener);
    plans.ffn_out.backward_data(d_ffn, d_y, w.ffn_out, R);
    progress_point(listener);
  }
  // undo: act = gelu(pre), then pre = h1 W1^T + b1. Under bf16 one pass writes only the rounding
  // the products read (grad_b) and the bias gradient; the fp32 gradient is never stored.
  {
    if (grad_b != nullptr) {
      k.gelu_backward_bf16(grad_b, g.ffn_in_b, d_ffn, a.ffn_pre, R, F);
    } else {
      k.gelu_backward(d_ffn, d_ffn, a.ffn_pre, R * F);
      k.bias_backward(g.ffn_in_b, d_ffn, R, F);
    }
    const Operand d_y = grad_b != nullptr ? Operand{nullptr, grad_b} : Operand{d_ffn};
    plans.ffn_in.backward_weights(g.ffn_in_w, d_y, Operand{a.h1, a.h1_b}, R);
    progress_point(listener);
    plans.ffn_in.backward_data(d_h, d_y, w.ffn_in, R);
    progress_point(listener);
  }
  ffn_grads_ready(listener, layer);  // ffn_in, ffn_out and ffn_ln are final
  add_into(d_h, d_s, R * D);         // residual branch of s2

  // undo: h1 = LayerNorm(s1)
  k.layer_norm_backward(d_s, g.attn_ln_w, g.attn_ln_b, d_h, a.s1, a.ln1_mean, a.ln1_rstd,
                        p.attn_ln_w, R, D);
  // undo: s1 = dropout(ctx Wo^T + bo) + residual   (d_s1 is the residual's gradient: the caller's)
  packed_dropout_backward(k, d_tmp, d_s, dims.attention_output_dropout, keys[kAttentionOutput],
                          rows);
  {
    const Operand d_y = output_gradient(g.attn_out_b, d_tmp, grad_b, R, D);
    plans.attn_out.backward_weights(g.attn_out_w, d_y, Operand{a.ctx, a.ctx_b}, R);
    progress_point(listener);
    plans.attn_out.backward_data(d_ctx, d_y, w.attn_out, R);
    progress_point(listener);
  }
}

void encoder_layer_forward(LayerActivations& a, const float* x, const LayerParams& p,
                           const LayerBf16Weights* w_b, const EncoderPlans& plans,
                           const PackedBatch& batch, const EncoderDims& dims, const RngKey keys[3],
                           const EncoderScratch& scratch) {
  const int64_t N = batch.N, D = dims.attention.D;
  const LayerWeights w = layer_weights(p, w_b);

  const Operand x_in = as_input(x, a.x_b, N * D);
  plans.qkv.forward(a.qkv, x_in, w.qkv, p.qkv_b, N);
  attention_forward(a.ctx, a.probs, a.qkv, batch.seq_offsets, batch.prob_offsets, batch.sample_ids,
                    batch.B, dims.attention, dims.attention_dropout, keys[kAttentionProbs],
                    scratch.attention, scratch.attention_per_thread);
  rowwise_forward(rowwise_view(a), x, p, w, plans, batch.token_rows(D), N, dims, keys, scratch);
}

void encoder_layer_backward(float* d_x, const float* d_out, const float* x,
                            const LayerActivations& a, const LayerParams& p, const LayerParams& g,
                            const LayerBf16Weights* w_b, const EncoderPlans& plans,
                            const PackedBatch& batch, const EncoderDims& dims, const RngKey keys[3],
                            const EncoderScratch& scratch, GradListener* listener, int layer) {
  const int64_t N = batch.N, D = dims.attention.D;
  const LayerWeights w = layer_weights(p, w_b);
  // Under bf16 one output gradient at a time is rounded into grad_b and read by both backward
  // products of its linear; each linear's block below rounds its own (overwriting the previous).
  // backward_weights reads the forward's rounded copies of the inputs (x_b, ctx_b, h1_b, act_b).
  bf16* grad_b = w_b == nullptr ? nullptr : scratch.grad_b;
  float* d_s1 = scratch.nd[0];
  float* d_ctx = scratch.nd[2];
  float* d_qkv = scratch.n3d;

  // undo: everything after attention, row by row
  rowwise_backward(d_ctx, d_s1, d_out, rowwise_view(a), p, g, w, grad_b, plans, batch.token_rows(D),
                   N, dims, keys, scratch, listener, layer);
  // undo: ctx = attention(qkv)
  attention_backward(d_qkv, d_ctx, a.qkv, a.probs, batch.seq_offsets, batch.prob_offsets,
                     batch.sample_ids, batch.B, dims.attention, dims.attention_dropout,
                     keys[kAttentionProbs], scratch.attention, scratch.attention_per_thread);
  progress_point(listener);
  // undo: qkv = x Wqkv^T + bqkv
  {
    const Operand d_y = output_gradient(g.qkv_b, d_qkv, grad_b, N, 3 * D);
    plans.qkv.backward_weights(g.qkv_w, d_y, Operand{x, a.x_b}, N);
    progress_point(listener);
    plans.qkv.backward_data(d_x, d_y, w.qkv, N);
  }
  add_into(d_x, d_s1, N * D);  // residual branch of s1
}

}  // namespace cpuft
