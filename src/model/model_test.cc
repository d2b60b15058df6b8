#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <vector>

#include "core/check.h"
#include "model/bf16_weights.h"
#include "model/family.h"
#include "model/model_config.h"
#include "model/model_params.h"
#include "model/param_layout.h"

namespace cpuft {
namespace {

const char* kTinyConfig = R"({
  "model_type": "bert", "vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "intermediate_size": 37, "max_position_embeddings": 64,
  "hidden_act": "gelu", "layer_norm_eps": 1e-12, "num_labels": 3,
  "architectures": ["BertForSequenceClassification"], "transformers_version": "4.8.2"
})";

std::string expect_error(const std::string& json) {
  try {
    parse_model_config(json, "cfg.json");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << json;
  return "";
}

TEST(ModelConfig, ParsesFieldsAndDefaults) {
  const ModelConfig c = parse_model_config(kTinyConfig, "cfg.json");
  EXPECT_EQ(c.vocab_size, 99);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.head_dim(), 8);
  EXPECT_EQ(c.intermediate_size, 37);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_DOUBLE_EQ(c.hidden_dropout_prob, 0.1);
  EXPECT_EQ(c.num_labels, 3);
  EXPECT_EQ(c.id2label[2], "LABEL_2");
  EXPECT_FLOAT_EQ(c.effective_classifier_dropout(), 0.1f);
}

TEST(ModelConfig, NumLabelsFromId2Label) {
  const ModelConfig c = parse_model_config(
      R"({"vocab_size": 9, "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2,
          "intermediate_size": 8, "max_position_embeddings": 8, "classifier_dropout": 0.3,
          "id2label": {"0": "not_equivalent", "1": "equivalent"}})",
      "cfg.json");
  EXPECT_EQ(c.num_labels, 2);
  EXPECT_EQ(c.id2label[1], "equivalent");
  EXPECT_FLOAT_EQ(c.effective_classifier_dropout(), 0.3f);
}

TEST(ModelConfig, ErrorsNameTheField) {
  EXPECT_NE(expect_error("{").find("cfg.json: not valid JSON"), std::string::npos);
  EXPECT_NE(expect_error("[1]").find("must be a JSON object"), std::string::npos);
  EXPECT_EQ(expect_error(R"({"vocab_size": 9})"), "cfg.json: missing field 'hidden_size'");
  EXPECT_NE(expect_error(R"({"vocab_size": "9"})").find("field 'vocab_size' must be an integer"),
            std::string::npos);
  std::string wrong_act = kTinyConfig;
  wrong_act.replace(wrong_act.find("\"gelu\""), 6, "\"relu\"");
  EXPECT_NE(expect_error(wrong_act).find("field 'hidden_act'"), std::string::npos);
  std::string bad_heads = kTinyConfig;
  bad_heads.replace(bad_heads.find("\"num_attention_heads\": 4"), 24, "\"num_attention_heads\": 5");
  EXPECT_NE(expect_error(bad_heads).find("not a multiple"), std::string::npos);
  std::string bad_dropout = kTinyConfig;
  bad_dropout.replace(bad_dropout.find("\"num_labels\""), 12,
                      "\"hidden_dropout_prob\": 1.5, \"num_labels\"");
  EXPECT_NE(expect_error(bad_dropout).find("hidden_dropout_prob"), std::string::npos);
}

// Found by fuzz_model_config: inputs that escaped as other exceptions or drove an allocation.
TEST(ModelConfig, RefusesOutOfRangeNumbers) {
  std::string huge_float = kTinyConfig;  // nlohmann throws out_of_range, not parse_error
  huge_float.replace(huge_float.find("1e-12"), 5, "31e3087");
  EXPECT_NE(expect_error(huge_float).find("cfg.json: not valid JSON"), std::string::npos);
  std::string huge_labels = kTinyConfig;  // id2label would get 2^62 entries
  huge_labels.replace(huge_labels.find("\"num_labels\": 3"), 15,
                      "\"num_labels\": 4611686018427387904");
  EXPECT_EQ(expect_error(huge_labels),
            "cfg.json: field 'num_labels' (4611686018427387904) is above cpuft's limit of 1048576");
  std::string wrapped = kTinyConfig;  // above INT64_MAX: read as -1 (no padding row) before
  wrapped.replace(wrapped.find("\"num_labels\""), 12,
                  "\"pad_token_id\": 18446744073709551615, \"num_labels\"");
  EXPECT_EQ(expect_error(wrapped),
            "cfg.json: field 'pad_token_id' is out of range, got 18446744073709551615");
  // Sizes whose parameter layout would overflow int64 (or build 2^62 layer tables).
  std::string deep = kTinyConfig;
  deep.replace(deep.find("\"num_hidden_layers\": 2"), 22,
               "\"num_hidden_layers\": 4611686018427387904");
  EXPECT_EQ(expect_error(deep),
            "cfg.json: field 'num_hidden_layers' (4611686018427387904) is above cpuft's limit of "
            "10000");
  std::string wide = kTinyConfig;
  wide.replace(wide.find("\"vocab_size\": 99"), 16, "\"vocab_size\": 9223372036854775807");
  EXPECT_NE(expect_error(wide).find("parameters, above cpuft's limit of"), std::string::npos);
}

