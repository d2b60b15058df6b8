// GradListener: what the backward pass tells the code around it while it runs.
#pragma once

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

// Shorthand for the layers' backward functions, whose listener may be absent.
inline void progress_point(GradListener* listener) {
  if (listener != nullptr) listener->on_progress_point();
}

}  // namespace cpuft
