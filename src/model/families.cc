// The families (model/family.h) and their parameter tables (model/param_table.h), as transformers
// names the parameters of each *ForSequenceClassification model. Within a scope the order is the
// memory order of the flat buffer, which is HF's named_parameters() order except where the packed
// QKV product needs query, key and value adjacent (DistilBERT lists each weight with its bias).
#include <algorithm>

#include "model/bf16_weights.h"
#include "model/family.h"
#include "model/model_params.h"

namespace cpuft {
namespace {

using K = ParamKind;
using E = ParamEntry<ModelParams>;
using L = ParamEntry<LayerParams>;
using B = LayerBf16Weights;
constexpr Dim V = Dim::vocab, P = Dim::positions, Ty = Dim::token_types, Em = Dim::embedding,
              D = Dim::hidden, D3 = Dim::qkv, F = Dim::intermediate, F2 = Dim::gated_intermediate,
              Rel = Dim::relative, RelNorm = Dim::relative_norm, PosQ = Dim::position_query,
              PosK = Dim::position_key, Conv = Dim::conv_hidden, Taps = Dim::conv_taps,
              Lb = Dim::labels, none = Dim::none;

// BERT, RoBERTa, XLM-RoBERTa and ELECTRA share the embeddings (ELECTRA's are E wide, E = D in the
// others) and the encoder layer; ELECTRA projects the embeddings to D when E != D.
constexpr E kBertEmbeddings[] = {
    {"embeddings.word_embeddings.weight", {V, Em}, K::embedding, &ModelParams::word_emb},
    {"embeddings.position_embeddings.weight", {P, Em}, K::embedding, &ModelParams::pos_emb},
    {"embeddings.token_type_embeddings.weight", {Ty, Em}, K::embedding, &ModelParams::type_emb},
    {"embeddings.LayerNorm.weight", {Em, none}, K::norm_weight, &ModelParams::emb_ln_w},
    {"embeddings.LayerNorm.bias", {Em, none}, K::norm_bias, &ModelParams::emb_ln_b},
};
constexpr E kElectraEmbeddings[] = {
    {"embeddings.word_embeddings.weight", {V, Em}, K::embedding, &ModelParams::word_emb},
    {"embeddings.position_embeddings.weight", {P, Em}, K::embedding, &ModelParams::pos_emb},
    {"embeddings.token_type_embeddings.weight", {Ty, Em}, K::embedding, &ModelParams::type_emb},
    {"embeddings.LayerNorm.weight", {Em, none}, K::norm_weight, &ModelParams::emb_ln_w},
    {"embeddings.LayerNorm.bias", {Em, none}, K::norm_bias, &ModelParams::emb_ln_b},
    {"embeddings_project.weight",
     {D, Em},
     K::matrix,
     &ModelParams::emb_proj_w,
     false,
     0,
     nullptr,
     true},
    {"embeddings_project.bias",
     {D, none},
     K::bias,
     &ModelParams::emb_proj_b,
     false,
     0,
     nullptr,
     true},
};
constexpr E kDistilBertEmbeddings[] = {
    {"embeddings.word_embeddings.weight", {V, Em}, K::embedding, &ModelParams::word_emb},
    {"embeddings.position_embeddings.weight", {P, Em}, K::embedding, &ModelParams::pos_emb},
    {"embeddings.LayerNorm.weight", {Em, none}, K::norm_weight, &ModelParams::emb_ln_w},
    {"embeddings.LayerNorm.bias", {Em, none}, K::norm_bias, &ModelParams::emb_ln_b},
};

// Query, key and value are one (3D, D) matrix and one (3D) bias for the packed QKV product: one
// entry with the view, two packed after it.
constexpr L kBertLayer[] = {
    {"attention.self.query.weight", {D, D}, K::matrix, &LayerParams::qkv_w, false, 0, &B::qkv_w},
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
     &B::attn_out_w},
    {"attention.output.dense.bias", {D, none}, K::bias, &LayerParams::attn_out_b},
    {"attention.output.LayerNorm.weight", {D, none}, K::norm_weight, &LayerParams::attn_ln_w},
    {"attention.output.LayerNorm.bias", {D, none}, K::norm_bias, &LayerParams::attn_ln_b},
    {"intermediate.dense.weight",
     {F, D},
     K::matrix,
     &LayerParams::ffn_in_w,
     false,
     0,
     &B::ffn_in_w},
    {"intermediate.dense.bias", {F, none}, K::bias, &LayerParams::ffn_in_b},
    {"output.dense.weight", {D, F}, K::matrix, &LayerParams::ffn_out_w, false, 0, &B::ffn_out_w},
    {"output.dense.bias", {D, none}, K::bias, &LayerParams::ffn_out_b},
    {"output.LayerNorm.weight", {D, none}, K::norm_weight, &LayerParams::ffn_ln_w},
    {"output.LayerNorm.bias", {D, none}, K::norm_bias, &LayerParams::ffn_ln_b},
};
constexpr L kDistilBertLayer[] = {
    {"attention.q_lin.weight", {D, D}, K::matrix, &LayerParams::qkv_w, false, 0, &B::qkv_w},
    {"attention.k_lin.weight", {D, D}, K::matrix, nullptr, true},
    {"attention.v_lin.weight", {D, D}, K::matrix, nullptr, true},
    {"attention.q_lin.bias", {D, none}, K::bias, &LayerParams::qkv_b},
    {"attention.k_lin.bias", {D, none}, K::bias, nullptr, true},
    {"attention.v_lin.bias", {D, none}, K::bias, nullptr, true},
    {"attention.out_lin.weight",
     {D, D},
     K::matrix,
     &LayerParams::attn_out_w,
     false,
     0,
     &B::attn_out_w},
    {"attention.out_lin.bias", {D, none}, K::bias, &LayerParams::attn_out_b},
    {"sa_layer_norm.weight", {D, none}, K::norm_weight, &LayerParams::attn_ln_w},
    {"sa_layer_norm.bias", {D, none}, K::norm_bias, &LayerParams::attn_ln_b},
    {"ffn.lin1.weight", {F, D}, K::matrix, &LayerParams::ffn_in_w, false, 0, &B::ffn_in_w},
    {"ffn.lin1.bias", {F, none}, K::bias, &LayerParams::ffn_in_b},
    {"ffn.lin2.weight", {D, F}, K::matrix, &LayerParams::ffn_out_w, false, 0, &B::ffn_out_w},
    {"ffn.lin2.bias", {D, none}, K::bias, &LayerParams::ffn_out_b},
    {"output_layer_norm.weight", {D, none}, K::norm_weight, &LayerParams::ffn_ln_w},
    {"output_layer_norm.bias", {D, none}, K::norm_bias, &LayerParams::ffn_ln_b},
};

// Heads: the dense layer (gradient "layer" L), then the output layer (L + 1).
constexpr E kBertHead[] = {
    {"bert.pooler.dense.weight", {D, D}, K::matrix, &ModelParams::head_dense_w},
    {"bert.pooler.dense.bias", {D, none}, K::bias, &ModelParams::head_dense_b},
    {"classifier.weight", {Lb, D}, K::matrix, &ModelParams::head_out_w, false, 1},
    {"classifier.bias", {Lb, none}, K::bias, &ModelParams::head_out_b, false, 1},
};
constexpr E kDistilBertHead[] = {
    {"pre_classifier.weight", {D, D}, K::matrix, &ModelParams::head_dense_w},
    {"pre_classifier.bias", {D, none}, K::bias, &ModelParams::head_dense_b},
    {"classifier.weight", {Lb, D}, K::matrix, &ModelParams::head_out_w, false, 1},
    {"classifier.bias", {Lb, none}, K::bias, &ModelParams::head_out_b, false, 1},
};
// RobertaClassificationHead and ElectraClassificationHead name their tensors alike.
constexpr E kClassificationHead[] = {
    {"classifier.dense.weight", {D, D}, K::matrix, &ModelParams::head_dense_w},
    {"classifier.dense.bias", {D, none}, K::bias, &ModelParams::head_dense_b},
    {"classifier.out_proj.weight", {Lb, D}, K::matrix, &ModelParams::head_out_w, false, 1},
    {"classifier.out_proj.bias", {Lb, none}, K::bias, &ModelParams::head_out_b, false, 1},
};

// ModernBERT (model/modernbert.h): no biases and no position table; pre-norm layers whose first
// has no attn_norm; the final norm and the head (dense, GELU, norm) after the encoder.
constexpr E kModernBertEmbeddings[] = {
    {"embeddings.tok_embeddings.weight", {V, D}, K::embedding, &ModelParams::word_emb},
    {"embeddings.norm.weight", {D, none}, K::norm_weight, &ModelParams::emb_ln_w},
};
constexpr L kModernBertLayer[] = {
    {"attn_norm.weight",
     {D, none},
     K::norm_weight,
     &LayerParams::attn_ln_w,
     false,
     0,
     nullptr,
     false,
     true},
    {"attn.Wqkv.weight", {D3, D}, K::matrix, &LayerParams::qkv_w, false, 0, &B::qkv_w},
    {"attn.Wo.weight", {D, D}, K::matrix, &LayerParams::attn_out_w, false, 0, &B::attn_out_w},
    {"mlp_norm.weight", {D, none}, K::norm_weight, &LayerParams::ffn_ln_w},
    {"mlp.Wi.weight", {F2, D}, K::matrix, &LayerParams::ffn_in_w, false, 0, &B::ffn_in_w},
    {"mlp.Wo.weight", {D, F}, K::matrix, &LayerParams::ffn_out_w, false, 0, &B::ffn_out_w},
};
constexpr E kModernBertHead[] = {
    {"model.final_norm.weight", {D, none}, K::norm_weight, &ModelParams::final_ln_w},
    {"head.dense.weight", {D, D}, K::matrix, &ModelParams::head_dense_w},
    {"head.norm.weight", {D, none}, K::norm_weight, &ModelParams::head_ln_w},
    {"classifier.weight", {Lb, D}, K::matrix, &ModelParams::head_out_w, false, 1},
    {"classifier.bias", {Lb, none}, K::bias, &ModelParams::head_out_b, false, 1},
};

// DeBERTa-v2/v3 (model/deberta.h): BERT's layer with query_proj/key_proj/value_proj; the position
// and token type tables only where the config has them (v3 has neither); the encoder's relative
// embeddings and their LayerNorm, shared by every layer, live with the embeddings (their
// gradients are complete only after layer 0's backward, as the embeddings' are), as does the
// encoder's convolution after layer 0 (v2-xlarge's); the head is ContextPooler's dense and the
// classifier.
constexpr E kDebertaEmbeddings[] = {
    {"embeddings.word_embeddings.weight", {V, Em}, K::embedding, &ModelParams::word_emb},
    {"embeddings.position_embeddings.weight", {P, Em}, K::embedding, &ModelParams::pos_emb},
    {"embeddings.token_type_embeddings.weight", {Ty, Em}, K::embedding, &ModelParams::type_emb},
    // embedding_size E != D: embed_proj (no bias) before the LayerNorm, which is D wide.
    {"embeddings.embed_proj.weight",
     {D, Em},
     K::matrix,
     &ModelParams::emb_proj_w,
     false,
     0,
     nullptr,
     true},
    {"embeddings.LayerNorm.weight", {D, none}, K::norm_weight, &ModelParams::emb_ln_w},
    {"embeddings.LayerNorm.bias", {D, none}, K::norm_bias, &ModelParams::emb_ln_b},
    {"encoder.rel_embeddings.weight", {Rel, D}, K::embedding, &ModelParams::rel_emb},
    {"encoder.LayerNorm.weight", {RelNorm, none}, K::norm_weight, &ModelParams::rel_ln_w},
    {"encoder.LayerNorm.bias", {RelNorm, none}, K::norm_bias, &ModelParams::rel_ln_b},
    // conv_kernel_size > 0: the convolution after layer 0 (nn.Conv1d weight (D, D, k)), fp32.
    {"encoder.conv.conv.weight", {Conv, D, Taps}, K::matrix, &ModelParams::conv_w},
    {"encoder.conv.conv.bias", {Conv, none}, K::bias, &ModelParams::conv_b},
    {"encoder.conv.LayerNorm.weight", {Conv, none}, K::norm_weight, &ModelParams::conv_ln_w},
    {"encoder.conv.LayerNorm.bias", {Conv, none}, K::norm_bias, &ModelParams::conv_ln_b},
};
constexpr L kDebertaLayer[] = {
    {"attention.self.query_proj.weight",
     {D, D},
     K::matrix,
     &LayerParams::qkv_w,
     false,
     0,
     &B::qkv_w},
    {"attention.self.key_proj.weight", {D, D}, K::matrix, nullptr, true},
    {"attention.self.value_proj.weight", {D, D}, K::matrix, nullptr, true},
    {"attention.self.query_proj.bias", {D, none}, K::bias, &LayerParams::qkv_b},
    {"attention.self.key_proj.bias", {D, none}, K::bias, nullptr, true},
    {"attention.self.value_proj.bias", {D, none}, K::bias, nullptr, true},
    // share_att_key false: the relative embeddings' own projections (fp32 products of 2S rows,
    // no bf16 copy), as HF creates them: c2p's key, p2c's query.
    {"attention.self.pos_key_proj.weight", {PosK, D}, K::matrix, &LayerParams::pos_k_w},
    {"attention.self.pos_key_proj.bias", {PosK, none}, K::bias, &LayerParams::pos_k_b},
    {"attention.self.pos_query_proj.weight", {PosQ, D}, K::matrix, &LayerParams::pos_q_w},
    {"attention.self.pos_query_proj.bias", {PosQ, none}, K::bias, &LayerParams::pos_q_b},
    {"attention.output.dense.weight",
     {D, D},
     K::matrix,
     &LayerParams::attn_out_w,
     false,
     0,
     &B::attn_out_w},
    {"attention.output.dense.bias", {D, none}, K::bias, &LayerParams::attn_out_b},
    {"attention.output.LayerNorm.weight", {D, none}, K::norm_weight, &LayerParams::attn_ln_w},
    {"attention.output.LayerNorm.bias", {D, none}, K::norm_bias, &LayerParams::attn_ln_b},
    {"intermediate.dense.weight",
     {F, D},
     K::matrix,
     &LayerParams::ffn_in_w,
     false,
     0,
     &B::ffn_in_w},
    {"intermediate.dense.bias", {F, none}, K::bias, &LayerParams::ffn_in_b},
    {"output.dense.weight", {D, F}, K::matrix, &LayerParams::ffn_out_w, false, 0, &B::ffn_out_w},
    {"output.dense.bias", {D, none}, K::bias, &LayerParams::ffn_out_b},
    {"output.LayerNorm.weight", {D, none}, K::norm_weight, &LayerParams::ffn_ln_w},
    {"output.LayerNorm.bias", {D, none}, K::norm_bias, &LayerParams::ffn_ln_b},
};
constexpr E kDebertaHead[] = {
    {"pooler.dense.weight", {D, D}, K::matrix, &ModelParams::head_dense_w},
    {"pooler.dense.bias", {D, none}, K::bias, &ModelParams::head_dense_b},
    {"classifier.weight", {Lb, D}, K::matrix, &ModelParams::head_out_w, false, 1},
    {"classifier.bias", {Lb, none}, K::bias, &ModelParams::head_out_b, false, 1},
};

const FamilyParamTables kBertTables{"bert.", kBertEmbeddings, "bert.encoder.layer.{}.", kBertLayer,
                                    "",      kBertHead};
const FamilyParamTables kDistilBertTables{
    "distilbert.",  kDistilBertEmbeddings, "distilbert.transformer.layer.{}.", kDistilBertLayer, "",
    kDistilBertHead};
const FamilyParamTables kRobertaTables{
    "roberta.", kBertEmbeddings, "roberta.encoder.layer.{}.", kBertLayer, "", kClassificationHead};
const FamilyParamTables kElectraTables{
    "electra.", kElectraEmbeddings, "electra.encoder.layer.{}.", kBertLayer,
    "",         kClassificationHead};
const FamilyParamTables kModernBertTables{
    "model.", kModernBertEmbeddings, "model.layers.{}.", kModernBertLayer, "", kModernBertHead};
const FamilyParamTables kDebertaTables{
    "deberta.", kDebertaEmbeddings, "deberta.encoder.layer.{}.", kDebertaLayer, "", kDebertaHead};

using R = PositionRule;
using A = HeadActivation;
// family, model_type, architecture, tables, positions, token types, attention-output dropout,
// head input dropout, head activation
const FamilySpec kFamilies[] = {
    {Family::bert, "bert", "BertForSequenceClassification", kBertTables, R::from_zero, true, true,
     false, A::tanh},
    {Family::distilbert, "distilbert", "DistilBertForSequenceClassification", kDistilBertTables,
     R::from_zero, false, false, false, A::relu},
    {Family::roberta, "roberta", "RobertaForSequenceClassification", kRobertaTables,
     R::after_padding_idx, true, true, true, A::tanh},
    {Family::xlm_roberta, "xlm-roberta", "XLMRobertaForSequenceClassification", kRobertaTables,
     R::after_padding_idx, true, true, true, A::tanh},
    {Family::electra, "electra", "ElectraForSequenceClassification", kElectraTables, R::from_zero,
     true, true, true, A::gelu},
    // Positions are rotary (from zero in each sequence); the head is model/modernbert.h's.
    {Family::modernbert, "modernbert", "ModernBertForSequenceClassification", kModernBertTables,
     R::from_zero, false, true, false, A::gelu},
    // Token types and absolute positions only where the config has them (type_vocab_size > 0,
    // position_biased_input); the head is model/deberta.h's (ContextPooler: dropout, dense, GELU).
    {Family::deberta_v2, "deberta-v2", "DebertaV2ForSequenceClassification", kDebertaTables,
     R::from_zero, true, true, true, A::gelu},
};

}  // namespace