TEST(ParamLayout, TableIsCompleteOrderedAndNonOverlapping) {
  const ModelConfig c = parse_model_config(kTinyConfig, "cfg.json");
  const ParamLayout layout(c);
  // 5 embeddings + 16 per layer + 2 pooler + 2 classifier, as in HF's named_parameters().
  EXPECT_EQ(layout.specs().size(), 5u + 16u * 2u + 4u);
  int64_t end = 0, total = 0;
  std::set<std::string> names;
  for (const ParamSpec& spec : layout.specs()) {
    EXPECT_GE(spec.offset, end) << spec.name;
    end = spec.offset + spec.numel;
    total += spec.numel;
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
  }
  EXPECT_LE(end, layout.total_floats());
  EXPECT_LT(layout.total_floats() - total, 16 * 40);  // alignment padding only
  EXPECT_EQ(layout.at("classifier.weight").shape, (std::vector<int64_t>{3, 32}));
  EXPECT_EQ(layout.at("bert.encoder.layer.1.intermediate.dense.weight").shape,
            (std::vector<int64_t>{37, 32}));
  EXPECT_EQ(layout.at("bert.encoder.layer.1.output.dense.weight").layer, 1);
  EXPECT_EQ(layout.at("bert.pooler.dense.weight").layer, 2);
  EXPECT_EQ(layout.at("classifier.bias").layer, 3);
}

TEST(ParamLayout, DecayMaskFollowsHfTrainer) {
  const ParamLayout layout(parse_model_config(kTinyConfig, "cfg.json"));
  EXPECT_TRUE(layout.at("bert.embeddings.word_embeddings.weight").decays);
  EXPECT_TRUE(layout.at("bert.encoder.layer.0.attention.self.key.weight").decays);
  EXPECT_TRUE(layout.at("classifier.weight").decays);
  EXPECT_FALSE(layout.at("bert.encoder.layer.0.attention.self.key.bias").decays);
  EXPECT_FALSE(layout.at("bert.embeddings.LayerNorm.weight").decays);
  EXPECT_FALSE(layout.at("bert.encoder.layer.1.output.LayerNorm.weight").decays);
}

TEST(ParamLayout, QkvIsOnePackedMatrix) {
  const ModelConfig c = parse_model_config(kTinyConfig, "cfg.json");
  const ParamLayout layout(c);
  const int64_t D = c.hidden_size;
  const auto& q = layout.at("bert.encoder.layer.1.attention.self.query.weight");
  EXPECT_EQ(layout.at("bert.encoder.layer.1.attention.self.key.weight").offset, q.offset + D * D);
  EXPECT_EQ(layout.at("bert.encoder.layer.1.attention.self.value.weight").offset,
            q.offset + 2 * D * D);
  const auto& qb = layout.at("bert.encoder.layer.1.attention.self.query.bias");
  EXPECT_EQ(layout.at("bert.encoder.layer.1.attention.self.value.bias").offset, qb.offset + 2 * D);
  std::vector<float> buffer(static_cast<size_t>(layout.total_floats()));
  const ModelParams p = bind_params(layout, c, buffer.data());
  EXPECT_EQ(p.layers[1].qkv_w, buffer.data() + q.offset);
  EXPECT_EQ(p.head_out_b, buffer.data() + layout.at("classifier.bias").offset);
}

TEST(ParamLayout, LayerRangesAreContiguousAndInBackwardOrder) {
  const ModelConfig c = parse_model_config(kTinyConfig, "cfg.json");
  const ParamLayout layout(c);
  auto [e0, e1] = layout.layer_range(kEmbeddingsLayer);
  auto [a0, a1] = layout.layer_range(0);
  auto [b0, b1] = layout.layer_range(1);
  auto [c0, c1] = layout.layer_range(classifier_layer(c));
  EXPECT_EQ(e0, 0);
  EXPECT_LE(e1, a0);
  EXPECT_LE(a1, b0);
  EXPECT_LE(b1, c0);
  EXPECT_LE(c1, layout.total_floats());
}

