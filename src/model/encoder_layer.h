// One encoder layer of the BERT kind (BERT, DistilBERT, RoBERTa, XLM-RoBERTa, ELECTRA)
// (self-attention + feed-forward, post-LayerNorm), forward and backward.
//
//   qkv   = x Wqkv^T + bqkv                      (N, 3D)
//   ctx   = attention(qkv)                        (N, D)
//   s1    = dropout(ctx Wo^T + bo) + x            (N, D)   (no dropout in DistilBERT)
//   h1    = LayerNorm(s1)                         (N, D)
//   pre   = h1 W1^T + b1                          (N, F)
//   act   = gelu(pre)                             (N, F)
//   s2    = dropout(act W2^T + b2) + h1           (N, D)
//   out   = LayerNorm(s2)                         (N, D)
//
// Under --bf16 the four products take bf16 inputs: each input (x, ctx, h1, act; in backward the
// output gradient) is rounded to bf16 just before its product and the weights come from the
// model's bf16 copy; the products accumulate and write fp32, and everything else stays fp32.
#pragma once

#include <cstdint>

#include "core/bf16.h"
#include "core/rng.h"
#include "gemm/matmul_plan.h"
#include "model/attention.h"
#include "model/bf16_weights.h"
#include "model/grad_listener.h"
#include "model/model_params.h"
#include "model/packed_dropout.h"

namespace cpuft {

// What the forward pass keeps for the backward pass of one layer (views into the model's arena).
// ffn_act is nullptr where backward does not read it: under bf16 (it reads act_b) and with
// ModelLimits::recompute (it recomputes gelu(ffn_pre)); forward then writes act into scratch.nf.
// Under bf16, ctx and h1 are the same buffers in every layer: backward reads ctx_b and h1_b.
struct LayerActivations {
  float* qkv;       // (N, 3D)
  float* probs;     // attention probabilities, see attention_prob_offsets
  float* ctx;       // (N, D)
  float* s1;        // (N, D) input of LayerNorm 1
  float* ln1_mean;  // (N)
  float* ln1_rstd;  // (N)
  float* h1;        // (N, D)
  float* ffn_pre;   // (N, F)
  float* ffn_act;   // (N, F)
  float* s2;        // (N, D) input of LayerNorm 2
  float* ln2_mean;  // (N)
  float* ln2_rstd;  // (N)
  float* out;       // (N, D) the layer's output, next layer's input
  // bf16 roundings of the product inputs, kept for backward_weights (all nullptr in fp32).
  bf16* x_b;    // (N, D) the layer's input
  bf16* ctx_b;  // (N, D)
  bf16* h1_b;   // (N, D)
  bf16* act_b;  // (N, F)
};

// Buffers shared by all layers, overwritten by each.
struct EncoderScratch {
  float* nd[3];      // 3 x (N, D)
  float* nf;         // (N, F)
  float* n3d;        // (N, 3D)
  float* attention;  // per thread attention scratch
  int64_t attention_per_thread;
  bf16* grad_b;  // (N, max(3D, F)) an output gradient rounded to bf16 (nullptr in fp32)
};

// The matmul plans of the four linear kinds, shared by all layers.
struct EncoderPlans {
  LinearPlans qkv, attn_out, ffn_in, ffn_out;
};

// The packed batch geometry one layer needs.
struct PackedBatch {
  int64_t N, B;
  const int64_t* seq_offsets;   // (B+1)
  const int64_t* prob_offsets;  // (B+1)
  const int64_t* sample_ids;    // (B) numbers in the step's global batch: key the dropout masks

