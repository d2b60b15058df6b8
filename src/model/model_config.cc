#include "model/model_config.h"

#include <cctype>
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

// ModernBertConfig (transformers 5.24) into the shared fields; what cpuft does not implement
// (biases, another activation, scaled rotary embeddings) is refused naming the field.
void parse_modernbert(const FieldReader& reader, ModelConfig& c) {
  const std::string& label = reader.label;
  for (const char* name : {"norm_bias", "attention_bias", "mlp_bias", "classifier_bias"})
    reader.require_value(name, false);
  reader.require_value("hidden_activation", "gelu");
  reader.require_value("classifier_activation", "gelu");
  reader.require_value("rope_scaling", nullptr);
  reader.read("vocab_size", c.vocab_size, true);
  reader.read("hidden_size", c.hidden_size, true);
  reader.read("num_hidden_layers", c.num_hidden_layers, true);
  reader.read("num_attention_heads", c.num_attention_heads, true);
  reader.read("intermediate_size", c.intermediate_size, true);
  c.max_position_embeddings = 8192;
  reader.read("max_position_embeddings", c.max_position_embeddings, false);
  c.type_vocab_size = 0;
  c.layer_norm_eps = 1e-5;
  reader.read("norm_eps", c.layer_norm_eps);
  c.hidden_dropout_prob = 0;
  reader.read("mlp_dropout", c.hidden_dropout_prob);
  c.attention_probs_dropout_prob = 0;
  reader.read("attention_dropout", c.attention_probs_dropout_prob);
  reader.read("embedding_dropout", c.embedding_dropout);
  CPUFT_REQUIRE(c.embedding_dropout >= 0 && c.embedding_dropout < 1, label,
                ": field 'embedding_dropout' must be in [0, 1), got ", c.embedding_dropout);
  c.classifier_dropout = 0;
  reader.read("classifier_dropout", c.classifier_dropout);
  c.local_attention = 128;
  reader.read("local_attention", c.local_attention, false);
  CPUFT_REQUIRE(c.local_attention >= 0, label, ": field 'local_attention' must be >= 0, got ",
                c.local_attention);
  // HF: a null cutoff factor means 3.
  if (reader.object.contains("initializer_cutoff_factor") &&
      reader.object["initializer_cutoff_factor"].is_null())
    c.initializer_cutoff_factor = 3;
  reader.read("initializer_cutoff_factor", c.initializer_cutoff_factor);
  CPUFT_REQUIRE(c.initializer_cutoff_factor > 0, label,
                ": field 'initializer_cutoff_factor' must be positive");
  std::string pooling = "cls";
  reader.read("classifier_pooling", pooling);
  CPUFT_REQUIRE(pooling == "cls" || pooling == "mean", label, ": field 'classifier_pooling' is \"",
                pooling, "\"; cpuft supports \"cls\" and \"mean\"");
  c.mean_pooling = pooling == "mean";

  // Which layers slide: layer_types (transformers 5), else every global_attn_every_n_layers-th
  // layer, from layer 0, is full (the 4.x field, still read by 5.x).
  CPUFT_REQUIRE(c.num_hidden_layers > 0 && c.num_hidden_layers <= kMaxLayers, label,
                ": field 'num_hidden_layers' must be in [1, ", kMaxLayers, "], got ",
                c.num_hidden_layers);
  c.sliding_layers.assign(static_cast<size_t>(c.num_hidden_layers), false);
  if (const json* types = reader.find("layer_types")) {
    CPUFT_REQUIRE(types->is_array() && static_cast<int64_t>(types->size()) == c.num_hidden_layers,
                  label, ": field 'layer_types' must list one type per layer (",
                  c.num_hidden_layers, ")");
    for (size_t l = 0; l < types->size(); ++l) {
      const json& t = (*types)[l];
      CPUFT_REQUIRE(t == "full_attention" || t == "sliding_attention", label,
                    ": field 'layer_types' has ", t.dump(),
                    "; cpuft supports \"full_attention\" and \"sliding_attention\"");
      c.sliding_layers[l] = t == "sliding_attention";
    }
  } else {
    int64_t every = 3;
    reader.read("global_attn_every_n_layers", every, false);
    CPUFT_REQUIRE(every > 0, label, ": field 'global_attn_every_n_layers' must be positive");
    for (int64_t l = 0; l < c.num_hidden_layers; ++l)
      c.sliding_layers[static_cast<size_t>(l)] = l % every != 0;
  }

  // Rotary bases: rope_parameters (transformers 5), else global_rope_theta / local_rope_theta.
  c.global_rope_theta = 160000;
  c.local_rope_theta = 10000;
  reader.read("global_rope_theta", c.global_rope_theta);
  reader.read("local_rope_theta", c.local_rope_theta);
  if (const json* rope = reader.find("rope_parameters")) {
    CPUFT_REQUIRE(rope->is_object(), label, ": field 'rope_parameters' must be an object");
    auto read_theta = [&](const char* type, double& theta) {
      auto it = rope->find(type);
      if (it == rope->end() || it->is_null()) return;
      const FieldReader inner{*it, label};
      CPUFT_REQUIRE(it->is_object(), label, ": field 'rope_parameters.", type,
                    "' must be an object");
      inner.require_value("rope_type", "default");
      inner.read("rope_theta", theta);
    };
    read_theta("full_attention", c.global_rope_theta);
    read_theta("sliding_attention", c.local_rope_theta);
  }
  CPUFT_REQUIRE(c.global_rope_theta > 0 && c.local_rope_theta > 0, label,
                ": the rotary bases (rope_theta) must be positive");
  CPUFT_REQUIRE(c.hidden_size > 0 && c.num_attention_heads > 0 &&
                    c.hidden_size % c.num_attention_heads == 0 &&
                    (c.hidden_size / c.num_attention_heads) % 2 == 0,
                label, ": rotary embeddings need an even head size (hidden_size / ",
                "num_attention_heads), got ", c.hidden_size, " / ", c.num_attention_heads);
}