// ParamLayout::ffn_begin's promise, which the FFN blocks' early buckets rest on (grad_listener.h):
// in every family's layer table, from the first FFN entry on there are only FFN tensors (and
// tensors packed with one), so [ffn_begin, end) holds nothing whose gradient the rest of the
// layer's backward still writes.
TEST(ParamLayout, EveryFamilyListsItsFfnBlockLastInALayer) {
  for (const Family family :
       {Family::bert, Family::distilbert, Family::roberta, Family::xlm_roberta, Family::electra,
        Family::modernbert, Family::deberta_v2}) {
    const auto& table = family_spec(family).tables.layer;
    bool in_ffn = false;
    int ffn_entries = 0;
    for (const auto& entry : table) {
      const bool ffn =
          entry.view == &LayerParams::ffn_in_w || entry.view == &LayerParams::ffn_in_b ||
          entry.view == &LayerParams::ffn_out_w || entry.view == &LayerParams::ffn_out_b ||
          entry.view == &LayerParams::ffn_ln_w || entry.view == &LayerParams::ffn_ln_b;
      if (entry.view == &LayerParams::ffn_in_w || entry.view == &LayerParams::ffn_ln_w)
        in_ffn = true;
      if (in_ffn) {
        EXPECT_TRUE(ffn || entry.packed_with_previous) << entry.name;
        ffn_entries += ffn;
      }
    }
    EXPECT_GE(ffn_entries, 3) << static_cast<int>(family);
  }
}

TEST(CanonicalName, AcceptsBothNamingSchemesAndOldLayerNorm) {
  const FamilyParamTables& bert = family_spec(Family::bert).tables;
  EXPECT_EQ(canonical_param_name("bert.embeddings.word_embeddings.weight", bert),
            "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(canonical_param_name("embeddings.word_embeddings.weight", bert),
            "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(canonical_param_name("encoder.layer.3.output.LayerNorm.gamma", bert),
            "bert.encoder.layer.3.output.LayerNorm.weight");
  EXPECT_EQ(canonical_param_name("bert.embeddings.LayerNorm.beta", bert),
            "bert.embeddings.LayerNorm.bias");
  EXPECT_EQ(canonical_param_name("classifier.bias", bert), "classifier.bias");
  EXPECT_EQ(canonical_param_name("embeddings.position_ids", bert), "");
  EXPECT_FALSE(contradicts_config("cls.predictions.bias", bert));  // a pretraining head: dropped
  EXPECT_TRUE(contradicts_config("bert.encoder.layer.9.output.dense.bias", bert));
  const FamilyParamTables& roberta = family_spec(Family::roberta).tables;
  EXPECT_EQ(canonical_param_name("encoder.layer.0.output.dense.bias", roberta),
            "roberta.encoder.layer.0.output.dense.bias");
  EXPECT_FALSE(contradicts_config("roberta.pooler.dense.weight", roberta));  // HF drops it too
  EXPECT_FALSE(contradicts_config("lm_head.dense.weight", roberta));
  // A BERT checkpoint read as RoBERTa: its names have no place (then "missing tensor" follows).
  EXPECT_EQ(canonical_param_name("bert.encoder.layer.0.output.dense.bias", roberta),
            "bert.encoder.layer.0.output.dense.bias");
  const FamilyParamTables& electra = family_spec(Family::electra).tables;
  EXPECT_EQ(canonical_param_name("embeddings_project.weight", electra),
            "electra.embeddings_project.weight");
  const FamilyParamTables& distilbert = family_spec(Family::distilbert).tables;
  EXPECT_EQ(canonical_param_name("transformer.layer.1.ffn.lin1.weight", distilbert),
            "distilbert.transformer.layer.1.ffn.lin1.weight");
  EXPECT_TRUE(contradicts_config("distilbert.transformer.layer.7.ffn.lin1.weight", distilbert));
}

// Tiny configs of every family, as transformers writes them (field names of each config class).
struct FamilyCase {
  const char* json;
  Family family;
  std::vector<const char*> names;  // some names the layout must hold, in this order
  size_t tensors;                  // all tensors of a 2-layer model
};

