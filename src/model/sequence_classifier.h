// SequenceClassifier: forward and backward of BertForSequenceClassification on packed batches.
//
// The model owns its activations and scratch, sized once for the largest batch it will see
// (ModelLimits), and its matmul plans; forward/backward allocate nothing. Parameters and gradients
// are not owned: they are ModelParams views handed in by the caller (the trainer owns the flat
// buffers and the optimizer; TrainStep, src/step, runs the optimizer step over them).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "gemm/matmul_plan.h"
#include "model/batch.h"
#include "model/bf16_weights.h"
#include "model/grad_listener.h"
#include "model/model_config.h"
#include "model/model_params.h"

namespace cpuft {

struct ModelLimits {
  int64_t max_tokens = 0;     // N, real tokens in one batch
  int64_t max_sequences = 0;  // B
  int64_t max_seq_len = 0;    // T, longest sequence (<= max_position_embeddings)
  // Keep less for backward and recompute it there (--gradient_checkpointing): each layer's GELU
  // output and attention probabilities (BERT families; DeBERTa: the GELU output). The same bits,
  // with the forward's code on the same inputs; MiniLM-L6 on MRPC batches of 32 needs 69 MB less
  // and its step takes 8-16% longer (docs/performance.md).
  bool recompute = false;
};

// What makes one step's dropout masks unique and reproducible: with the batch's sample_ids, a
// sequence's masks are a function of (seed, optimizer step, its number in the step's global batch).
struct StepContext {
  uint64_t seed = 42;
  uint64_t step = 0;     // the optimizer step (the same for all its micro-batches)
  bool training = true;  // false: dropout off (evaluation)
};

// Told when all parameter gradients of one layer are final during backward, in backward order:
// classifier, pooler, layer L-1 ... 0, embeddings (ParamSpec::layer numbering). The gradient
// reducer listens here to start communication while the backward pass continues.
// How forward(with_loss) computes the loss.
struct LossOptions {
  // HF TrainingArguments.label_smoothing_factor: the classification loss becomes torch's
  // CrossEntropyLoss(label_smoothing=eps) (HF Trainer's LabelSmoother on single-label logits),
  // (1 - eps) nll + eps mean_k(-log_softmax_k), in training and in evaluation alike. In [0, 1];
  // 0 is plain cross-entropy. Classification only: a regression model (num_labels == 1, MSE) has
  // no labels to smooth, and the caller wiring the flag must refuse it there (HF's LabelSmoother
  // would fail on float targets); set_loss_options() throws cpuft::Error as a last resort.
  float label_smoothing = 0.0f;
};

class ModernBertClassifier;
class DebertaClassifier;

// BERT, DistilBERT, RoBERTa, XLM-RoBERTa and ELECTRA run the code of this class, told apart by
// model/family.h; ModernBERT's layers differ in kind (pre-norm, rotary, sliding windows, GeGLU)
// and run model/modernbert.h behind the same interface.
class SequenceClassifier {
 public:
  // precision bf16: the encoder's linear products take bf16 inputs (encoder_layer.h); the model
  // then keeps a bf16 copy of those weights, which refresh_bf16_weights() must fill before the
  // first forward and after every change of the weights (a forward before the first refresh, or
  // on another weight buffer, is refused; a change in place since the last refresh is not seen).
  SequenceClassifier(const ModelConfig& config, const ModelLimits& limits,
                     MatmulPrecision precision = MatmulPrecision::f32);
  ~SequenceClassifier();

  // The bytes of activations and scratch such a model allocates (its weights, gradients and
  // optimizer state are the caller's), computed without allocating: for a memory check first.
  static int64_t activation_bytes(const ModelConfig& config, const ModelLimits& limits,
                                  MatmulPrecision precision);

  // The loss forward(with_loss) computes from now on (default: LossOptions{}). Throws
  // cpuft::Error, in one line, for label_smoothing outside [0, 1] or on a regression model.
  void set_loss_options(const LossOptions& options);
  const LossOptions& loss_options() const { return loss_options_; }

  // Rounds the encoder's linear weights into the bf16 copy; a no-op for fp32 models.
  void refresh_bf16_weights(const ModelParams& params);
  // Where those roundings come from and go to (Bf16Weights::targets), for an optimizer that writes
  // them as it updates the weights; empty for fp32 models.
  std::vector<Bf16Weights::Target> bf16_targets(const ModelParams& params);

  // Runs the forward pass; returns the mean loss over the batch when `with_loss` (labels/targets
  // must be set), else 0. Logits stay available through logits() until the next forward.
  float forward(const ModelParams& params, const Batch& batch, const StepContext& context,
                bool with_loss = true, float loss_scale = 1.0f);
  // Backward of the last forward (which must have had with_loss). Parameter gradients ACCUMULATE
  // into `grads`.
  void backward(const ModelParams& params, const ModelParams& grads,
                GradListener* listener = nullptr);

  const float* logits() const;  // (B, K) of the last forward
  const ModelConfig& config() const { return config_; }
  const ModelLimits& limits() const { return limits_; }

 private:
  // Everything of forward but the loss, for the families of State.
  void forward_encoder(const ModelParams& params, const Batch& batch, const StepContext& context);

  struct State;
  ModelConfig config_;
  ModelLimits limits_;
  LossOptions loss_options_;
  bool has_loss_ = false;         // the last forward computed the loss (and d_logits)
  std::unique_ptr<State> state_;  // every family but ModernBERT and DeBERTa
  std::unique_ptr<ModernBertClassifier> modern_;  // ModernBERT
  std::unique_ptr<DebertaClassifier> deberta_;    // DeBERTa-v2/v3
};

}  // namespace cpuft
