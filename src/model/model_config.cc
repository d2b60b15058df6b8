#include "model/model_config.h"

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "model/family.h"

namespace cpuft {

namespace {

using nlohmann::json;

constexpr int64_t kMaxLabels = int64_t{1} << 20;

// Reads an optional field; the type must match (an integer for int64_t, any number for double).
struct FieldReader {
  const json& object;
  const std::string& label;

  const json* find(const char* name) const {
    auto it = object.find(name);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }
  void read(const char* name, int64_t& out, bool required) const {
    const json* value = find(name);
    CPUFT_REQUIRE(value != nullptr || !required, label, ": missing field '", name, "'");
    if (value == nullptr) return;
    CPUFT_REQUIRE(value->is_number_integer(), label, ": field '", name,
                  "' must be an integer, got ", value->dump());
    // Above INT64_MAX get<int64_t>() would wrap (18446744073709551615 would read as -1).
    CPUFT_REQUIRE(!value->is_number_unsigned() || value->get<uint64_t>() <= INT64_MAX, label,
                  ": field '", name, "' is out of range, got ", value->dump());
    out = value->get<int64_t>();
  }
  void read(const char* name, double& out) const {
    const json* value = find(name);
    if (value == nullptr) return;
    CPUFT_REQUIRE(value->is_number(), label, ": field '", name, "' must be a number, got ",
                  value->dump());
    out = value->get<double>();
  }
  void read(const char* name, std::string& out) const {
    const json* value = find(name);
    if (value == nullptr) return;
    CPUFT_REQUIRE(value->is_string(), label, ": field '", name, "' must be a string, got ",
                  value->dump());
    out = value->get<std::string>();
  }
  // Fields whose only supported value is `expected`.
  void require_value(const char* name, const json& expected) const {
    const json* value = find(name);
    if (value == nullptr) return;
    CPUFT_REQUIRE(*value == expected, label, ": field '", name, "' is ", value->dump(),
                  "; cpuft supports only ", expected.dump());
  }
};

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& label) {
  json object;
  try {
    object = json::parse(json_text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw Error(str(label, ": not valid JSON: ", e.what()));
  }
  CPUFT_REQUIRE(object.is_object(), label, ": must be a JSON object");

  const FieldReader reader{object, label};
  std::string model_type = "bert";  // folders written before model_type existed are BERT's
  reader.read("model_type", model_type);
  const FamilySpec* family = find_family(model_type);
  CPUFT_REQUIRE(family != nullptr, label, ": field 'model_type' is \"", model_type,
                "\"; cpuft supports ", supported_model_types());

  ModelConfig c;
  c.family = family->family;
  if (c.family == Family::distilbert) {
    // DistilBertConfig's names; its LayerNorms use eps 1e-12 whatever the config says, and it has
    // no token types. sinusoidal_pos_embds only changes a random initialisation in transformers
    // 5 (the table is trained either way), and checkpoints carry the table, so it changes nothing.
    reader.require_value("activation", "gelu");
    reader.read("vocab_size", c.vocab_size, true);
    reader.read("dim", c.hidden_size, true);
    reader.read("n_layers", c.num_hidden_layers, true);
    reader.read("n_heads", c.num_attention_heads, true);
    reader.read("hidden_dim", c.intermediate_size, true);
    reader.read("max_position_embeddings", c.max_position_embeddings, true);
    reader.read("dropout", c.hidden_dropout_prob);
    reader.read("attention_dropout", c.attention_probs_dropout_prob);
    c.classifier_dropout = 0.2;  // DistilBertConfig's default seq_classif_dropout
    reader.read("seq_classif_dropout", c.classifier_dropout);
    c.type_vocab_size = 0;
  } else {
    reader.require_value("hidden_act", "gelu");
    reader.require_value("position_embedding_type", "absolute");
    reader.require_value("is_decoder", false);
    reader.require_value("add_cross_attention", false);
    reader.read("vocab_size", c.vocab_size, true);
    reader.read("hidden_size", c.hidden_size, true);
    reader.read("num_hidden_layers", c.num_hidden_layers, true);
    reader.read("num_attention_heads", c.num_attention_heads, true);
    reader.read("intermediate_size", c.intermediate_size, true);
    reader.read("max_position_embeddings", c.max_position_embeddings, true);
    reader.read("type_vocab_size", c.type_vocab_size, false);
    reader.read("hidden_dropout_prob", c.hidden_dropout_prob);
    reader.read("attention_probs_dropout_prob", c.attention_probs_dropout_prob);
    reader.read("classifier_dropout", c.classifier_dropout);
    reader.read("layer_norm_eps", c.layer_norm_eps);
  }
  c.embedding_size = c.hidden_size;
  if (c.family == Family::electra) {
    c.embedding_size = 128;  // ElectraConfig's default
    reader.read("embedding_size", c.embedding_size, false);
  }
  // Each config class's default pad_token_id: 1 for RoBERTa and XLM-RoBERTa, else 0.
  c.pad_token_id = family->positions == PositionRule::after_padding_idx ? 1 : 0;
  if (object.contains("pad_token_id") && object["pad_token_id"].is_null())
    c.pad_token_id = -1;  // no padding row (transformers: padding_idx None)
  reader.read("pad_token_id", c.pad_token_id, false);
  CPUFT_REQUIRE(c.pad_token_id < c.vocab_size, label, ": field 'pad_token_id' (", c.pad_token_id,
                ") is not below vocab_size (", c.vocab_size, ")");
  reader.read("initializer_range", c.initializer_range);
  reader.read("problem_type", c.problem_type);

  // num_labels: explicit field, else the size of id2label, else 2 (transformers' default).
  const json* id2label = reader.find("id2label");
  if (id2label != nullptr) {
    CPUFT_REQUIRE(id2label->is_object(), label, ": field 'id2label' must be an object");
    c.num_labels = static_cast<int64_t>(id2label->size());
  }
  reader.read("num_labels", c.num_labels, false);
  CPUFT_REQUIRE(c.num_labels >= 1, label, ": field 'num_labels' must be >= 1");
  // id2label gets an entry per label: a bound keeps a stray huge number from allocating gigabytes.
  CPUFT_REQUIRE(c.num_labels <= kMaxLabels, label, ": field 'num_labels' (", c.num_labels,
                ") is above cpuft's limit of ", kMaxLabels);
  c.id2label.resize(static_cast<size_t>(c.num_labels));
  for (int64_t i = 0; i < c.num_labels; ++i) c.id2label[i] = str("LABEL_", i);
  if (id2label != nullptr && static_cast<int64_t>(id2label->size()) == c.num_labels) {
    for (const auto& [key, value] : id2label->items()) {
      int64_t index = -1;
      try {
        size_t used = 0;
        index = std::stoll(key, &used);
        if (used != key.size()) index = -1;
      } catch (const std::exception&) {
      }
      CPUFT_REQUIRE(index >= 0 && index < c.num_labels && value.is_string(), label,
                    ": field 'id2label' has a bad entry \"", key, "\": ", value.dump());
      c.id2label[static_cast<size_t>(index)] = value.get<std::string>();
    }
  }

  auto positive = [&](const char* name, int64_t v) {
    CPUFT_REQUIRE(v > 0, label, ": field '", name, "' must be positive, got ", v);
  };
  positive("vocab_size", c.vocab_size);
  positive("hidden_size", c.hidden_size);
  positive("num_hidden_layers", c.num_hidden_layers);
  positive("num_attention_heads", c.num_attention_heads);
  positive("intermediate_size", c.intermediate_size);
  positive("max_position_embeddings", c.max_position_embeddings);
  if (family->token_types) positive("type_vocab_size", c.type_vocab_size);
  positive("embedding_size", c.embedding_size);
  if (family->positions == PositionRule::after_padding_idx) {
    CPUFT_REQUIRE(c.pad_token_id >= 0 && c.pad_token_id < c.vocab_size, label,
                  ": field 'pad_token_id' (", c.pad_token_id,
                  ") must be a token id below vocab_size");
    CPUFT_REQUIRE(c.max_position_embeddings > c.pad_token_id + 1, label,
                  ": field 'max_position_embeddings' (", c.max_position_embeddings,
                  ") leaves no position after pad_token_id + 1 (", c.pad_token_id + 1,
                  "), where this family's positions start");
  }
  // The parameter layout counts floats in int64 and layers in int, one table row per layer: sizes
  // beyond any real encoder (the largest have 48 layers and ~10^10 parameters) are refused here,
  // in double, before anything downstream overflows or a table of 10^18 layers is built.
  CPUFT_REQUIRE(c.num_hidden_layers <= kMaxLayers, label, ": field 'num_hidden_layers' (",
                c.num_hidden_layers, ") is above cpuft's limit of ", kMaxLayers);
  auto f = [](int64_t v) { return static_cast<double>(v); };
  const double d = f(c.hidden_size), e = f(c.embedding_size);
  const double parameters =
      (f(c.vocab_size) + f(c.max_position_embeddings) + f(c.type_vocab_size)) * e +
      f(c.num_hidden_layers) * (4 * d * d + 2 * d * f(c.intermediate_size)) + d * e + d * d +
      d * f(c.num_labels);
  CPUFT_REQUIRE(parameters <= kMaxParameters, label, ": the sizes make a model of ~", parameters,
                " parameters, above cpuft's limit of ", kMaxParameters);
  CPUFT_REQUIRE(c.hidden_size % c.num_attention_heads == 0, label, ": field 'hidden_size' (",
                c.hidden_size, ") is not a multiple of 'num_attention_heads' (",
                c.num_attention_heads, ")");
  auto probability = [&](const char* name, double p) {
    CPUFT_REQUIRE(p >= 0 && p < 1, label, ": field '", name, "' must be in [0, 1), got ", p);
  };
  probability("hidden_dropout_prob", c.hidden_dropout_prob);
  probability("attention_probs_dropout_prob", c.attention_probs_dropout_prob);
  if (c.classifier_dropout >= 0) probability("classifier_dropout", c.classifier_dropout);
  CPUFT_REQUIRE(c.layer_norm_eps > 0, label, ": field 'layer_norm_eps' must be positive");
  CPUFT_REQUIRE(c.problem_type.empty() || c.problem_type == "single_label_classification" ||
                    c.problem_type == "regression",
                label, ": field 'problem_type' is \"", c.problem_type,
                "\"; cpuft supports single_label_classification and regression");
  CPUFT_REQUIRE(c.problem_type != "regression" || c.num_labels == 1, label,
                ": problem_type regression needs num_labels 1, got ", c.num_labels);
  return c;
}

int64_t ModelConfig::max_sequence_length() const {
  return family_spec(family).positions == PositionRule::after_padding_idx
             ? max_position_embeddings - pad_token_id - 1
             : max_position_embeddings;
}

ModelConfig load_model_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CPUFT_REQUIRE(in.good(), path, ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_model_config(text.str(), path);
}

}  // namespace cpuft
