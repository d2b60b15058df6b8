// ParamLayout: the one table of model parameters.
//
// Every parameter of BertForSequenceClassification appears here once, in forward order, with its
// Hugging Face name, shape, offset in the flat parameter buffer, layer and weight-decay flag. The
// same table drives allocation, safetensors load and save, the optimizer's decay mask, the golden
// tests' by-name comparison and (later) gradient buckets: no other list of parameters exists.
//
// Memory order = forward order: embeddings, layer 0..L-1, pooler, classifier. The backward pass
// therefore finishes gradients from the end of the buffer towards the start. Within a layer the
// query, key and value weights are adjacent (one (3D, D) matrix for the packed QKV product) and
// so are their biases ((3D)): HF's three tensors and the packed ones are the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/bert_config.h"

namespace cpuft {

// Layer index conventions for ParamSpec::layer.
inline constexpr int kEmbeddingsLayer = -1;
int pooler_layer(const BertConfig& config);      // L
int classifier_layer(const BertConfig& config);  // L + 1

struct ParamSpec {
  std::string name;  // HF name in BertForSequenceClassification, e.g. "bert.pooler.dense.bias"
  std::vector<int64_t> shape;  // as HF stores it; nn.Linear weights are (out, in)
  int64_t offset = 0;          // in floats, from the start of the flat buffer
  int64_t numel = 0;
  int layer = 0;       // kEmbeddingsLayer, 0..L-1, pooler_layer, classifier_layer
  bool decays = true;  // false for biases and LayerNorm weights (HF Trainer's rule)
};

class ParamLayout {
 public:
  explicit ParamLayout(const BertConfig& config);

  const std::vector<ParamSpec>& specs() const { return specs_; }
  const ParamSpec* find(const std::string& name) const;   // nullptr if unknown
  const ParamSpec& at(const std::string& name) const;     // CPUFT_CHECK if unknown
  int64_t total_floats() const { return total_floats_; }  // buffer size, padding included
  // [begin, end) float range holding all parameters of `layer`.
  std::pair<int64_t, int64_t> layer_range(int layer) const;

 private:
  std::vector<ParamSpec> specs_;
  int64_t total_floats_ = 0;
};

// Maps a name from a checkpoint to the layout's name, or "" if it is not a model parameter.
// Accepts "bert."-prefixed (BertForSequenceClassification / BertForPreTraining) and bare
// (BertModel, sentence-transformers) names, and old LayerNorm names gamma/beta.
std::string canonical_param_name(const std::string& checkpoint_name);

}  // namespace cpuft