std::vector<FamilyCase> family_cases() {
  return {
      {kTinyConfig,
       Family::bert,
       {"bert.embeddings.token_type_embeddings.weight", "bert.encoder.layer.1.output.dense.weight",
        "bert.pooler.dense.weight", "classifier.weight"},
       5 + 2 * 16 + 4},
      {R"({"model_type": "distilbert", "vocab_size": 99, "dim": 32, "n_layers": 2, "n_heads": 4,
           "hidden_dim": 37, "max_position_embeddings": 64, "activation": "gelu",
           "seq_classif_dropout": 0.3, "sinusoidal_pos_embds": false})",
       Family::distilbert,
       {"distilbert.embeddings.position_embeddings.weight",
        "distilbert.transformer.layer.0.attention.q_lin.weight",
        "distilbert.transformer.layer.0.attention.k_lin.weight",
        "distilbert.transformer.layer.1.output_layer_norm.bias", "pre_classifier.weight",
        "classifier.bias"},
       4 + 2 * 16 + 4},
      {R"({"model_type": "roberta", "vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 37, "max_position_embeddings": 66,
           "type_vocab_size": 1, "pad_token_id": 1, "hidden_act": "gelu"})",
       Family::roberta,
       {"roberta.embeddings.word_embeddings.weight", "roberta.encoder.layer.1.output.dense.bias",
        "classifier.dense.weight", "classifier.out_proj.bias"},
       5 + 2 * 16 + 4},
      {R"({"model_type": "xlm-roberta", "vocab_size": 99, "hidden_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37,
           "max_position_embeddings": 66, "type_vocab_size": 1, "hidden_act": "gelu"})",
       Family::xlm_roberta,
       {"roberta.embeddings.word_embeddings.weight", "classifier.out_proj.weight"},
       5 + 2 * 16 + 4},
      {R"({"model_type": "electra", "vocab_size": 99, "embedding_size": 16, "hidden_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37,
           "max_position_embeddings": 64, "hidden_act": "gelu"})",
       Family::electra,
       {"electra.embeddings.word_embeddings.weight", "electra.embeddings_project.weight",
        "electra.encoder.layer.0.attention.self.query.weight", "classifier.dense.weight",
        "classifier.out_proj.weight"},
       7 + 2 * 16 + 4},
  };
}

TEST(Families, LayoutNamesShapesAndViews) {
  for (const FamilyCase& fc : family_cases()) {
    const ModelConfig c = parse_model_config(fc.json, "cfg.json");
    const FamilySpec& spec = family_spec(c.family);
    SCOPED_TRACE(spec.model_type);
    EXPECT_EQ(c.family, fc.family);
    const ParamLayout layout(c);
    EXPECT_EQ(layout.specs().size(), fc.tensors);
    int64_t previous = -1;
    for (const char* name : fc.names) {
      const ParamSpec* p = layout.find(name);
      ASSERT_NE(p, nullptr) << name;
      EXPECT_GT(p->offset, previous) << name;
      previous = p->offset;
    }
    std::vector<float> buffer(static_cast<size_t>(layout.total_floats()));
    const ModelParams p = bind_params(layout, c, buffer.data());
    EXPECT_EQ(p.type_emb != nullptr, spec.token_types);
    EXPECT_EQ(p.emb_proj_w != nullptr, c.has_embedding_projection());
    EXPECT_TRUE(p.word_emb && p.pos_emb && p.emb_ln_w && p.head_dense_w && p.head_out_b);
  }
  const ModelConfig electra = parse_model_config(family_cases()[4].json, "cfg.json");
  EXPECT_EQ(electra.embedding_size, 16);
  const ParamLayout layout(electra);
  EXPECT_EQ(layout.at("electra.embeddings_project.weight").shape, (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(layout.at("electra.embeddings.word_embeddings.weight").shape,
            (std::vector<int64_t>{99, 16}));
  const ModelConfig distil = parse_model_config(family_cases()[1].json, "cfg.json");
  EXPECT_EQ(distil.hidden_size, 32);
  EXPECT_EQ(distil.intermediate_size, 37);
  EXPECT_FLOAT_EQ(distil.effective_classifier_dropout(), 0.3f);
  const ModelConfig roberta = parse_model_config(family_cases()[2].json, "cfg.json");
  EXPECT_EQ(roberta.pad_token_id, 1);
  EXPECT_EQ(roberta.max_sequence_length(), 64);  // 66 positions less padding_idx + 1
}

TEST(Families, RefusedFieldsNameTheField) {
  EXPECT_NE(expect_error(R"({"model_type": "albert"})").find("model_type"), std::string::npos);
  EXPECT_NE(expect_error(R"({"model_type": "distilbert", "vocab_size": 9, "dim": 8,
      "n_layers": 1, "n_heads": 2, "hidden_dim": 8, "max_position_embeddings": 8,
      "activation": "relu"})")
                .find("activation"),
            std::string::npos);
  EXPECT_NE(expect_error(R"({"model_type": "roberta", "vocab_size": 9, "hidden_size": 8,
      "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8,
      "max_position_embeddings": 2, "pad_token_id": 1})")
                .find("max_position_embeddings"),
            std::string::npos);
}

