// DeBERTa-v2/v3 (transformers' DebertaV2ForSequenceClassification) on packed batches, forward and
// backward. SequenceClassifier runs it for model_type "deberta-v2"; its parameters are the
// family's table (model/families.cc) bound to the same ModelParams views.
//
//   h0    = dropout(LayerNorm(word[ids] (+ pos[i]) (+ type[t])))    (N, D)  v3: word only; tables
//                                                                            E wide: then
//                                                                            embed_proj (D, E)
//                                                                            before the LayerNorm
//   rel   = LayerNorm(rel_embeddings)                               (2S, D) norm_rel_ebd
//   layer l (BERT's post-norm layer, encoder_layer.h, with another attention):
//     qkv   = x Wqkv^T + bqkv                                       (N, 3D)
//     pos   = dropout(rel) Wqk^T + bqk                              (2S, 2D) the same query and
//                                                                            key weights; with
//             share_att_key false: [rel Wpq^T + bpq | rel Wpk^T + bpk]      pos_query_proj (p2c)
//                                                                            and pos_key_proj (c2p)
//     ctx   = disentangled_attention(qkv, pos)                      (N, D)  model/disentangled_
//                                                                            attention.h
//     out   = rowwise(ctx, x): dense, dropout, +x, LN, FFN, +, LN   (N, D)
//   after layer 0, with conv_kernel_size k (v2-xlarge's ConvLayer), along each sequence:
//     h     = LayerNorm(out0 + act(dropout(conv(h0) + b)))         (N, D)  sequence_conv.h
//   head  = ContextPooler: first token, dropout(pooler_dropout), dense, GELU
//   logits = classifier(dropout(head))                              (B, K)  cls_dropout
//
// Only the rows of rel and pos that the batch's longest sequence reaches are computed:
// row(-(T-1)) .. row(T-1), at most 2T - 1 of the 2S (v3: 255 of 512 rows at T = 128). The
// dropout on rel (HF's pos_dropout, one mask per layer) draws one stream per row, keyed by the
// row's number, the layer and the optimizer step: the same mask on every rank and micro-batch
// of a step, whatever rows a batch reaches.
//
// Under --bf16 the four token products of a layer take bf16 inputs as in BERT; the positional
// product (rows of rel, not tokens) stays fp32.
#pragma once

#include <memory>

#include "model/batch.h"
#include "model/grad_listener.h"
#include "model/model_config.h"
#include "model/model_params.h"
#include "model/sequence_classifier.h"

namespace cpuft {

class DebertaClassifier {
 public:
  DebertaClassifier(const ModelConfig& config, const ModelLimits& limits,
                    MatmulPrecision precision);
  ~DebertaClassifier();

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
