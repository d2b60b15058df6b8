#include "model/first_token_head.h"

#include "kernels/kernels.h"
#include "model/activation.h"
#include "model/dropout_streams.h"
#include "model/packed_dropout.h"
#include "model/param_layout.h"

namespace cpuft {

namespace {

// The head's two dropout sites (the output site keeps number 0, BERT's only head dropout).
constexpr uint32_t kHeadOutputSite = 0, kHeadInputSite = 1;

RngKey head_key(const StepContext& context, uint32_t site) {
  return dropout_key(context, kClassifierDropoutLayer, site);
}

}  // namespace

FirstTokenHead::FirstTokenHead(const ModelConfig& c, int64_t max_sequences)
    : activation(family_spec(c.family).head_activation),
      input_dropout(family_spec(c.family).head_input_dropout),
      dense(max_sequences, c.hidden_size, c.hidden_size, MatmulPrecision::f32, "head_dense"),
      out(max_sequences, c.hidden_size, c.num_labels, MatmulPrecision::f32, "head_out") {}

void first_token_head_forward(const FirstTokenHead& head, const FirstTokenHeadBuffers& b,
                              const ModelParams& p, const HeadRates& rates,
                              const StepContext& context, const int64_t* sample_ids, int64_t B,
                              int64_t D) {
  const KernelTable& k = kernels();
  const PackedRows rows{B, nullptr, sample_ids, D};  // one row per sequence
  if (head.input_dropout)
    packed_dropout_forward(k, b.in_drop, b.in, rates.input, head_key(context, kHeadInputSite),
                           rows);
  head.dense.forward(b.pre, b.in_drop, p.head_dense_w, p.head_dense_b, B);
  activation_forward(k, head.activation, b.act, b.pre, B * D);
  packed_dropout_forward(k, b.drop, b.act, rates.output, head_key(context, kHeadOutputSite), rows);
  head.out.forward(b.logits, b.drop, p.head_out_w, p.head_out_b, B);
}

void first_token_head_backward(const FirstTokenHead& head, const FirstTokenHeadBuffers& b,
                               const ModelParams& p, const ModelParams& g, const HeadRates& rates,
                               const StepContext& context, const int64_t* sample_ids, int64_t B,
                               const ModelConfig& config, GradListener* listener) {
  const KernelTable& k = kernels();
  const int64_t D = config.hidden_size;
  const PackedRows rows{B, nullptr, sample_ids, D};
  // undo: logits = drop Wo^T + bo    (d_logits came from the loss)
  head.out.backward_weights(g.head_out_w, b.d_logits, b.drop, B);
  k.bias_backward(g.head_out_b, b.d_logits, B, config.num_labels);
  head.out.backward_data(b.d_head, b.d_logits, p.head_out_w, B);
  if (listener != nullptr) listener->on_layer_grads_ready(classifier_layer(config));
  // undo: drop = dropout(act(pre)); pre = in_drop Wd^T + bd
  packed_dropout_backward(k, b.d_head, b.d_head, rates.output, head_key(context, kHeadOutputSite),
                          rows);
  activation_backward(k, head.activation, b.d_head, b.d_head, b.pre, b.act, B * D);
  head.dense.backward_weights(g.head_dense_w, b.d_head, b.in_drop, B);
  k.bias_backward(g.head_dense_b, b.d_head, B, D);
  head.dense.backward_data(b.d_in, b.d_head, p.head_dense_w, B);
  if (listener != nullptr) listener->on_layer_grads_ready(pooler_layer(config));
  // undo: in_drop = dropout?(in)
  if (head.input_dropout)
    packed_dropout_backward(k, b.d_in, b.d_in, rates.input, head_key(context, kHeadInputSite),
                            rows);
}

}  // namespace cpuft