// "a|B | c" -> {"a", "b", "c"}: DeBERTa's bar-separated lists, lower-cased and trimmed, as
// transformers splits them.
std::vector<std::string> split_bar_list(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t bar = text.find('|', start);
    if (bar == std::string::npos) bar = text.size();
    std::string part = text.substr(start, bar - start);
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    for (char& ch : part) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!part.empty()) parts.push_back(part);
    start = bar + 1;
  }
  return parts;
}

// DebertaV2Config (transformers 5.24) into the shared fields. What cpuft does not implement (a
// grouped convolution, an embedding projection, other activations) is refused naming the field.
void parse_deberta_v2(const FieldReader& reader, ModelConfig& c) {
  const std::string& label = reader.label;
  reader.require_value("hidden_act", "gelu");
  reader.require_value("pooler_hidden_act", "gelu");
  reader.read("vocab_size", c.vocab_size, true);
  reader.read("hidden_size", c.hidden_size, true);
  reader.read("num_hidden_layers", c.num_hidden_layers, true);
  reader.read("num_attention_heads", c.num_attention_heads, true);
  reader.read("intermediate_size", c.intermediate_size, true);
  c.max_position_embeddings = 512;
  reader.read("max_position_embeddings", c.max_position_embeddings, false);
  c.type_vocab_size = 0;
  reader.read("type_vocab_size", c.type_vocab_size, false);
  CPUFT_REQUIRE(c.type_vocab_size >= 0, label, ": field 'type_vocab_size' must be >= 0");
  reader.read("hidden_dropout_prob", c.hidden_dropout_prob);
  reader.read("attention_probs_dropout_prob", c.attention_probs_dropout_prob);
  reader.read("cls_dropout", c.classifier_dropout);  // null or absent: hidden_dropout_prob
  reader.read("pooler_dropout", c.pooler_dropout);
  CPUFT_REQUIRE(c.pooler_dropout >= 0 && c.pooler_dropout < 1, label,
                ": field 'pooler_dropout' must be in [0, 1), got ", c.pooler_dropout);
  c.layer_norm_eps = 1e-7;
  reader.read("layer_norm_eps", c.layer_norm_eps);
  // Another pooler width is not implemented (embedding_size is read below, as ELECTRA's: the
  // tables are E wide and embed_proj brings them to D).
  {
    int64_t width = c.hidden_size;
    reader.read("pooler_hidden_size", width, false);
    CPUFT_REQUIRE(width == c.hidden_size, label, ": field 'pooler_hidden_size' (", width,
                  ") differs from hidden_size (", c.hidden_size, "); cpuft supports only equal");
  }
  if (c.num_attention_heads > 0) {
    int64_t head_size = c.hidden_size / c.num_attention_heads;
    reader.read("attention_head_size", head_size, false);
    CPUFT_REQUIRE(head_size * c.num_attention_heads == c.hidden_size, label,
                  ": field 'attention_head_size' (", head_size,
                  ") times num_attention_heads is not hidden_size; cpuft supports only that");
  }
  auto read_bool = [&](const char* name, bool& out) {
    const json* value = reader.find(name);
    if (value == nullptr) return;
    CPUFT_REQUIRE(value->is_boolean(), label, ": field '", name, "' must be true or false, got ",
                  value->dump());
    out = value->get<bool>();
  };
  read_bool("position_biased_input", c.absolute_positions);
  read_bool("relative_attention", c.relative_attention);
  // pos_att_type: a list, or a string "p2c|c2p" (older configs).
  std::vector<std::string> types;
  if (const json* value = reader.find("pos_att_type")) {
    if (value->is_string()) {
      types = split_bar_list(value->get<std::string>());
    } else {
      CPUFT_REQUIRE(value->is_array(), label,
                    ": field 'pos_att_type' must be a list or a string, got ", value->dump());
      for (const json& t : *value) {
        CPUFT_REQUIRE(t.is_string(), label, ": field 'pos_att_type' has ", t.dump());
        types.push_back(t.get<std::string>());
      }
    }
  }
  for (const std::string& t : types) {
    CPUFT_REQUIRE(t == "c2p" || t == "p2c", label, ": field 'pos_att_type' has \"", t,
                  "\"; cpuft supports \"c2p\" and \"p2c\"");
    (t == "c2p" ? c.content_to_position : c.position_to_content) = true;
  }
  if (c.relative_attention && (c.content_to_position || c.position_to_content)) {
    c.share_att_key = false;  // HF's default
    read_bool("share_att_key", c.share_att_key);
  }
  c.position_buckets = -1;
  reader.read("position_buckets", c.position_buckets, false);
  c.max_relative_positions = -1;
  reader.read("max_relative_positions", c.max_relative_positions, false);
  if (c.max_relative_positions < 1) c.max_relative_positions = c.max_position_embeddings;
  if (c.position_buckets > 0) {
    // make_log_bucket_position divides by log((max_relative_positions - 1) / (buckets / 2)).
    CPUFT_REQUIRE(c.position_buckets >= 2 && c.max_relative_positions - 1 > c.position_buckets / 2,
                  label, ": field 'position_buckets' (", c.position_buckets,
                  ") must be >= 2 and below 2 (max_relative_positions - 1) (",
                  c.max_relative_positions, ")");
  }
  CPUFT_REQUIRE(c.relative_span() <= (int64_t{1} << 20), label,
                ": the relative span (position_buckets or max_relative_positions) is above ",
                int64_t{1} << 20);
  std::string norm = "none";
  reader.read("norm_rel_ebd", norm);
  for (const std::string& part : split_bar_list(norm)) {
    CPUFT_REQUIRE(part == "layer_norm" || part == "none", label, ": field 'norm_rel_ebd' has \"",
                  part, "\"; cpuft supports \"layer_norm\" and \"none\"");
    if (part == "layer_norm") c.relative_norm = true;
  }
  // ConvLayer: nn.Conv1d(D, D, k, padding (k - 1) / 2, groups); an even k would give T - 1 rows.
  reader.read("conv_kernel_size", c.conv_kernel_size, false);
  CPUFT_REQUIRE(c.conv_kernel_size >= 0 && c.conv_kernel_size <= 63, label,
                ": field 'conv_kernel_size' must be in [0, 63], got ", c.conv_kernel_size);
  if (c.conv_kernel_size > 0) {
    CPUFT_REQUIRE(c.conv_kernel_size % 2 == 1, label, ": field 'conv_kernel_size' (",
                  c.conv_kernel_size,
                  ") is even; transformers' ConvLayer then makes one row fewer than it reads");
    int64_t groups = 1;
    reader.read("conv_groups", groups, false);
    CPUFT_REQUIRE(groups == 1, label, ": field 'conv_groups' is ", groups,
                  "; cpuft supports only 1");
    reader.read("conv_act", c.conv_act);
    CPUFT_REQUIRE(c.conv_act == "tanh" || c.conv_act == "gelu" || c.conv_act == "relu", label,
                  ": field 'conv_act' is \"", c.conv_act,
                  "\"; cpuft supports \"tanh\", \"gelu\" and \"relu\"");
  }
  // HF would create that LayerNorm and never use it: a parameter without a gradient.
  CPUFT_REQUIRE(!c.relative_norm || c.relative_attention, label,
                ": field 'norm_rel_ebd' asks for a LayerNorm of relative embeddings, but "
                "'relative_attention' is false");
}

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
  } else if (c.family == Family::modernbert) {
    parse_modernbert(reader, c);
  } else if (c.family == Family::deberta_v2) {
    parse_deberta_v2(reader, c);
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
  // ELECTRA's and DeBERTa's embeddings may be narrower than the layers (a (D, E) projection).
  c.embedding_size = c.family == Family::electra ? 128 : c.hidden_size;  // ElectraConfig's default
  if (c.family == Family::electra || c.family == Family::deberta_v2)
    reader.read("embedding_size", c.embedding_size, false);
  // Each config class's default pad_token_id: 1 for RoBERTa and XLM-RoBERTa, 50283 for
  // ModernBERT, else 0.
  c.pad_token_id = family->positions == PositionRule::after_padding_idx ? 1 : 0;
  if (c.family == Family::modernbert) c.pad_token_id = 50283;
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
  if (family->token_types && c.family != Family::deberta_v2)  // DeBERTa-v3 has none: 0
    positive("type_vocab_size", c.type_vocab_size);
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
