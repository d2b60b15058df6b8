// Optimizer: one update rule over the flat parameter buffer (ParamLayout), with HF Trainer's two
// parameter groups (weight decay only where ParamSpec::decays). TrainStep runs it; checkpoints
// save and restore it through state_kind(), steps_taken() and state_buffers().
//
// make_optimizer() is TrainingArguments.optim + optim_args: "adamw_torch" and "adamw_torch_fused"
// (AdamW, adamw.h: torch's fused and single-tensor AdamW are the same arithmetic here) and "sgd"
// (Sgd, sgd.h, torch.optim.SGD as the Trainer builds it).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/buffer.h"
#include "model/param_layout.h"

namespace cpuft {

// A per-parameter state tensor of an optimizer: layout.total_floats() floats, checkpointed as
// "<name>.<parameter name>" per ParamSpec.
struct OptimizerState {
  std::string name;  // "exp_avg", "exp_avg_sq", "momentum_buffer"
  AlignedBuffer<float>* values = nullptr;
};

// Rows [begin, begin + rows x width) of a gradient buffer that are mostly exactly zero (the word
// table's: a step writes the rows of its tokens). rows == 0: none.
struct MostlyZeroRows {
  int64_t begin = 0, rows = 0, width = 0;
};

// What the update's pass over each tensor does besides the update, so that a training step reads
// and writes each buffer once (TrainStep): the clip's scaling, the bf16 copies of the new weights,
// the zeroing of the used gradients. The default does none of them.
struct UpdatePass {
  // The gradients are read as g * grad_scale: one fp32 product, the bits clip_grad_norm's scaling
  // would have stored (1: as they are).
  float grad_scale = 1;
  // Empty, or one entry per ParamSpec (layout order): where the bf16 rounding of the tensor's new
  // values goes (Bf16Weights' copies), or nullptr.
  std::span<bf16* const> bf16_copy;
  // Empty, or one entry per ParamSpec: nonzero where the tensor's gradient is set to +0 once read.
  std::span<const uint8_t> zero_grad;
  // The word table's rows (one whole tensor), or none. AdamW updates only the elements a step has
  // touched and only decays the others (KernelTable::adamw_update_sparse; the same values): a
  // vocabulary row gets a gradient once a batch holds its token, and MRPC's train set holds 38% of
  // all-MiniLM-L6-v2's 30,522, so most of the table is never touched.
  MostlyZeroRows sparse_rows;

  // For spec i (layout order): its bf16 copy or nullptr, and whether its gradient is zeroed.
  bf16* copy_of(size_t i) const { return bf16_copy.empty() ? nullptr : bf16_copy[i]; }
  bool zeroes(size_t i) const { return !zero_grad.empty() && zero_grad[i] != 0; }
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // One update of all parameters with learning rate `lr` (the schedule's value for this step) and
  // what `pass` adds to it; counts the step first.
  virtual void step(float* params, float* grads, double lr, const UpdatePass& pass) = 0;

  // The algorithm, as checkpoints name it: "adamw" (both adamw_torch names) or "sgd". A checkpoint
  // records "<state_kind>_steps"; another kind's checkpoint is refused on resume.
  virtual const char* state_kind() const = 0;
  // Its per-parameter state tensors, in checkpoint order (none for SGD without momentum).
  virtual std::vector<OptimizerState> state_buffers() = 0;

  int64_t steps_taken() const { return steps_; }
  // For resuming from a checkpoint whose state was loaded into state_buffers().
  void set_steps_taken(int64_t steps) { steps_ = steps; }

 protected:
  // Checks that pass's per-spec spans are empty or have one entry per spec of `layout`.
  static void check_pass(const UpdatePass& pass, const ParamLayout& layout);

  int64_t steps_ = 0;
};

// TrainingArguments' fields that the optimizers read (run_glue's flags of the same names).
struct OptimizerOptions {
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double weight_decay = 0.0;  // on ParamSpec::decays parameters only, whatever the optimizer
};

// The optimizer TrainingArguments.optim names, configured from `options` and `optim_args`
// (TrainingArguments.optim_args, "key=value,key=value", spaces ignored, as transformers parses
// it):
//   adamw_torch, adamw_torch_fused: AdamW(adam_beta1, adam_beta2, adam_epsilon, weight_decay);
//     takes no optim_args (transformers ignores them; cpuft refuses them).
//   sgd: torch.optim.SGD(lr from the schedule, weight_decay on the decay group); optim_args keys
//     momentum (default 0), dampening (0), nesterov (True/1/yes, case-insensitive, else false) and
//     weight_decay (accepted and, as in transformers, without effect: the Trainer's two parameter
//     groups set every parameter's decay). transformers ignores other keys; cpuft refuses them.
// Any other name (adafactor, adagrad, rmsprop, the bitsandbytes and schedule-free ones, ...) and
// malformed optim_args throw cpuft::Error in one line naming the valid choices.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const std::string& optim_args,
                                          const ParamLayout& layout,
                                          const OptimizerOptions& options);

}  // namespace cpuft
