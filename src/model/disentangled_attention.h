// DeBERTa's disentangled self-attention on packed sequences (transformers' DebertaV2's
// DisentangledSelfAttention with share_att_key), forward and backward.
//
// For the tokens i (query) and j (key) of one sequence and one head, with r = i - j:
//   score(i, j) = scale * ( q_i . k_j                     content to content
//                         + q_i . pk[row(r)]              content to position (c2p)
//                         + k_j . pq[row(r)] )            position to content (p2c)
//   scale = 1 / sqrt(Dh * (1 + [c2p] + [p2c]))
// pq and pk are the relative embeddings projected by the layer's own query and key weights
// (share_att_key): pos (2S, 2D) = rel Wqk^T + bqk, pq in columns [0, D), pk in [D, 2D).
// row(r) = clamp(bucket(r) + S, 0, 2S - 1) (RelativePositions below). HF's p2c term gathers at
// -bucket(j - i), which is bucket(i - j): the buckets are odd in r, so one row index serves both.
//
// How: per (sequence, head) block of T tokens, the rows a block can reach are the contiguous range
// row(-(T-1)) .. row(T-1) (row() is monotone), W <= 2T - 1 of them. The block computes the
// (T, W) products Q pk_range^T and K pq_range^T with one GEMM each and adds their gathered
// entries to Q K^T; never a (T, 2S) product and never a (T, T, Dh) tensor. Backward scatters the
// score gradients back into (T, W) and runs the transposed GEMMs. The gradients of pos are shared
// by all sequences: backward runs one OpenMP thread per head (each head owns its Dh columns of
// pos), over the sequences in order, so the sums have a fixed order whatever the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "model/attention.h"

namespace cpuft {

struct ModelConfig;

// HF's make_log_bucket_position for one distance r (float32 arithmetic, as torch computes it):
// r itself where |r| <= buckets / 2, else sign(r) * (ceil(log(|r| / mid) / log((max - 1) / mid)
// * (mid - 1)) + mid), mid = buckets / 2.
int64_t log_bucket_position(int64_t r, int64_t buckets, int64_t max_position);

// row(r) for |r| < max_len, from the config's bucketing (position_buckets > 0) or the plain
// distance (clamped either way).
class RelativePositions {
 public:
  RelativePositions(const ModelConfig& config, int64_t max_len);
  int64_t span() const { return span_; }  // S
  int64_t row(int64_t r) const { return rows_[static_cast<std::size_t>(r + max_len_ - 1)]; }
  // The range of rows a sequence of up to T tokens reaches: [row(-(T-1)), row(T-1)].
  int64_t first_row(int64_t T) const { return row(-(T - 1)); }
  int64_t last_row(int64_t T) const { return row(T - 1); }

 private:
  int64_t span_, max_len_;
  std::vector<int32_t> rows_;  // (2 max_len - 1)
};

struct DisentangledDims {
  AttentionDims attention;
  bool c2p, p2c;
  float scale;  // 1 / sqrt(Dh (1 + c2p + p2c))
  const RelativePositions* positions;
};

// Floats of per-thread scratch for sequences up to T tokens: forward and backward.
int64_t disentangled_scratch_floats(int64_t T);

// ctx (N, D) from qkv (N, 3D) and pos (2S, 2D; only the rows the batch reaches are read). Writes
// probs (layout of attention_prob_offsets) before dropout, the dropped ones with their sign bit
// set; the dropout masks are attention.h's (one stream per sequence and head), and backward reads
// them off those signs (KernelTable::dropout_unmark).
void disentangled_attention_forward(float* ctx, float* probs, const float* qkv, const float* pos,
                                    const int64_t* seq_offsets, const int64_t* prob_offsets,
                                    const int64_t* sample_ids, int64_t B,
                                    const DisentangledDims& dims, float dropout_p, RngKey key,
                                    float* scratch, int64_t scratch_per_thread);

// d_qkv (N, 3D) overwritten from d_ctx (N, D); d_pos (2S, 2D) ACCUMULATES in the rows the batch
// reaches.
void disentangled_attention_backward(float* d_qkv, float* d_pos, const float* d_ctx,
                                     const float* qkv, const float* pos, const float* probs,
                                     const int64_t* seq_offsets, const int64_t* prob_offsets,
                                     int64_t B, const DisentangledDims& dims, float dropout_p,
                                     float* scratch, int64_t scratch_per_thread);

}  // namespace cpuft
