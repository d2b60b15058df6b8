// The last encoder layer, computed for the first token of each sequence only.
//
// A sequence classification head reads one row of the last layer's output per sequence, the first
// token's (BERT's pooler, the RoBERTa/ELECTRA heads and DistilBERT's pre_classifier alike). Every
// part of a layer is row-wise except attention, where a query row reads the keys and values of its
// whole sequence. So in the last layer only the keys and values are needed for every token; the
// queries, attention, output projection, LayerNorms and feed-forward block are needed for the B
// first tokens only, and in backward every other row's gradient is exactly zero up to the keys and
// values. Computing just those rows gives the same logits and gradients as the full layer
// (encoder_layer.h) for about 1/6 of its work: per token 4D^2 of the layer's 24D^2 multiply-adds
// (F = 4D) and one attention row per sequence instead of T_s.
//
//   kv     = x Wkv^T + bkv                        (N, 2D)  Wkv: rows [D, 3D) of Wqkv
//   xf     = x[first token of each sequence]      (B, D)
//   q      = xf Wq^T + bq                          (B, D)   Wq: rows [0, D) of Wqkv
//   ctx    = attention(q over its sequence's kv)   (B, D)
//   s1     = dropout(ctx Wo^T + bo) + xf           (B, D)
//   h1     = LayerNorm(s1), then the feed-forward block and LayerNorm 2 as in encoder_layer.h
//   out    = LayerNorm(s2)                         (B, D)   the head's input
//
// Dropout draws the masks of the full layer: a sequence's stream counts elements from its first
// row, which is the first token's (model/packed_dropout.h), and the first query row of an
// attention block is its first T_s probabilities.
#pragma once

#include <cstdint>

#include "model/encoder_layer.h"

namespace cpuft {

// What the forward pass keeps for the backward pass (views into the model's arena).
struct FirstTokenActivations {
  float* x_first;   // (B, D) the first-token rows of the layer's input
  float* kv;        // (N, 2D) keys and values of every token
  float* q;         // (B, D) first-token queries
  float* probs;     // (H, T_s) per sequence s at H * seq_offsets[s]: the first query's row
  float* ctx;       // (B, D)
  float* s1;        // (B, D)
  float* ln1_mean;  // (B)
  float* ln1_rstd;  // (B)
  float* h1;        // (B, D)
  float* ffn_pre;   // (B, F)
  float* ffn_act;   // (B, F)
  float* s2;        // (B, D)
  float* ln2_mean;  // (B)
  float* ln2_rstd;  // (B)
  float* out;       // (B, D)
  // bf16 roundings of the product inputs (all nullptr in fp32).
  bf16* x_b;        // (N, D)
  bf16* x_first_b;  // (B, D)
  bf16* ctx_b;      // (B, D)
  bf16* h1_b;       // (B, D)
  bf16* act_b;      // (B, F)
};

// The plans of the layer's products beyond EncoderPlans (whose attn_out, ffn_in and ffn_out run
// here with B rows): keys and values (N rows, D -> 2D) and first-token queries (B rows, D -> D).
struct FirstTokenPlans {
  LinearPlans kv, q;
};

// out (B, D) from x (N, D).
void first_token_layer_forward(FirstTokenActivations& a, const float* x, const LayerParams& p,
                               const LayerBf16Weights* w_b, const EncoderPlans& plans,
                               const FirstTokenPlans& first_plans, const PackedBatch& batch,
                               const EncoderDims& dims, const RngKey keys[3],
                               const EncoderScratch& scratch);

// d_x (N, D) overwritten from d_out (B, D); parameter gradients g accumulate. x is the forward
// input. `listener` (may be null) hears progress points between the products, and
// ffn_part_id(layer) as rowwise_backward says (encoder_layer.h).
void first_token_layer_backward(float* d_x, const float* d_out, const float* x,
                                const FirstTokenActivations& a, const LayerParams& p,
                                const LayerParams& g, const LayerBf16Weights* w_b,
                                const EncoderPlans& plans, const FirstTokenPlans& first_plans,
                                const PackedBatch& batch, const EncoderDims& dims,
                                const RngKey keys[3], const EncoderScratch& scratch,
                                GradListener* listener = nullptr, int layer = -1);

}  // namespace cpuft
