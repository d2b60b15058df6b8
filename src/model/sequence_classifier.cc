#include "model/sequence_classifier.h"

#include <omp.h>

#include <algorithm>

#include "core/check.h"
#include "kernels/kernels.h"
#include "model/arena_carver.h"
#include "model/attention.h"
#include "model/deberta.h"
#include "model/dropout_streams.h"
#include "model/encoder_layer.h"
#include "model/family.h"
#include "model/first_token_head.h"
#include "model/first_token_layer.h"
#include "model/modernbert.h"
#include "model/packed_dropout.h"

namespace cpuft {

// The activations and scratch of one forward/backward, carved from one arena sized for the
// model's limits (ModelLimits). Counting alone (base == nullptr) tells the memory a model needs
// before anything is allocated: SequenceClassifier::activation_bytes.
struct ClassifierBuffers {
  // Embeddings (E = D except in ELECTRA)
  std::vector<int32_t> positions;  // (N) position ids by the family's rule
  float* emb_sum;                  // (N, E) word + position (+ type)
  float* emb_mean;                 // (N)
  float* emb_rstd;                 // (N)
  float* emb_ln;                   // (N, E) LayerNorm output before dropout
  float* emb_drop;                 // (N, E) after dropout, projected to h0 (ELECTRA); else = h0
  float* d_emb_drop;               // (N, E)
  float* d_emb_sum;                // (N, E)
  float* h0;                       // (N, D) encoder input
  std::vector<LayerActivations> layers;  // all but the last layer
  // The last layer, for the first token of each sequence only (model/first_token_layer.h): the
  // head reads nothing else.
  FirstTokenActivations last{};  // value-initialized: the bf16 pointers stay nullptr in fp32
  // Head on the first token of each sequence (model/first_token_head.h); head.in holds the last
  // layer's output rows.
  FirstTokenHeadBuffers head{};
  float* d_hidden[2];  // 2 x (N, D), ping-pong between layers
  EncoderScratch scratch;

  std::vector<int64_t> prob_offsets;
  std::vector<int64_t> local_sample_ids;  // 0..max_sequences-1, for batches without sample_ids
  const int64_t* sample_ids = nullptr;    // (B) of the last forward
  const Batch* batch = nullptr;           // of the last forward
  StepContext context;

