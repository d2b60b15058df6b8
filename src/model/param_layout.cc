#include "model/param_layout.h"

#include "core/check.h"
#include "model/family.h"
#include "model/model_params.h"

namespace cpuft {

int pooler_layer(const ModelConfig& config) {
  return static_cast<int>(config.num_hidden_layers);
}
int classifier_layer(const ModelConfig& config) {
  return static_cast<int>(config.num_hidden_layers) + 1;
}

namespace {

// Tensors start on 64-byte boundaries (16 floats) so that vector loads of a row start aligned,
// except where an entry is packed with the previous one (QKV).
constexpr int64_t kAlignFloats = 16;

int64_t align(int64_t floats) {
  return (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

}  // namespace

double parameter_count(const ModelConfig& c) {
  const FamilyParamTables& tables = family_spec(c.family).tables;
  auto scope = [&](const auto& entries, int64_t layer) {
    double n = 0;
    for (const auto& e : entries) {
      if (!present(e, c, layer)) continue;
      double numel = static_cast<double>(extent(e.shape[0], c));
      for (size_t d = 1; d < e.shape.size(); ++d)
        if (e.shape[d] != Dim::none) numel *= static_cast<double>(extent(e.shape[d], c));
      n += numel;
    }
    return n;
  };
  // Layer 1 stands for every layer but the first (ModernBERT's layer 0 has no attn_norm).
  const double layers = c.num_hidden_layers > 0 ? scope(tables.layer, 0) +
                                                      static_cast<double>(c.num_hidden_layers - 1) *
                                                          scope(tables.layer, 1)
                                                : 0.0;
  return scope(tables.embeddings, -1) + layers + scope(tables.head, -1);
}

std::string layer_prefix(const FamilyParamTables& tables, int64_t layer) {
  std::string prefix = tables.layer_prefix;
  const size_t at = prefix.find("{}");
  CPUFT_CHECK(at != std::string::npos, "layer prefix without {}: ", prefix);
  return prefix.replace(at, 2, std::to_string(layer));
}

ParamLayout::ParamLayout(const ModelConfig& c)
    : tables_(&family_spec(c.family).tables), layer_count_(c.num_hidden_layers) {
  // parse_model_config refuses these sizes; a config built in code meets the same limits here.
  CPUFT_REQUIRE(c.num_hidden_layers <= kMaxLayers, "num_hidden_layers ", c.num_hidden_layers,
                " is above cpuft's limit of ", kMaxLayers);
  const double parameters = parameter_count(c);
  CPUFT_REQUIRE(parameters <= kMaxParameters, "the sizes make a model of ~", parameters,
                " parameters, above cpuft's limit of ", kMaxParameters);
  const FamilyParamTables& tables = *tables_;
  int64_t cursor = 0;
  auto add_scope = [&](const std::string& prefix, const auto& entries, int layer) {
    for (const auto& e : entries) {
      if (!present(e, c, layer)) continue;
      if (!e.packed_with_previous) cursor = align(cursor);
      std::vector<int64_t> shape{extent(e.shape[0], c)};
      for (size_t d = 1; d < e.shape.size(); ++d)
        if (e.shape[d] != Dim::none) shape.push_back(extent(e.shape[d], c));
      int64_t numel = 1;
      for (int64_t d : shape) numel *= d;
      specs_.push_back(ParamSpec{prefix + e.name, std::move(shape), cursor, numel,
                                 layer + e.head_layer, e.kind, decays(e.kind)});
      cursor += numel;
    }
  };
  add_scope(tables.embeddings_prefix, tables.embeddings, kEmbeddingsLayer);
  for (int l = 0; l < c.num_hidden_layers; ++l) add_scope(layer_prefix(tables, l), tables.layer, l);
  add_scope(tables.head_prefix, tables.head, pooler_layer(c));
  total_floats_ = align(cursor);
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

int64_t ParamLayout::ffn_begin(int layer) const {
  CPUFT_CHECK(layer >= 0 && layer < layer_count_, "no encoder layer ", layer);
  for (const auto& entry : tables_->layer) {
    if (entry.view != &LayerParams::ffn_in_w && entry.view != &LayerParams::ffn_ln_w) continue;
    return at(layer_prefix(*tables_, layer) + entry.name).offset;
  }
  CPUFT_CHECK(false, "the layer table has no FFN block");
  return 0;
}

std::string canonical_param_name(const std::string& checkpoint_name,
                                 const FamilyParamTables& tables) {
  std::string name = checkpoint_name;
  // Old TF-converted checkpoints: LayerNorm.gamma / LayerNorm.beta.
  auto replace_suffix = [&](const std::string& from, const std::string& to) {
    if (name.ends_with(from)) name = name.substr(0, name.size() - from.size()) + to;
  };
  replace_suffix("LayerNorm.gamma", "LayerNorm.weight");
  replace_suffix("LayerNorm.beta", "LayerNorm.bias");
  // position_ids / token_type_ids are buffers, not parameters.
  if (name.ends_with("position_ids") || name.ends_with("token_type_ids")) return "";
  const std::string base = tables.embeddings_prefix;
  if (name.starts_with(base)) return name;
  // A head tensor by its own name (DeBERTa's ContextPooler is "pooler.dense", beside the base
  // model, where BERT's pooler is "bert.pooler.dense").
  for (const auto& e : tables.head)
    if (name == std::string(tables.head_prefix) + e.name) return name;
  for (const char* scope : {"embeddings.", "embeddings_project.", "encoder.", "transformer.",
                            "pooler.", "layers.", "final_norm."})
    if (name.starts_with(scope)) return base + name;
  return name;
}

bool contradicts_config(const std::string& canonical_name, const FamilyParamTables& tables) {
  const std::string layer_stem =
      std::string(tables.layer_prefix).substr(0, std::string(tables.layer_prefix).find("{}"));
  const std::string embeddings = std::string(tables.embeddings_prefix) + "embeddings";
  return canonical_name.starts_with(layer_stem) || canonical_name.starts_with(embeddings);
}

}  // namespace cpuft
