// Bf16Weights: the bf16 copies of the encoder's linear weights that --bf16 matrix products read.
//
// The fp32 parameters stay the master copy: the optimizer updates them, checkpoints save them.
// After every change of the fp32 weights (load, optimizer step) refresh() rounds them again, as
// torch's autocast re-casts each weight in every forward. Embeddings, LayerNorm, biases, pooler and
// classifier have no bf16 copy: they are not inputs of bf16 products.
#pragma once

#include <cstdint>
#include <vector>

#include "core/bf16.h"
#include "core/buffer.h"
#include "model/model_config.h"
#include "model/model_params.h"
#include "model/param_layout.h"

namespace cpuft {

struct LayerBf16Weights {
  bf16* qkv_w;       // (3D, D)
  bf16* attn_out_w;  // (D, D)
  bf16* ffn_in_w;    // (F, D)
  bf16* ffn_out_w;   // (D, F)
};

class Bf16Weights {
 public:
  // One copy of every encoder-layer matrix of `layout`'s tables (ParamKind::matrix with a
  // bf16_view; a packed group, such as QKV, is one copy).
  explicit Bf16Weights(const ParamLayout& layout);

  // Rounds every encoder linear weight of `params` (nearest, ties to even).
  void refresh(const ModelParams& params);

  // One copy's rounding: from which floats of the parameters to which bf16s. A training step's
  // optimizer writes these itself as it updates the weights (optim/optimizer.h, UpdatePass),
  // which is what refresh() would write after it, in one pass instead of two.
  struct Target {
    const float* from;
    bf16* to;
    int64_t numel;
  };
  // Every copy of every layer, for the weights `params` views. source() is refresh()'s alone: the
  // first forward still needs a refresh, and a writer of the targets must keep to the weights
  // last refreshed.
  std::vector<Target> targets(const ModelParams& params) const;
  // The fp32 weights last rounded (their word embedding's address; nullptr before the first
  // refresh), so that the model can refuse a forward before any refresh or on another buffer. It
  // cannot see a buffer changed in place since: refreshing after every change is the caller's job.
  const float* source() const { return source_; }

  const LayerBf16Weights& layer(size_t l) const { return layers_[l]; }

 private:
  // One rounded group of a layer: the fp32 view, its bf16 copy and the floats they cover.
  struct Copy {
    float* LayerParams::*from;
    bf16* LayerBf16Weights::*to;
    int64_t numel;
  };
  std::vector<Copy> copies_;
  AlignedBuffer<bf16> storage_;
  std::vector<LayerBf16Weights> layers_;
  const float* source_ = nullptr;
};

}  // namespace cpuft