  // Carves all buffers from the arena; with base == nullptr only counts floats. Under bf16 the
  // layers' fp32 ctx, h1 and act are only inputs of the next operations of their own layer's
  // forward (products, residual, LayerNorm): backward reads their bf16 roundings (x_b, ctx_b,
  // h1_b, act_b) instead, so ctx and h1 are one shared set of buffers and act lives in
  // scratch.nf (ffn_act nullptr). With limits.recompute the fp32 act is not kept either
  // (rowwise_backward recomputes it) and neither are the attention probabilities (attention.h).
  int64_t carve(const ModelConfig& c, const ModelLimits& limits, MatmulPrecision precision,
                float* base) {
    const int64_t N = limits.max_tokens, B = limits.max_sequences, T = limits.max_seq_len;
    const int64_t D = c.hidden_size, F = c.intermediate_size, H = c.num_attention_heads;
    const int64_t K = c.num_labels, E = c.embedding_size;
    ArenaCarver<float> a(base);
    emb_sum = a.take(N * E);
    emb_mean = a.take(N);
    emb_rstd = a.take(N);
    emb_ln = a.take(N * E);
    h0 = a.take(N * D);
    emb_drop = c.has_embedding_projection() ? a.take(N * E) : h0;
    d_emb_drop = a.take(N * E);
    d_emb_sum = a.take(N * E);
    layers.resize(static_cast<size_t>(c.num_hidden_layers - 1));
    const bool shared = precision == MatmulPrecision::bf16 && !layers.empty();
    const bool keep_act = precision != MatmulPrecision::bf16 && !limits.recompute;
    // sum_s T_s^2 <= T * sum_s T_s = T * N: bounds the attention probabilities of any batch.
    const int64_t probs = limits.recompute ? 0 : c.num_attention_heads * T * N;
    float* shared_ctx = shared ? a.take(N * D) : nullptr;
    float* shared_h1 = shared ? a.take(N * D) : nullptr;
    for (LayerActivations& l : layers) {
      l.qkv = a.take(N * 3 * D);
      l.probs = probs > 0 ? a.take(probs) : nullptr;  // nullptr: backward recomputes them
      l.ctx = shared ? shared_ctx : a.take(N * D);
      l.s1 = a.take(N * D);
      l.ln1_mean = a.take(N);
      l.ln1_rstd = a.take(N);
      l.h1 = shared ? shared_h1 : a.take(N * D);
      l.ffn_pre = a.take(N * F);
      l.ffn_act = keep_act ? a.take(N * F) : nullptr;
      l.s2 = a.take(N * D);
      l.ln2_mean = a.take(N);
      l.ln2_rstd = a.take(N);
      l.out = a.take(N * D);
    }
    last.x_first = a.take(B * D);
    last.kv = a.take(N * 2 * D);
    last.q = a.take(B * D);
    last.probs = a.take(H * N);
    last.ctx = a.take(B * D);
    last.s1 = a.take(B * D);
    last.ln1_mean = a.take(B);
    last.ln1_rstd = a.take(B);
    last.h1 = a.take(B * D);
    last.ffn_pre = a.take(B * F);
    last.ffn_act = a.take(B * F);
    last.s2 = a.take(B * D);
    last.ln2_mean = a.take(B);
    last.ln2_rstd = a.take(B);
    last.out = a.take(B * D);
    head.in = a.take(B * D);
    head.in_drop = family_spec(c.family).head_input_dropout ? a.take(B * D) : head.in;
    head.pre = a.take(B * D);
    head.act = a.take(B * D);
    head.drop = a.take(B * D);
    head.logits = a.take(B * K);
    head.d_logits = a.take(B * K);
    head.d_head = a.take(B * D);
    head.d_in = a.take(B * D);
    d_hidden[0] = a.take(N * D);
    d_hidden[1] = a.take(N * D);
    for (float*& p : scratch.nd) p = a.take(N * D);
    scratch.nf = a.take(N * F);
    scratch.n3d = a.take(N * 3 * D);
    scratch.attention_per_thread = attention_scratch_floats(T);
    scratch.attention = a.take(scratch.attention_per_thread * omp_get_max_threads());
    return a.used();
  }

  // Carves the bf16 buffers (bf16 models only); with base == nullptr only counts elements.
  int64_t carve_bf16(const ModelConfig& c, const ModelLimits& limits, bf16* base) {
    const int64_t N = limits.max_tokens, B = limits.max_sequences;
    const int64_t D = c.hidden_size, F = c.intermediate_size;
    ArenaCarver<bf16> a(base);
    for (LayerActivations& l : layers) {
      l.x_b = a.take(N * D);
      l.ctx_b = a.take(N * D);
      l.h1_b = a.take(N * D);
      l.act_b = a.take(N * F);
    }
    last.x_b = a.take(N * D);
    last.x_first_b = a.take(B * D);
    last.ctx_b = a.take(B * D);
    last.h1_b = a.take(B * D);
    last.act_b = a.take(B * F);
    scratch.grad_b = a.take(N * std::max(3 * D, F));
    return a.used();
  }
};

struct SequenceClassifier::State : ClassifierBuffers {
  State(const ModelConfig& c, const ModelLimits& limits, MatmulPrecision precision)
      : plans{LinearPlans(limits.max_tokens, c.hidden_size, 3 * c.hidden_size, precision, "qkv"),
              LinearPlans(limits.max_tokens, c.hidden_size, c.hidden_size, precision, "attn_out"),
              LinearPlans(limits.max_tokens, c.hidden_size, c.intermediate_size, precision,
                          "ffn_in"),
              LinearPlans(limits.max_tokens, c.intermediate_size, c.hidden_size, precision,
                          "ffn_out")},
        first_plans{
            LinearPlans(limits.max_tokens, c.hidden_size, 2 * c.hidden_size, precision, "kv"),
            LinearPlans(limits.max_sequences, c.hidden_size, c.hidden_size, precision, "q_first")},
        head_plans(c, limits.max_sequences),
        family(family_spec(c.family)) {
    if (c.has_embedding_projection())
      embedding_projection = std::make_unique<LinearPlans>(
          limits.max_tokens, c.embedding_size, c.hidden_size, MatmulPrecision::f32, "emb_proj");
    if (precision == MatmulPrecision::bf16)
      bf16_weights = std::make_unique<Bf16Weights>(ParamLayout(c));
  }

