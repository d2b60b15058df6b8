// ModernBERT (transformers' ModernBertForSequenceClassification) on packed batches, forward and
// backward. SequenceClassifier runs it for model_type "modernbert"; its parameters are the
// family's table (model/families.cc) bound to the same ModelParams views.
//
//   h0    = dropout(LayerNorm(tok[ids]))                         (N, D)  no position table
//   layer l (pre-norm, no biases):
//     xn    = l == 0 ? x : LayerNorm(x)                          (N, D)  attn_norm
//     qkv   = rotary(xn Wqkv^T)                                  (N, 3D) queries and keys rotated
//     ctx   = attention(qkv), window |i - j| <= local_attention/2 in sliding layers
//     s1    = x + dropout(ctx Wo^T)                              (N, D)
//     hn    = LayerNorm(s1)                                      (N, D)  mlp_norm
//     [a|g] = hn Wi^T                                            (N, 2F)
//     act   = dropout(gelu(a) * g)                               (N, F)  GeGLU
//     out   = s1 + act Wo2^T                                     (N, D)
//   fin   = LayerNorm(out_{L-1})                                 (N, D)  final_norm
//   pool  = fin of each sequence's first token, or the mean of its tokens   (B, D)
//   logits = classifier(dropout(LayerNorm(gelu(pool Wd^T))))     (B, K)
//
// The LayerNorms have no bias (norm_bias false): each is a LayerNorm with beta 0, whose beta
// gradient goes to a scratch row nothing reads. Under --bf16 the four layer products take bf16
// inputs as in BERT (encoder_layer.h); everything else stays fp32.
#pragma once

#include <memory>

#include "model/batch.h"
#include "model/grad_listener.h"
#include "model/model_config.h"
#include "model/model_params.h"
#include "model/sequence_classifier.h"

namespace cpuft {

class ModernBertClassifier {
 public:
  ModernBertClassifier(const ModelConfig& config, const ModelLimits& limits,
                       MatmulPrecision precision);
  ~ModernBertClassifier();

  static int64_t activation_bytes(const ModelConfig& config, const ModelLimits& limits,
                                  MatmulPrecision precision);

  void refresh_bf16_weights(const ModelParams& params);
  std::vector<Bf16Weights::Target> bf16_targets(const ModelParams& params);
  // The logits of `batch` (the caller has checked it against the limits); the caller's loss
  // writes d_logits() before backward, as in SequenceClassifier, which runs this class.
  void forward(const ModelParams& params, const Batch& batch, const StepContext& context);
  // Parameter gradients ACCUMULATE into `grads`; `listener` as in SequenceClassifier::backward.
  void backward(const ModelParams& params, const ModelParams& grads, GradListener* listener);
  const float* logits() const;
  float* d_logits();

 private:
  struct State;
  ModelConfig config_;
  std::unique_ptr<State> state_;
};

}  // namespace cpuft
