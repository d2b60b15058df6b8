// BERT's parameter tables (model/param_table.h): BertForSequenceClassification as transformers
// names it. The order within each scope is HF's named_parameters() order, which is also the memory
// order of the flat buffer (forward order; the backward pass finishes gradients from the end).
#include "model/bf16_weights.h"
#include "model/model_params.h"
#include "model/param_table.h"

namespace cpuft {
namespace {

using K = ParamKind;
using E = ParamEntry<ModelParams>;
using L = ParamEntry<LayerParams>;
constexpr Dim V = Dim::vocab, P = Dim::positions, Ty = Dim::token_types, D = Dim::hidden,
              F = Dim::intermediate, Lb = Dim::labels, none = Dim::none;

constexpr E kEmbeddings[] = {
    {"word_embeddings.weight", {V, D}, K::embedding, &ModelParams::word_emb},
    {"position_embeddings.weight", {P, D}, K::embedding, &ModelParams::pos_emb},
    {"token_type_embeddings.weight", {Ty, D}, K::embedding, &ModelParams::type_emb},
    {"LayerNorm.weight", {D, none}, K::norm_weight, &ModelParams::emb_ln_w},
    {"LayerNorm.bias", {D, none}, K::norm_bias, &ModelParams::emb_ln_b},
};

constexpr L kLayer[] = {
    // Query, key and value are one (3D, D) matrix and one (3D) bias for the packed QKV product.
    {"attention.self.query.weight",
     {D, D},
     K::matrix,
     &LayerParams::qkv_w,
     false,
     0,
     &LayerBf16Weights::qkv_w},
    {"attention.self.key.weight", {D, D}, K::matrix, nullptr, true},
    {"attention.self.value.weight", {D, D}, K::matrix, nullptr, true},
    {"attention.self.query.bias", {D, none}, K::bias, &LayerParams::qkv_b},
    {"attention.self.key.bias", {D, none}, K::bias, nullptr, true},
    {"attention.self.value.bias", {D, none}, K::bias, nullptr, true},
    {"attention.output.dense.weight",
     {D, D},
     K::matrix,
     &LayerParams::attn_out_w,
     false,
     0,
     &LayerBf16Weights::attn_out_w},
    {"attention.output.dense.bias", {D, none}, K::bias, &LayerParams::attn_out_b},
    {"attention.output.LayerNorm.weight", {D, none}, K::norm_weight, &LayerParams::attn_ln_w},
    {"attention.output.LayerNorm.bias", {D, none}, K::norm_bias, &LayerParams::attn_ln_b},
    {"intermediate.dense.weight",
     {F, D},
     K::matrix,
     &LayerParams::ffn_in_w,
     false,
     0,
     &LayerBf16Weights::ffn_in_w},
    {"intermediate.dense.bias", {F, none}, K::bias, &LayerParams::ffn_in_b},
    {"output.dense.weight",
     {D, F},
     K::matrix,
     &LayerParams::ffn_out_w,
     false,
     0,
     &LayerBf16Weights::ffn_out_w},
    {"output.dense.bias", {D, none}, K::bias, &LayerParams::ffn_out_b},
    {"output.LayerNorm.weight", {D, none}, K::norm_weight, &LayerParams::ffn_ln_w},
    {"output.LayerNorm.bias", {D, none}, K::norm_bias, &LayerParams::ffn_ln_b},
};

// Pooler (layer L), then the classifier (layer L + 1).
constexpr E kHead[] = {
    {"bert.pooler.dense.weight", {D, D}, K::matrix, &ModelParams::head_dense_w},
    {"bert.pooler.dense.bias", {D, none}, K::bias, &ModelParams::head_dense_b},
    {"classifier.weight", {Lb, D}, K::matrix, &ModelParams::head_out_w, false, 1},
    {"classifier.bias", {Lb, none}, K::bias, &ModelParams::head_out_b, false, 1},
};

}  // namespace

int64_t extent(Dim dim, const ModelConfig& c) {
  switch (dim) {
    case Dim::none:
      return 1;
    case Dim::vocab:
      return c.vocab_size;
    case Dim::positions:
      return c.max_position_embeddings;
    case Dim::token_types:
      return c.type_vocab_size;
    case Dim::hidden:
      return c.hidden_size;
    case Dim::intermediate:
      return c.intermediate_size;
    case Dim::labels:
      return c.num_labels;
  }
  return 0;
}

const FamilyParamTables& bert_param_tables() {
  static const FamilyParamTables tables{
      "bert.embeddings.", kEmbeddings, "bert.encoder.layer.{}.", kLayer, "", kHead};
  return tables;
}

}  // namespace cpuft