  EncoderPlans plans;
  FirstTokenPlans first_plans;  // the last layer's products beyond `plans`
  FirstTokenHead head_plans;    // fp32: its products are (B, D) x (D, D) and smaller
  // ELECTRA's (N, E) -> (N, D) projection of the embeddings (fp32, as the head), or nullptr.
  std::unique_ptr<LinearPlans> embedding_projection;
  const FamilySpec& family;
  std::unique_ptr<Bf16Weights> bf16_weights;  // bf16 models only
  // Layer l's bf16 weights, or nullptr for an fp32 model.
  const LayerBf16Weights* bf16_layer(size_t l) const {
    return bf16_weights ? &bf16_weights->layer(l) : nullptr;
  }

  AlignedBuffer<float> arena;
  AlignedBuffer<bf16> bf16_arena;  // bf16 models only: the rounded product inputs
};

SequenceClassifier::SequenceClassifier(const ModelConfig& config, const ModelLimits& limits,
                                       MatmulPrecision precision)
    : config_(config), limits_(limits) {
  CPUFT_REQUIRE(limits.max_tokens > 0 && limits.max_sequences > 0 && limits.max_seq_len > 0,
                "model limits must be positive");
  CPUFT_REQUIRE(limits.max_seq_len <= config.max_sequence_length(), "max sequence length ",
                limits.max_seq_len, " exceeds the ", config.max_sequence_length(),
                " positions of the model (max_position_embeddings ", config.max_position_embeddings,
                ")");
  if (config.family == Family::modernbert) {
    modern_ = std::make_unique<ModernBertClassifier>(config, limits, precision);
    return;
  }
  if (config.family == Family::deberta_v2) {
    deberta_ = std::make_unique<DebertaClassifier>(config, limits, precision);
    return;
  }
  state_ = std::make_unique<State>(config, limits, precision);
  const int64_t floats = state_->carve(config, limits, precision, nullptr);
  // Sized for the largest batch the data can make; pages are taken as batches reach them.
  state_->arena = AlignedBuffer<float>(static_cast<size_t>(floats), FirstTouch::on_use);
  state_->carve(config, limits, precision, state_->arena.data());
  if (precision == MatmulPrecision::bf16) {  // else the bf16 pointers stay nullptr
    const int64_t halves = state_->carve_bf16(config, limits, nullptr);
    state_->bf16_arena = AlignedBuffer<bf16>(static_cast<size_t>(halves), FirstTouch::on_use);
    state_->carve_bf16(config, limits, state_->bf16_arena.data());
  }
  state_->prob_offsets.resize(static_cast<size_t>(limits.max_sequences + 1));
  state_->local_sample_ids.resize(static_cast<size_t>(limits.max_sequences));
  for (size_t i = 0; i < state_->local_sample_ids.size(); ++i)
    state_->local_sample_ids[i] = static_cast<int64_t>(i);
  state_->positions.resize(static_cast<size_t>(limits.max_tokens));
}

SequenceClassifier::~SequenceClassifier() = default;

int64_t SequenceClassifier::activation_bytes(const ModelConfig& config, const ModelLimits& limits,
                                             MatmulPrecision precision) {
  if (config.family == Family::modernbert)
    return ModernBertClassifier::activation_bytes(config, limits, precision);
  if (config.family == Family::deberta_v2)
    return DebertaClassifier::activation_bytes(config, limits, precision);
  ClassifierBuffers counter;
  int64_t bytes =
      counter.carve(config, limits, precision, nullptr) * static_cast<int64_t>(sizeof(float));
  if (precision == MatmulPrecision::bf16)
    bytes += counter.carve_bf16(config, limits, nullptr) * static_cast<int64_t>(sizeof(bf16));
  return bytes;
}

const float* SequenceClassifier::logits() const {
  if (modern_) return modern_->logits();
  if (deberta_) return deberta_->logits();
  return state_->head.logits;
}

void SequenceClassifier::refresh_bf16_weights(const ModelParams& params) {
  if (modern_) {
    modern_->refresh_bf16_weights(params);
  } else if (deberta_) {
    deberta_->refresh_bf16_weights(params);
  } else if (state_->bf16_weights) {
    state_->bf16_weights->refresh(params);
  }
}

std::vector<Bf16Weights::Target> SequenceClassifier::bf16_targets(const ModelParams& params) {
  if (modern_) return modern_->bf16_targets(params);
  if (deberta_) return deberta_->bf16_targets(params);
  if (state_->bf16_weights) return state_->bf16_weights->targets(params);
  return {};
}

namespace {

// The dropout streams of encoder layer l.
struct LayerKeys {
  RngKey keys[3];
};
LayerKeys layer_keys(const StepContext& ctx, size_t l) {
  const uint32_t layer = static_cast<uint32_t>(l);
  return LayerKeys{{dropout_key(ctx, layer, kAttentionProbs),
                    dropout_key(ctx, layer, kAttentionOutput),
                    dropout_key(ctx, layer, kFfnOutput)}};
}

// The head's dropouts: the classifier dropout, before and after the dense layer.
HeadRates head_rates(const ModelConfig& c, const StepContext& context) {
  const float rate = context.training ? c.effective_classifier_dropout() : 0.0f;
  return HeadRates{rate, rate};
}

EncoderDims encoder_dims(const ModelConfig& c, bool training) {
  const float hidden = training ? static_cast<float>(c.hidden_dropout_prob) : 0.0f;
  return EncoderDims{
      AttentionDims{c.hidden_size, c.num_attention_heads, c.head_dim()},
      c.intermediate_size,
      static_cast<float>(c.layer_norm_eps),
      hidden,
      training ? static_cast<float>(c.attention_probs_dropout_prob) : 0.0f,
      family_spec(c.family).attention_output_dropout ? hidden : 0.0f,
  };
}

}  // namespace

float SequenceClassifier::forward(const ModelParams& p, const Batch& batch,
                                  const StepContext& context, bool with_loss, float loss_scale) {
  const KernelTable& k = kernels();
  const ModelConfig& c = config_;
  const FamilySpec& family = family_spec(c.family);
  const int64_t N = batch.num_tokens(), B = batch.num_sequences();
  CPUFT_REQUIRE(N <= limits_.max_tokens && B <= limits_.max_sequences && B > 0, "batch of ", B,
                " sequences / ", N, " tokens exceeds the model limits (", limits_.max_sequences,
                " / ", limits_.max_tokens, ")");
  for (int64_t i = 0; i < B; ++i)
    CPUFT_REQUIRE(batch.length(i) >= 1 && batch.length(i) <= limits_.max_seq_len, "sequence ", i,
                  " has length ", batch.length(i), "; allowed 1..", limits_.max_seq_len);
  for (int64_t i = 0; i < N; ++i) {
    CPUFT_REQUIRE(batch.input_ids[i] >= 0 && batch.input_ids[i] < c.vocab_size, "token id ",
                  batch.input_ids[i], " is outside the vocabulary (", c.vocab_size, ")");
    // A model without a type table (type_vocab_size 0: DeBERTa-v3) ignores the ids, as HF does.
    CPUFT_REQUIRE(!family.token_types || c.type_vocab_size == 0 ||
                      (batch.token_type_ids[i] >= 0 && batch.token_type_ids[i] < c.type_vocab_size),
                  "token type id ", batch.token_type_ids[i], " is outside [0, ", c.type_vocab_size,
                  ")");
  }
  CPUFT_CHECK(batch.sample_ids.empty() || static_cast<int64_t>(batch.sample_ids.size()) == B,
              batch.sample_ids.size(), " sample ids for ", B, " sequences");
  has_loss_ = false;
  float* d_logits = nullptr;
  if (modern_) {
    modern_->forward(p, batch, context);
    d_logits = modern_->d_logits();
  } else if (deberta_) {
    deberta_->forward(p, batch, context);
    d_logits = deberta_->d_logits();
  } else {
    forward_encoder(p, batch, context);
    d_logits = state_->head.d_logits;
  }
  if (!with_loss) return 0.0f;
  const float* logits = this->logits();
  if (c.is_regression()) {
    CPUFT_REQUIRE(static_cast<int64_t>(batch.targets.size()) == B, "regression batch needs ", B,
                  " targets, got ", batch.targets.size());
    has_loss_ = true;
    return k.mse_forward_backward(d_logits, logits, batch.targets.data(), loss_scale, B);
  }
  CPUFT_REQUIRE(static_cast<int64_t>(batch.labels.size()) == B, "classification batch needs ", B,
                " labels, got ", batch.labels.size());
  has_loss_ = true;
  return k.cross_entropy_forward_backward(d_logits, logits, batch.labels.data(), loss_scale, B,
                                          c.num_labels, loss_options_.label_smoothing);
}

void SequenceClassifier::forward_encoder(const ModelParams& p, const Batch& batch,
                                         const StepContext& context) {
  State& s = *state_;
  const KernelTable& k = kernels();
  const ModelConfig& c = config_;
  const FamilySpec& family = s.family;
  const int64_t N = batch.num_tokens(), B = batch.num_sequences();
  const int64_t D = c.hidden_size, E = c.embedding_size;
  CPUFT_CHECK(!s.bf16_weights || s.bf16_weights->source() == p.word_emb,
              "bf16 model: refresh_bf16_weights() was not called for these weights");
  s.sample_ids = batch.sample_ids.empty() ? s.local_sample_ids.data() : batch.sample_ids.data();
  s.batch = &batch;
  s.context = context;
  attention_prob_offsets(s.prob_offsets.data(), batch.seq_offsets.data(), B, c.num_attention_heads);
  fill_position_ids(s.positions.data(), batch.input_ids.data(), batch.seq_offsets.data(), B,
                    family.positions, static_cast<int32_t>(c.pad_token_id));
  const EncoderDims dims = encoder_dims(c, context.training);
  const PackedBatch packed{N, B, batch.seq_offsets.data(), s.prob_offsets.data(), s.sample_ids};

  // Embeddings: h0 = project?(dropout(LayerNorm(word + position (+ type))))     (N, E) -> (N, D)
  {
    k.embeddings_forward(s.emb_sum, p.word_emb, p.pos_emb, p.type_emb, batch.input_ids.data(),
                         s.positions.data(), batch.token_type_ids.data(), N, E);
    k.layer_norm_forward(s.emb_ln, s.emb_mean, s.emb_rstd, s.emb_sum, p.emb_ln_w, p.emb_ln_b,
                         dims.layer_norm_eps, N, E);
    packed_dropout_forward(k, s.emb_drop, s.emb_ln, dims.hidden_dropout,
                           dropout_key(context, kEmbeddingsDropoutLayer, 0), packed.token_rows(E));
    if (s.embedding_projection)
      s.embedding_projection->forward(s.h0, s.emb_drop, p.emb_proj_w, p.emb_proj_b, N);
  }

  // Encoder layers; the last one for the first tokens only, (N, D) -> (B, D)
  const float* x = s.h0;
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const LayerKeys keys = layer_keys(context, l);
    encoder_layer_forward(s.layers[l], x, p.layers[l], s.bf16_layer(l), s.plans, packed, dims,
                          keys.keys, s.scratch);
    x = s.layers[l].out;
  }
  const size_t last = s.layers.size();
  first_token_layer_forward(s.last, x, p.layers[last], s.bf16_layer(last), s.plans, s.first_plans,
                            packed, dims, layer_keys(context, last).keys, s.scratch);

