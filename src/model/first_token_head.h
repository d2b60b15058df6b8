// The classification head on each sequence's first token, shared by the BERT-kind families
// (SequenceClassifier) and DeBERTa (model/deberta.h), forward and backward side by side:
//
//   in_drop = dropout_in(in)            (B, D)  RoBERTa, XLM-R, ELECTRA: classifier dropout;
//                                               DeBERTa: pooler_dropout; none in BERT, DistilBERT
//   pre     = in_drop Wd^T + bd         (B, D)  pooler / pre_classifier / classifier.dense
//   act     = activation(pre)           (B, D)  tanh, ReLU or GELU (family.h)
//   drop    = dropout_out(act)          (B, D)
//   logits  = drop Wo^T + bo            (B, K)
//
// The head stays fp32 (its products are (B, D) x (D, D) and smaller). Its dropout streams are the
// classifier's (model/dropout_streams.h): site 0 for the output dropout, 1 for the input one.
#pragma once

#include <cstdint>

#include "gemm/matmul_plan.h"
#include "model/family.h"
#include "model/grad_listener.h"
#include "model/model_params.h"
#include "model/sequence_classifier.h"

namespace cpuft {

// Its buffers (views into the model's arena). in_drop == in where there is no input dropout.
struct FirstTokenHeadBuffers {
  float *in, *in_drop, *pre, *act, *drop;  // (B, D)
  float *logits, *d_logits;                // (B, K)
  float *d_head, *d_in;                    // (B, D)
};

struct FirstTokenHead {
  FirstTokenHead(const ModelConfig& config, int64_t max_sequences);

  // How a head of this config computes: the activation and whether it has an input dropout.
  HeadActivation activation;
  bool input_dropout;
  LinearPlans dense, out;
};

// The rates of one forward/backward (0 outside training).
struct HeadRates {
  float input, output;
};

// logits from buffers.in (B rows); sample_ids (B) key the dropout masks.
void first_token_head_forward(const FirstTokenHead& head, const FirstTokenHeadBuffers& b,
                              const ModelParams& p, const HeadRates& rates,
                              const StepContext& context, const int64_t* sample_ids, int64_t B,
                              int64_t D);

// From buffers.d_logits: parameter gradients ACCUMULATE into g, buffers.d_in is the gradient of
// buffers.in. Tells `listener` (may be null) when the classifier's and the pooler's gradients are
// final.
void first_token_head_backward(const FirstTokenHead& head, const FirstTokenHeadBuffers& b,
                               const ModelParams& p, const ModelParams& g, const HeadRates& rates,
                               const StepContext& context, const int64_t* sample_ids, int64_t B,
                               const ModelConfig& config, GradListener* listener);

}  // namespace cpuft
