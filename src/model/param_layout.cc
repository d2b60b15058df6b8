#include "model/param_layout.h"

#include "core/check.h"

namespace cpuft {

int pooler_layer(const BertConfig& config) {
  return static_cast<int>(config.num_hidden_layers);
}
int classifier_layer(const BertConfig& config) {
  return static_cast<int>(config.num_hidden_layers) + 1;
}

namespace {

// Tensors start on 64-byte boundaries (16 floats) so that vector loads of a row start aligned,
// except where `packed_with_previous` asks for adjacency (QKV).
constexpr int64_t kAlignFloats = 16;

bool is_decayed(const std::string& name) {
  // HF Trainer: no weight decay for biases and LayerNorm parameters.
  const bool bias = name.ends_with(".bias");
  const bool layer_norm = name.find("LayerNorm.") != std::string::npos;
  return !bias && !layer_norm;
}

}  // namespace

ParamLayout::ParamLayout(const BertConfig& c) {
  const int64_t D = c.hidden_size, F = c.intermediate_size;
  int64_t cursor = 0;
  auto add = [&](std::string name, std::vector<int64_t> shape, int layer,
                 bool packed_with_previous = false) {
    if (!packed_with_previous) cursor = (cursor + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    const bool decays = is_decayed(name);
    specs_.push_back(ParamSpec{std::move(name), std::move(shape), cursor, numel, layer, decays});
    cursor += numel;
  };

  add("bert.embeddings.word_embeddings.weight", {c.vocab_size, D}, kEmbeddingsLayer);
  add("bert.embeddings.position_embeddings.weight", {c.max_position_embeddings, D},
      kEmbeddingsLayer);
  add("bert.embeddings.token_type_embeddings.weight", {c.type_vocab_size, D}, kEmbeddingsLayer);
  add("bert.embeddings.LayerNorm.weight", {D}, kEmbeddingsLayer);
  add("bert.embeddings.LayerNorm.bias", {D}, kEmbeddingsLayer);
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = str("bert.encoder.layer.", l, ".");
    add(p + "attention.self.query.weight", {D, D}, l);
    add(p + "attention.self.key.weight", {D, D}, l, true);
    add(p + "attention.self.value.weight", {D, D}, l, true);
    add(p + "attention.self.query.bias", {D}, l);
    add(p + "attention.self.key.bias", {D}, l, true);
    add(p + "attention.self.value.bias", {D}, l, true);
    add(p + "attention.output.dense.weight", {D, D}, l);
    add(p + "attention.output.dense.bias", {D}, l);
    add(p + "attention.output.LayerNorm.weight", {D}, l);
    add(p + "attention.output.LayerNorm.bias", {D}, l);
    add(p + "intermediate.dense.weight", {F, D}, l);
    add(p + "intermediate.dense.bias", {F}, l);
    add(p + "output.dense.weight", {D, F}, l);
    add(p + "output.dense.bias", {D}, l);
    add(p + "output.LayerNorm.weight", {D}, l);
    add(p + "output.LayerNorm.bias", {D}, l);
  }
  add("bert.pooler.dense.weight", {D, D}, pooler_layer(c));
  add("bert.pooler.dense.bias", {D}, pooler_layer(c));
  add("classifier.weight", {c.num_labels, D}, classifier_layer(c));
  add("classifier.bias", {c.num_labels}, classifier_layer(c));
  total_floats_ = (cursor + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

const ParamSpec* ParamLayout::find(const std::string& name) const {
  for (const ParamSpec& spec : specs_)
    if (spec.name == name) return &spec;
  return nullptr;
}

const ParamSpec& ParamLayout::at(const std::string& name) const {
  const ParamSpec* spec = find(name);
  CPUFT_CHECK(spec != nullptr, "unknown parameter ", name);
  return *spec;
}

std::pair<int64_t, int64_t> ParamLayout::layer_range(int layer) const {
  int64_t begin = -1, end = -1;
  for (const ParamSpec& spec : specs_) {
    if (spec.layer != layer) continue;
    if (begin < 0) begin = spec.offset;
    end = spec.offset + spec.numel;
  }
  CPUFT_CHECK(begin >= 0, "no parameters in layer ", layer);
  return {begin, end};
}

std::string canonical_param_name(const std::string& checkpoint_name) {
  std::string name = checkpoint_name;
  // Old TF-converted checkpoints: LayerNorm.gamma / LayerNorm.beta.
  auto replace_suffix = [&](const std::string& from, const std::string& to) {
    if (name.ends_with(from)) name = name.substr(0, name.size() - from.size()) + to;
  };
  replace_suffix("LayerNorm.gamma", "LayerNorm.weight");
  replace_suffix("LayerNorm.beta", "LayerNorm.bias");
  if (name.starts_with("classifier.")) return name;
  if (name.starts_with("bert.")) name = name.substr(5);
  if (name.starts_with("embeddings.") || name.starts_with("encoder.") ||
      name.starts_with("pooler.")) {
    // position_ids / token_type_ids are buffers, not parameters.
    if (name.ends_with("position_ids") || name.ends_with("token_type_ids")) return "";
    return "bert." + name;
  }
  return "";
}

}  // namespace cpuft