  PackedRows token_rows(int64_t width) const {
    return PackedRows{B, seq_offsets, sample_ids, width};
  }
};

struct EncoderDims {
  AttentionDims attention;
  int64_t F;
  float layer_norm_eps;
  float hidden_dropout;            // after the FFN output; 0 when not training
  float attention_dropout;         // on the attention probabilities; 0 when not training
  float attention_output_dropout;  // after the attention output (= hidden_dropout, except 0 in
                                   // DistilBERT, which has none); 0 when not training
};

// Dropout sites of a layer, for RngKey streams.
enum DropoutSite : uint32_t { kAttentionProbs = 0, kAttentionOutput = 1, kFfnOutput = 2 };

// The four weights as product inputs: fp32, plus the bf16 copy when there is one (b: nullptr in
// fp32).
struct LayerWeights {
  Operand qkv, attn_out, ffn_in, ffn_out;
};
LayerWeights layer_weights(const LayerParams& p, const LayerBf16Weights* b);

// x (n elements) as a product input: itself, and in bf16 also rounded into `storage` (nullptr in
// fp32, where nothing is rounded).
Operand as_input(const float* x, bf16* storage, int64_t n);

// A linear's output gradient d_y (rows, cols) as the input of its two backward products, with its
// bias gradient d_b (cols) accumulated: in fp32 bias_backward alone; under bf16 (storage not
// nullptr) one pass also rounds d_y into storage (KernelTable::bias_backward_bf16).
Operand output_gradient(float* d_b, const float* d_y, bf16* storage, int64_t rows, int64_t cols);

// The part of a layer after attention, from ctx to out, is row-wise: the full layer runs it on its
// N tokens, the first-token layer (first_token_layer.h) on its B first tokens. Its activations
// (R rows; the members of the same names in LayerActivations and FirstTokenActivations):
struct RowwiseActivations {
  float *ctx, *s1, *ln1_mean, *ln1_rstd, *h1, *ffn_pre, *ffn_act, *s2, *ln2_mean, *ln2_rstd, *out;
  bf16 *ctx_b, *h1_b, *act_b;
};
template <typename Activations>
RowwiseActivations rowwise_view(const Activations& a) {
  return {a.ctx, a.s1,       a.ln1_mean, a.ln1_rstd, a.h1,    a.ffn_pre, a.ffn_act,
          a.s2,  a.ln2_mean, a.ln2_rstd, a.out,      a.ctx_b, a.h1_b,    a.act_b};
}

// s1 = dropout(ctx Wo^T + bo) + residual; h1 = LayerNorm(s1); the feed-forward block; out =
// LayerNorm(s2), on R rows (R, D). `rows`: the rows' sequences, for the dropout masks.
void rowwise_forward(const RowwiseActivations& a, const float* residual, const LayerParams& p,
                     const LayerWeights& w, const EncoderPlans& plans, const PackedRows& rows,
                     int64_t R, const EncoderDims& dims, const RngKey keys[3],
                     const EncoderScratch& scratch);
// Its backward from d_out (R, D): d_ctx (R, D) and d_s1 (R, D), the gradient of the residual
// branch, which the caller adds to its input's gradient; parameter gradients accumulate into g.
// Uses scratch.nd[1] and scratch.nf; d_ctx and d_s1 must be two other (R, D) buffers. Reads act
// as act_b under bf16, as ffn_act in fp32, or recomputes gelu(ffn_pre) into scratch.nf when
// ffn_act is nullptr in fp32.
// `listener` (may be null) hears a progress point after each product and, once the FFN block's
// gradients are final, ffn_part_id(layer) (grad_listener.h); `layer` >= 0 where listener is set.
void rowwise_backward(float* d_ctx, float* d_s1, const float* d_out, const RowwiseActivations& a,
                      const LayerParams& p, const LayerParams& g, const LayerWeights& w,
                      bf16* grad_b, const EncoderPlans& plans, const PackedRows& rows, int64_t R,
                      const EncoderDims& dims, const RngKey keys[3], const EncoderScratch& scratch,
                      GradListener* listener = nullptr, int layer = -1);

// w_b: the layer's bf16 weights when the plans are bf16, else nullptr.
void encoder_layer_forward(LayerActivations& a, const float* x, const LayerParams& p,
                           const LayerBf16Weights* w_b, const EncoderPlans& plans,
                           const PackedBatch& batch, const EncoderDims& dims, const RngKey keys[3],
                           const EncoderScratch& scratch);

// d_x (N, D) overwritten from d_out (N, D); parameter gradients g accumulate. x is the forward
// input. `listener` (may be null) hears a progress point after each product and after attention,
// and ffn_part_id(layer) as rowwise_backward says.
void encoder_layer_backward(float* d_x, const float* d_out, const float* x,
                            const LayerActivations& a, const LayerParams& p, const LayerParams& g,
                            const LayerBf16Weights* w_b, const EncoderPlans& plans,
                            const PackedBatch& batch, const EncoderDims& dims, const RngKey keys[3],
                            const EncoderScratch& scratch, GradListener* listener = nullptr,
                            int layer = -1);

// y += x over n elements (the residual branch's gradient).
void add_into(float* y, const float* x, int64_t n);

}  // namespace cpuft