int64_t extent(Dim dim, const ModelConfig& c) {
  switch (dim) {
    case Dim::none:
      return 1;
    case Dim::vocab:
      return c.vocab_size;
    case Dim::positions:
      return c.absolute_positions ? c.max_position_embeddings : 0;
    case Dim::token_types:
      return c.type_vocab_size;
    case Dim::embedding:
      return c.embedding_size;
    case Dim::hidden:
      return c.hidden_size;
    case Dim::qkv:
      return 3 * c.hidden_size;
    case Dim::intermediate:
      return c.intermediate_size;
    case Dim::gated_intermediate:
      return 2 * c.intermediate_size;
    case Dim::relative:
      return c.relative_attention ? 2 * c.relative_span() : 0;
    case Dim::relative_norm:
      return c.relative_norm ? c.hidden_size : 0;
    case Dim::position_query:
      return c.separate_position_projections() && c.position_to_content ? c.hidden_size : 0;
    case Dim::conv_hidden:
      return c.conv_kernel_size > 0 ? c.hidden_size : 0;
    case Dim::conv_taps:
      return c.conv_kernel_size;
    case Dim::position_key:
      return c.separate_position_projections() && c.content_to_position ? c.hidden_size : 0;
    case Dim::labels:
      return c.num_labels;
  }
  return 0;
}

const FamilySpec& family_spec(Family family) {
  for (const FamilySpec& spec : kFamilies)
    if (spec.family == family) return spec;
  return kFamilies[0];  // unreachable: every Family has an entry
}

const FamilySpec* find_family(std::string_view model_type) {
  for (const FamilySpec& spec : kFamilies)
    if (model_type == spec.model_type) return &spec;
  return nullptr;
}

const char* supported_model_types() {
  return "bert, distilbert, roberta, xlm-roberta, electra, modernbert, deberta-v2";
}

void fill_position_ids(int32_t* positions, const int32_t* input_ids, const int64_t* offsets,
                       int64_t num_sequences, PositionRule rule, int32_t padding_idx) {
  for (int64_t s = 0; s < num_sequences; ++s) {
    int32_t count = 0;
    for (int64_t i = offsets[s]; i < offsets[s + 1]; ++i) {
      if (rule == PositionRule::from_zero) {
        positions[i] = static_cast<int32_t>(i - offsets[s]);
      } else if (input_ids[i] == padding_idx) {
        positions[i] = padding_idx;
      } else {
        positions[i] = padding_idx + ++count;
      }
    }
  }
}

}  // namespace cpuft
