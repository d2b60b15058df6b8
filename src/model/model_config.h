// ModelConfig: the architecture of an encoder of one of the supported families (BERT, DistilBERT,
// RoBERTa, XLM-RoBERTa, ELECTRA, ModernBERT, DeBERTa-v2/v3), read from a Hugging Face config.json.
//
// config.json's "model_type" names the family; each family's field names and defaults are those of
// its transformers config class (DistilBERT's `dim`, `n_layers`, ... land in the same fields as
// BERT's `hidden_size`, `num_hidden_layers`, ...). What differs between the families beyond these
// numbers (parameter names, position ids, the head) is in model/family.h. Fields that change the
// computation in a way cpuft does not implement (another activation, relative positions, decoder
// mode) are refused with an error naming the field, never silently ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cpuft {

// Sizes beyond any real encoder (the largest have 48 layers and ~10^10 parameters): refused by
// parse_model_config, and again by ParamLayout for configs built in code, before anything
// downstream overflows or a table of 10^18 layers is built.
inline constexpr int64_t kMaxLayers = 10000;
inline constexpr double kMaxParameters = 0x1p48;  // 1 PiB of float32

// The encoder families, by config.json "model_type".
enum class Family { bert, distilbert, roberta, xlm_roberta, electra, modernbert, deberta_v2 };

struct ModelConfig {
  Family family = Family::bert;
  int64_t vocab_size = 0;               // V
  int64_t hidden_size = 0;              // D
  int64_t num_hidden_layers = 0;        // L
  int64_t num_attention_heads = 0;      // H
  int64_t intermediate_size = 0;        // F
  int64_t max_position_embeddings = 0;  // P
  int64_t embedding_size = 0;           // E, the embeddings' width (= D except in ELECTRA)
  // padding_idx of the word table (its row gets no gradient; -1: none) and, in RoBERTa and
  // XLM-RoBERTa, of the position table, whose ids count from it.
  int64_t pad_token_id = 0;
  int64_t type_vocab_size = 2;
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  // < 0: null in config.json, use hidden_dropout_prob. DistilBERT's seq_classif_dropout.
  double classifier_dropout = -1;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  int64_t num_labels = 2;             // K; 1 means regression
  std::string problem_type;           // "", "single_label_classification", "regression"
  std::vector<std::string> id2label;  // num_labels entries ("LABEL_0", ... by default)

  // ModernBERT only (model/modernbert.h). Its mlp_dropout is hidden_dropout_prob, attention_dropout
  // attention_probs_dropout_prob (on the probabilities and on the attention output), norm_eps
  // layer_norm_eps.
  double embedding_dropout = 0;      // after the embeddings' LayerNorm
  int64_t local_attention = 0;       // in a sliding layer a token sees those within half of it
  std::vector<bool> sliding_layers;  // per layer: sliding-window (true) or full (false) attention
  double global_rope_theta = 0;      // rotary base of the full-attention layers
  double local_rope_theta = 0;       // and of the sliding ones
  bool mean_pooling = false;         // classifier_pooling "mean"; else "cls" (the first token)
  double initializer_cutoff_factor = 2;  // new weights: normal truncated at this many deviations

  // DeBERTa-v2/v3 only (model/deberta.h). type_vocab_size 0 means no token types (v3's), in which
  // case token_type_ids are ignored, as HF does.
  bool absolute_positions = true;      // position_biased_input: a position table is added
  bool relative_attention = false;     // disentangled attention over relative positions
  bool content_to_position = false;    // pos_att_type holds "c2p"
  bool position_to_content = false;    // pos_att_type holds "p2c"
  int64_t position_buckets = 0;        // > 0: relative positions in log buckets (v3: 256)
  int64_t max_relative_positions = 0;  // resolved: < 1 in config.json means P
  bool relative_norm = false;          // norm_rel_ebd "layer_norm": LayerNorm on rel_embeddings
  // share_att_key: the relative embeddings are projected by the layer's own query and key weights
  // (v3's); false: by pos_query_proj (p2c) and pos_key_proj (c2p) of their own (HF's default).
  bool share_att_key = true;
  // conv_kernel_size > 0 (v2-xlarge's 3): after layer 0, h = LayerNorm(layer0 + act(dropout(
  // conv(embeddings)))), a 1-D convolution along each sequence (model/sequence_conv.h).
  int64_t conv_kernel_size = 0;
  std::string conv_act = "tanh";  // HF's default; "gelu" or "relu" as ACT2FN names them
  double pooler_dropout = 0;      // ContextPooler's dropout on the first token

  // DeBERTa: the relative embedding rows are 2 S, S = position_buckets if > 0 else
  // max_relative_positions.
  int64_t relative_span() const {
    return position_buckets > 0 ? position_buckets : max_relative_positions;
  }

  // DeBERTa's pos_query_proj / pos_key_proj exist (for p2c / c2p).
  bool separate_position_projections() const { return relative_attention && !share_att_key; }

  int64_t head_dim() const { return hidden_size / num_attention_heads; }  // Dh
  // Tokens a sliding layer's token sees on each side (HF's config.sliding_window).
  int64_t sliding_half_window() const { return local_attention / 2; }
  bool has_embedding_projection() const { return embedding_size != hidden_size; }  // ELECTRA
  // The longest sequence the position table can hold: P, less padding_idx + 1 where positions
  // start after padding_idx (RoBERTa, XLM-RoBERTa).
  int64_t max_sequence_length() const;
  bool is_regression() const { return num_labels == 1; }
  float effective_classifier_dropout() const {
    return static_cast<float>(classifier_dropout >= 0 ? classifier_dropout : hidden_dropout_prob);
  }
};

// Parses config.json text; `label` names the file in error messages.
ModelConfig parse_model_config(const std::string& json_text, const std::string& label);
// Reads and parses a config.json file.
ModelConfig load_model_config(const std::string& path);

}  // namespace cpuft