// RoBERTa's positions under packing: per sequence, after padding_idx, pad tokens skipped.
TEST(Families, PositionIdsPerPackedSequence) {
  const int32_t ids[] = {0, 5, 6, 2, /**/ 0, 1, 7, 2};  // the second sequence holds a pad (1)
  const int64_t offsets[] = {0, 4, 8};
  int32_t positions[8];
  fill_position_ids(positions, ids, offsets, 2, PositionRule::after_padding_idx, 1);
  EXPECT_EQ(std::vector<int32_t>(positions, positions + 8),
            (std::vector<int32_t>{2, 3, 4, 5, 2, 1, 3, 4}));
  fill_position_ids(positions, ids, offsets, 2, PositionRule::from_zero, 1);
  EXPECT_EQ(std::vector<int32_t>(positions, positions + 8),
            (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3}));
}

// The tables bind every member of the view structs (each is a struct of pointers only, so a
// member the tables forget stays null), and every encoder matrix gets a bf16 copy. LayerParams'
// DeBERTa position projections exist only with share_att_key false: bound there.
TEST(ParamTables, BindEveryViewMemberAndCopyEveryEncoderMatrix) {
  const ModelConfig c = parse_model_config(kTinyConfig, "cfg.json");
  const ParamLayout layout(c);
  std::vector<float> buffer(static_cast<size_t>(layout.total_floats()));
  const ModelParams p = bind_params(layout, c, buffer.data());
  auto all_bound = [](const auto& views) {
    static_assert(sizeof(views) % sizeof(float*) == 0);
    std::array<const void*, sizeof(views) / sizeof(float*)> members{};
    std::memcpy(members.data(), &views, sizeof(views));
    return std::find(members.begin(), members.end(), nullptr) == members.end();
  };
  ASSERT_EQ(p.layers.size(), 2u);
  for (LayerParams lp : p.layers) {
    EXPECT_FALSE(lp.pos_q_w || lp.pos_q_b || lp.pos_k_w || lp.pos_k_b);
    lp.pos_q_w = lp.pos_q_b = lp.pos_k_w = lp.pos_k_b = lp.qkv_w;  // not BERT's
    EXPECT_TRUE(all_bound(lp));
  }
  const ModelConfig deberta = parse_model_config(
      R"({"model_type": "deberta-v2", "vocab_size": 9, "hidden_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 16,
          "relative_attention": true, "pos_att_type": "p2c|c2p", "share_att_key": false})",
      "deberta.json");
  const ParamLayout deberta_layout(deberta);
  std::vector<float> deberta_buffer(static_cast<size_t>(deberta_layout.total_floats()));
  for (const LayerParams& lp : bind_params(deberta_layout, deberta, deberta_buffer.data()).layers)
    EXPECT_TRUE(all_bound(lp));
  EXPECT_TRUE(p.word_emb && p.pos_emb && p.type_emb && p.emb_ln_w && p.emb_ln_b && p.head_dense_w &&
              p.head_dense_b && p.head_out_w && p.head_out_b);
  const Bf16Weights copies(layout);
  for (size_t l = 0; l < p.layers.size(); ++l) EXPECT_TRUE(all_bound(copies.layer(l)));
  // QKV is one packed copy: (3D, D), directly followed by the attention output's (D, D).
  const int64_t D = c.hidden_size;
  EXPECT_EQ(copies.layer(0).attn_out_w, copies.layer(0).qkv_w + 3 * D * D);

  // init_random_weights goes by kind: norm weights 1, biases and norm biases 0.
  init_random_weights(layout, buffer.data(), 0.02f, 7);
  for (const ParamSpec& spec : layout.specs()) {
    const float first = buffer[static_cast<size_t>(spec.offset)];
    if (spec.kind == ParamKind::norm_weight) {
      EXPECT_EQ(first, 1.0f) << spec.name;
    } else if (spec.kind == ParamKind::bias || spec.kind == ParamKind::norm_bias) {
      EXPECT_EQ(first, 0.0f) << spec.name;
    }
    EXPECT_EQ(spec.decays, spec.kind == ParamKind::matrix || spec.kind == ParamKind::embedding);
  }
}

}  // namespace
}  // namespace cpuft
