// The numbering of the dropout streams (core/rng.h dropout_stream) shared by every model kind:
// encoder layer l draws from "layer" l (sites in encoder_layer.h), the embeddings and the head from
// two numbers past any real layer. A mask is a function of (seed, optimizer step, layer, site,
// the sequence's sample id), so every model kind gets masks independent of threads and splits.
#pragma once

#include <cstdint>

#include "core/rng.h"
#include "model/sequence_classifier.h"

namespace cpuft {

inline constexpr uint32_t kEmbeddingsDropoutLayer = 0xFE;
inline constexpr uint32_t kClassifierDropoutLayer = 0xFF;

inline RngKey dropout_key(const StepContext& ctx, uint32_t layer, uint32_t site) {
  return RngKey{ctx.seed, dropout_stream(ctx.step, layer, site)};
}

}  // namespace cpuft
