// Model FLOPs of a training step: the useful work on real tokens, the numerator of MFU figures
// (cpuft_bench_step, cpuft train's log).
//
// 6 x (dense parameters) per token (forward 2, backward 4), plus attention's 2 x 2 x T_s x D per
// token per layer forward (QK^T and PV) x 3 for training, plus DeBERTa's relative terms. Padding is
// not counted: a padded run doing the same useful work scores the same. Embedding lookups are not
// products and are not counted; the last layer's first-token shortcut is counted as the full layer
// (the work the model defines, not what cpuft happens to skip).
#pragma once

#include "model/batch.h"
#include "model/model_config.h"

namespace cpuft {

double training_flops(const ModelConfig& c, const Batch& batch);

}  // namespace cpuft