  // Head on the first token: logits = out(dropout(act(dense(dropout?(first)))))
  std::copy_n(s.last.out, B * D, s.head.in);
  first_token_head_forward(s.head_plans, s.head, p, head_rates(c, context), context, s.sample_ids,
                           B, D);
}

void SequenceClassifier::set_loss_options(const LossOptions& options) {
  const float eps = options.label_smoothing;
  CPUFT_REQUIRE(eps >= 0.0f && eps <= 1.0f, "label_smoothing_factor ", eps, " is outside [0, 1]");
  CPUFT_REQUIRE(eps == 0.0f || !config_.is_regression(), "label_smoothing_factor ", eps,
                " needs a classification model; this one is a regression (num_labels 1, MSE loss)");
  loss_options_ = options;
}

void SequenceClassifier::backward(const ModelParams& p, const ModelParams& g,
                                  GradListener* listener) {
  CPUFT_CHECK(has_loss_, "backward needs a forward with loss first");
  if (modern_) {
    modern_->backward(p, g, listener);
    return;
  }
  if (deberta_) {
    deberta_->backward(p, g, listener);
    return;
  }
  State& s = *state_;
  const KernelTable& k = kernels();
  const ModelConfig& c = config_;
  const FamilySpec& family = s.family;
  const Batch& batch = *s.batch;
  const StepContext& context = s.context;
  const int64_t N = batch.num_tokens(), B = batch.num_sequences();
  const int64_t D = c.hidden_size, E = c.embedding_size;
  const EncoderDims dims = encoder_dims(c, context.training);
  const PackedBatch packed{N, B, batch.seq_offsets.data(), s.prob_offsets.data(), s.sample_ids};
  auto ready = [&](int layer) {
    if (listener != nullptr) listener->on_layer_grads_ready(layer);
  };

  // undo: the head, to the first tokens' gradient head.d_in (B, D)
  first_token_head_backward(s.head_plans, s.head, p, g, head_rates(c, context), context,
                            s.sample_ids, B, c, listener);
  // The last layer, from the first tokens' gradient (B, D) to its input's (N, D)
  const size_t last = s.layers.size();
  float* d_out = s.d_hidden[0];
  first_token_layer_backward(d_out, s.head.d_in, last == 0 ? s.h0 : s.layers[last - 1].out, s.last,
                             p.layers[last], g.layers[last], s.bf16_layer(last), s.plans,
                             s.first_plans, packed, dims, layer_keys(context, last).keys, s.scratch,
                             listener, static_cast<int>(last));
  ready(static_cast<int>(last));

  for (int l = static_cast<int>(s.layers.size()) - 1; l >= 0; --l) {
    const float* x = l == 0 ? s.h0 : s.layers[l - 1].out;
    float* d_x = s.d_hidden[(s.layers.size() - l) % 2];
    encoder_layer_backward(d_x, d_out, x, s.layers[l], p.layers[l], g.layers[l],
                           s.bf16_layer(static_cast<size_t>(l)), s.plans, packed, dims,
                           layer_keys(context, static_cast<size_t>(l)).keys, s.scratch, listener,
                           l);
    ready(l);
    d_out = d_x;
  }

  // undo: h0 = project?(emb_drop); emb_drop = dropout(LayerNorm(emb_sum));
  //       emb_sum = word + position (+ type)
  float* d_emb_drop = d_out;  // (N, E): without a projection E = D and emb_drop is h0
  if (s.embedding_projection) {
    s.embedding_projection->backward_weights(g.emb_proj_w, d_out, s.emb_drop, N);
    k.bias_backward(g.emb_proj_b, d_out, N, D);
    s.embedding_projection->backward_data(s.d_emb_drop, d_out, p.emb_proj_w, N);
    d_emb_drop = s.d_emb_drop;
  }
  packed_dropout_backward(k, d_emb_drop, d_emb_drop, dims.hidden_dropout,
                          dropout_key(context, kEmbeddingsDropoutLayer, 0), packed.token_rows(E));
  k.layer_norm_backward(s.d_emb_sum, g.emb_ln_w, g.emb_ln_b, d_emb_drop, s.emb_sum, s.emb_mean,
                        s.emb_rstd, p.emb_ln_w, N, E);
  k.embeddings_backward(g.word_emb, g.pos_emb, g.type_emb, s.d_emb_sum, batch.input_ids.data(),
                        s.positions.data(), batch.token_type_ids.data(), N, E);
  // transformers' word tables (and RoBERTa's position table) are nn.Embedding(padding_idx =
  // pad_token_id): the padding row never gets a gradient, even where a real token looks it up.
  if (c.pad_token_id >= 0) std::fill_n(g.word_emb + c.pad_token_id * E, E, 0.0f);
  if (family.positions == PositionRule::after_padding_idx)
    std::fill_n(g.pos_emb + c.pad_token_id * E, E, 0.0f);
  ready(kEmbeddingsLayer);
}

}  // namespace cpuft
