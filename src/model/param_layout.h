// ParamLayout: the family's parameter tables (model/param_table.h) laid out for one config.
//
// Every parameter of the family's *ForSequenceClassification model appears here once, in forward
// order, with its Hugging Face name, shape, offset in the flat parameter buffer, layer and kind. It
// is made from the tables and drives allocation, safetensors load and save, the optimizer's decay
// mask, the golden tests' by-name comparison and the gradient buckets.
//
// Memory order = forward order: embeddings, layer 0..L-1, the head's dense and output layers. The
// backward pass therefore finishes gradients from the end of the buffer towards the start. Within a
// layer the query, key and value weights are adjacent (one (3D, D) matrix for the packed QKV
// product) and so are their biases ((3D)): HF's three tensors and the packed ones are the same
// bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/param_table.h"

namespace cpuft {

// Layer index conventions for ParamSpec::layer.
inline constexpr int kEmbeddingsLayer = -1;
int pooler_layer(const ModelConfig& config);      // L
int classifier_layer(const ModelConfig& config);  // L + 1

struct ParamSpec {
  std::string name;  // HF name in BertForSequenceClassification, e.g. "bert.pooler.dense.bias"
  std::vector<int64_t> shape;  // as HF stores it; nn.Linear weights are (out, in)
  int64_t offset = 0;          // in floats, from the start of the flat buffer
  int64_t numel = 0;
  int layer = 0;  // kEmbeddingsLayer, 0..L-1, pooler_layer, classifier_layer
  ParamKind kind = ParamKind::matrix;
  bool decays = true;  // decays(kind): false for biases and LayerNorm weights (HF Trainer's rule)
};

// The number of parameters `config` describes, in double so that an absurd config cannot
// overflow it: for a memory check before anything is allocated.
double parameter_count(const ModelConfig& config);

class ParamLayout {
 public:
  // The layout of config.family's tables for `config`.
  explicit ParamLayout(const ModelConfig& config);

  const std::vector<ParamSpec>& specs() const { return specs_; }
  const ParamSpec* find(const std::string& name) const;   // nullptr if unknown
  const ParamSpec& at(const std::string& name) const;     // CPUFT_CHECK if unknown
  int64_t total_floats() const { return total_floats_; }  // buffer size, padding included
  // [begin, end) float range holding all parameters of `layer`.
  std::pair<int64_t, int64_t> layer_range(int layer) const;
  // Encoder layer `layer` (0..L-1): where its FFN block's parameters begin, the first of its
  // feed-forward input weight and FFN LayerNorm in the family's table. Every family lists the rest
  // of the block (the other feed-forward tensors, and nothing else) after it, so
  // [ffn_begin, layer_range().second) is the block (grad_listener.h, ffn_part_id).
  int64_t ffn_begin(int layer) const;
  const FamilyParamTables& tables() const { return *tables_; }
  int64_t layer_count() const { return layer_count_; }  // L

 private:
  const FamilyParamTables* tables_;
  std::vector<ParamSpec> specs_;
  int64_t total_floats_ = 0;
  int64_t layer_count_ = 0;
};

// Maps a name from a checkpoint to the name a layout of `tables` would give it, or "" for buffers
// (position_ids, token_type_ids). Accepts names with the base model's prefix ("roberta.", as
// *ForSequenceClassification and *ForMaskedLM save them), bare base-model names ("embeddings.",
// "encoder.", ...: a saved RobertaModel or sentence-transformers folder) and the old LayerNorm
// names gamma/beta; other names (heads) come back unchanged.
std::string canonical_param_name(const std::string& checkpoint_name,
                                 const FamilyParamTables& tables);
// Whether a checkpoint tensor that the layout lacks contradicts the config (a layer or embedding
// tensor of the base model: a deeper model, another family's names) rather than being a head or
// buffer that transformers drops (a pretraining head, RoBERTa's unused pooler).
bool contradicts_config(const std::string& canonical_name, const FamilyParamTables& tables);

}  // namespace cpuft
