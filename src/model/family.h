// The encoder families as data: everything that differs between BERT, DistilBERT, RoBERTa,
// XLM-RoBERTa and ELECTRA's *ForSequenceClassification models, beyond the numbers of the config.
//
// One FamilySpec per family (model/families.cc): its config.json model_type and the architecture
// name written back, its parameter tables (model/param_table.h), how position ids are counted,
// whether token types exist, and the shape of the head. SequenceClassifier runs every family with
// the same code, reading these fields; no family has code of its own.
//
//   family       embeddings                       layer dropouts           head on the first token
//   bert         word + position + type, LN        attn-out, FFN-out       dense, tanh, drop, out
//   distilbert   word + position, LN               FFN-out only            dense, ReLU, drop, out
//   roberta      word + position* + type, LN       attn-out, FFN-out       drop, dense, tanh, drop,
//   out xlm-roberta  as roberta                        as roberta              as roberta electra
//   word + position + type (width E), attn-out, FFN-out       drop, dense, gelu, drop, out
//                LN, then a (D, E) projection if E != D
//   * positions start after padding_idx and skip padding tokens (PositionRule::after_padding_idx).
#pragma once

#include <string_view>

#include "model/model_config.h"
#include "model/param_table.h"

namespace cpuft {

// How position ids count within each sequence (each packed sequence on its own).
enum class PositionRule {
  from_zero,          // 0, 1, ..., T_s - 1
  after_padding_idx,  // fairseq's rule: a token equal to padding_idx (pad_token_id) gets
                      // padding_idx, every other token padding_idx + (its rank among the
                      // non-padding tokens of the sequence, from 1)
};

enum class HeadActivation { tanh, relu, gelu };

struct FamilySpec {
  Family family;
  const char* model_type;    // config.json "model_type"
  const char* architecture;  // "architectures" of the fine-tuned model's config.json
  const FamilyParamTables& tables;
  PositionRule positions;
  bool token_types;               // a token_type_embeddings table exists
  bool attention_output_dropout;  // hidden dropout after the attention output (not DistilBERT)
  bool head_input_dropout;        // dropout on the first token before the head's dense layer
  HeadActivation head_activation;
};

const FamilySpec& family_spec(Family family);
// The family of a config.json model_type, or nullptr.
const FamilySpec* find_family(std::string_view model_type);
// "bert, distilbert, roberta, xlm-roberta, electra, modernbert, deberta-v2", for error messages.
const char* supported_model_types();

// Fills positions[i] for the N tokens of a packed batch (sequence s is [offsets[s], offsets[s+1])).
void fill_position_ids(int32_t* positions, const int32_t* input_ids, const int64_t* offsets,
                       int64_t num_sequences, PositionRule rule, int32_t padding_idx);

}  // namespace cpuft
