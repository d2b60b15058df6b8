// ModelParams: named views into a flat buffer laid out by ParamLayout.
//
// The same struct is bound once to the weights and once to the gradients, so forward and backward
// code reads `p.layers[l].ffn_in_w` and `g.layers[l].ffn_in_w` side by side.
#pragma once

#include <vector>

#include "model/param_layout.h"

namespace cpuft {

// ModernBERT (model/modernbert.h) uses qkv_w, attn_out_w, ffn_in_w as its GeGLU input (2F, D),
// ffn_out_w, and its pre-norms attn_ln_w (nullptr in layer 0) and ffn_ln_w; it has no biases
// (nullptr).
struct LayerParams {
  float* qkv_w;       // (3D, D) query, key, value weights stacked
  float* qkv_b;       // (3D)
  float* attn_out_w;  // (D, D)
  float* attn_out_b;  // (D)
  float* attn_ln_w;   // (D)
  float* attn_ln_b;   // (D)
  float* ffn_in_w;    // (F, D)
  float* ffn_in_b;    // (F)
  float* ffn_out_w;   // (D, F)
  float* ffn_out_b;   // (D)
  float* ffn_ln_w;    // (D)
  float* ffn_ln_b;    // (D)
  // DeBERTa with share_att_key false, else nullptr: the relative embeddings' projections.
  float* pos_q_w = nullptr;  // (D, D) pos_query_proj (p2c)
  float* pos_q_b = nullptr;  // (D)
  float* pos_k_w = nullptr;  // (D, D) pos_key_proj (c2p)
  float* pos_k_b = nullptr;  // (D)
};

struct ModelParams {
  // The embeddings are E wide (E = D except in ELECTRA).
  float* word_emb;    // (V, E)
  float* pos_emb;     // (P, E)
  float* type_emb;    // (Ty, E); nullptr without token types (DistilBERT)
  float* emb_ln_w;    // (E)
  float* emb_ln_b;    // (E)
  float* emb_proj_w;  // (D, E) ELECTRA's embeddings_project when E != D, else nullptr
  float* emb_proj_b;  // (D)
  float* rel_emb;     // (2S, D) DeBERTa's relative position embeddings, else nullptr
  float* rel_ln_w;    // (D) and their LayerNorm (norm_rel_ebd "layer_norm"), else nullptr
  float* rel_ln_b;    // (D)
  float* conv_w;      // (D, D, k) DeBERTa's convolution after layer 0 (conv_kernel_size k), else
  float* conv_b;      // (D)       nullptr
  float* conv_ln_w;   // (D) and its LayerNorm
  float* conv_ln_b;   // (D)
  std::vector<LayerParams> layers;
  float* final_ln_w;    // (D) ModernBERT's final_norm, else nullptr
  float* head_dense_w;  // (D, D) (DeBERTa: ContextPooler's dense)
  float* head_dense_b;  // (D)
  float* head_ln_w;     // (D) ModernBERT's head.norm (after the activation), else nullptr
  float* head_out_w;    // (K, D)
  float* head_out_b;    // (K)
};

// Fills params (layout.total_floats()) as HF's BertPreTrainedModel._init_weights does: LayerNorm
// weights 1, biases 0, every other tensor normal(0, stddev); deterministic in `seed`. For
// benchmarks and tests that need a model without a checkpoint.
void init_random_weights(const ParamLayout& layout, float* params, float stddev, uint64_t seed);

// Binds views to `base`, a buffer of layout.total_floats() floats.
ModelParams bind_params(const ParamLayout& layout, const ModelConfig& config, float* base);

}  // namespace cpuft
