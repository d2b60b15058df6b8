// ModelConfig: the architecture of a BERT encoder, read from a Hugging Face config.json.
//
// Field names and defaults follow transformers' ModelConfig. Fields that change the computation in
// a way cpuft does not implement (another activation, relative positions, decoder mode) are refused
// with an error naming the field, never silently ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cpuft {

struct ModelConfig {
  int64_t vocab_size = 0;               // V
  int64_t hidden_size = 0;              // D
  int64_t num_hidden_layers = 0;        // L
  int64_t num_attention_heads = 0;      // H
  int64_t intermediate_size = 0;        // F
  int64_t max_position_embeddings = 0;  // P
  int64_t type_vocab_size = 2;
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  double classifier_dropout = -1;  // < 0: null in config.json, use hidden_dropout_prob
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  int64_t num_labels = 2;             // K; 1 means regression
  std::string problem_type;           // "", "single_label_classification", "regression"
  std::vector<std::string> id2label;  // num_labels entries ("LABEL_0", ... by default)

  int64_t head_dim() const { return hidden_size / num_attention_heads; }  // Dh
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
