// The parameter tables: every parameter of a model family, once, by scope.
//
// A family (model/family.h) describes its parameters in three tables, one per scope: the
// embeddings, one encoder layer (repeated L times), the head. Each entry holds the Hugging Face
// name after the scope's prefix, the shape in config dimensions, the kind (which decides weight
// decay and the bf16 copy) and the member of the view structs that points at it. ParamLayout
// (offsets, names), bind_params (the views), Bf16Weights (the bf16 copies), init_random_weights,
// the optimizer's decay mask and the gradient buckets all iterate these tables; no other list of
// parameter names exists.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "core/bf16.h"
#include "model/model_config.h"

namespace cpuft {

struct ModelParams;
struct LayerParams;
struct LayerBf16Weights;

// What a tensor is, which fixes how it is treated:
//   matrix      a linear layer's weight (out, in): decays; inside an encoder layer a product input,
//               so it has a bf16 copy under --bf16
//   embedding   a lookup table: decays (HF Trainer decays everything but biases and norms)
//   bias, norm_weight, norm_bias: no decay (HF Trainer's rule); norm weights start at 1, biases 0
enum class ParamKind { matrix, embedding, bias, norm_weight, norm_bias };

inline bool decays(ParamKind kind) {
  return kind == ParamKind::matrix || kind == ParamKind::embedding;
}

// A dimension of a shape, read from the config.
// qkv: 3 x hidden (ModernBERT's one Wqkv tensor); gated_intermediate: 2 x intermediate (its GeGLU
// input projection, input and gate halves); relative: 2 S rows of DeBERTa's relative embeddings
// (ModelConfig::relative_span), relative_norm: hidden when DeBERTa normalizes them;
// position_query / position_key: hidden where DeBERTa projects them with weights of their own
// (share_att_key false: pos_query_proj for p2c, pos_key_proj for c2p); conv_hidden: hidden where
// DeBERTa has its convolution after layer 0 (conv_kernel_size > 0), conv_taps: its kernel size. An
// extent can
// be 0 (no token types, no position table, no relative attention): that tensor does not exist.
enum class Dim {
  none,
  vocab,
  positions,
  token_types,
  embedding,
  hidden,
  qkv,
  intermediate,
  gated_intermediate,
  relative,
  relative_norm,
  position_query,
  position_key,
  conv_hidden,
  conv_taps,
  labels
};
int64_t extent(Dim dim, const ModelConfig& config);

template <typename Views>
struct ParamEntry {
  const char* name;  // HF name after the scope's prefix, e.g. "output.dense.weight"
  std::array<Dim, 3>
      shape;  // rows, cols (Dim::none for a vector), taps (DeBERTa's conv, else none)
  ParamKind kind;
  // The view member pointing at this tensor, or nullptr for a tensor packed right after the
  // previous one and read through its view (key and value after query: one (3D, D) product).
  float* Views::*view;
  bool packed_with_previous = false;
  // The head only: which "layer" after the encoder it belongs to (0 = L, 1 = L + 1; the gradient
  // buckets and layer ranges go by layer).
  int head_layer = 0;
  // Encoder-layer matrices only: the member of the bf16 copy (nullptr where packed).
  bf16* LayerBf16Weights::*bf16_view = nullptr;
  // Present only when the embeddings' width differs from the hidden size (ELECTRA's
  // embeddings_project), as transformers creates it.
  bool projection_only = false;
  // Encoder-layer entries only: absent from layer 0 (ModernBERT's attn_norm, an identity there).
  bool not_in_first_layer = false;
};

// Whether `entry` exists in a model of `config` (see projection_only), in encoder layer `layer`
// (-1 outside the layers; see not_in_first_layer): not where an extent of its shape is 0.
template <typename Entry>
bool present(const Entry& entry, const ModelConfig& config, int64_t layer = -1) {
  return (!entry.projection_only || config.has_embedding_projection()) &&
         !(entry.not_in_first_layer && layer == 0) && extent(entry.shape[0], config) > 0 &&
         extent(entry.shape[1], config) > 0 && extent(entry.shape[2], config) > 0;
}

// The tables of one family. Prefixes: the embeddings' and head's are the HF name prefix (the
// embeddings' is the base model's, "bert."); the layer's holds "{}" where the layer index goes.
struct FamilyParamTables {
  const char* embeddings_prefix;
  std::span<const ParamEntry<ModelParams>> embeddings;
  const char* layer_prefix;
  std::span<const ParamEntry<LayerParams>> layer;
  const char* head_prefix;
  std::span<const ParamEntry<ModelParams>> head;
};

// The name prefix of encoder layer `layer` ("bert.encoder.layer.3.").
std::string layer_prefix(const FamilyParamTables& tables, int64_t layer);

}  // namespace cpuft
