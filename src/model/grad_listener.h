// GradListener: what the backward pass tells the code around it while it runs.
#pragma once

#include <string>

namespace cpuft {

class GradListener {
 public:
  virtual ~GradListener() = default;
  // Every parameter gradient of `layer` (param_layout.h's backward order) is final.
  virtual void on_layer_grads_ready(int layer) = 0;
  // Between two products of backward (about ten per encoder layer), on the calling thread and
  // outside any parallel region. A data-parallel trainer lets its non-blocking all-reduces make
  // progress here: MPI moves a message's next pieces only inside an MPI call, and one call per
  // layer leaves a slow link idle for most of a layer's backward (docs/distributed.md).
  virtual void on_progress_point() {}
};

// The id under which an encoder layer's FFN block is reported: its feed-forward weights, biases
// and LayerNorm (the layer's parameters from the first of them on, in every family's table) are
// final once that block's backward is done, before the rest of the layer's. Reported first, with
// their own bucket, they go on the wire a part of a layer earlier: for layer 0, the last full
// layer of backward, that is the part of the exchange left after backward ends
// (docs/distributed.md). The layer's own id then stands for the rest of its parameters.
inline constexpr int kFfnPartIds = 1 << 16;
inline int ffn_part_id(int layer) {
  return kFfnPartIds + layer;
}
inline void ffn_grads_ready(GradListener* listener, int layer) {
  if (listener != nullptr) listener->on_layer_grads_ready(ffn_part_id(layer));
}
// A reported id as people read it: "ffn3" for layer 3's FFN block, else the layer's number.
inline std::string grad_part_name(int id) {
  return id >= kFfnPartIds ? "ffn" + std::to_string(id - kFfnPartIds) : std::to_string(id);
}

// Shorthand for the layers' backward functions, whose listener may be absent.
inline void progress_point(GradListener* listener) {
  if (listener != nullptr) listener->on_progress_point();
}

}  // namespace cpuft
