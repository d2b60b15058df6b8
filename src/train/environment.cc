// `cpuft env` and `cpuft inspect`: what a run would use, and what a model folder holds.
#include "train/environment.h"

#include <cstdio>
#include <filesystem>
#include <vector>

#include "gemm/matmul_plan.h"
#include "io/hf_checkpoint.h"
#include "io/weight_files.h"
#include "kernels/kernels.h"
#include "model/family.h"
#include "model/model_config.h"
#include "model/param_layout.h"
#include "train/distributed.h"

namespace cpuft {

// What this run would use: kernels, oneDNN, and for every rank the launcher's view, the cores and
// threads it owns, the backend and the host.
void print_environment(const std::string& backend) {
  DistContext dist = start_distributed(backend, 60);
  const std::vector<std::string> ranks = describe_ranks(dist);
  if (dist.rank() != 0) return;
  std::printf("cpuft %s\n", CPUFT_VERSION_STRING);
  std::printf("kernels: %s\n", kernels().isa);
  std::printf("oneDNN: %s\n", onednn_version_string());
  {  // which kernels oneDNN picks for a MiniLM-sized linear layer, in each precision
    const LinearPlans f32(64, 384, 1536);
    std::printf("matmul fp32: %s\n", f32.fwd.implementation().c_str());
    if (cpu_has_bf16_matmul()) {
      const LinearPlans b16(64, 384, 1536, MatmulPrecision::bf16);
      std::printf("matmul bf16: %s (--bf16 available)\n", b16.fwd.implementation().c_str());
    } else {
      std::printf("matmul bf16: no AVX512_BF16/AMX-BF16 (--bf16 refused)\n");
    }
  }
  std::printf("launcher: %s\n", dist.launch.describe().c_str());
  std::printf("backends: mpi, single%s\n",
              ccl_available() ? ", ccl (oneCCL)" : " (no ccl: built without oneCCL)");
  for (const std::string& line : ranks) std::printf("%s\n", line.c_str());
}

// Loads a Hugging Face model folder and reports what it holds.
void print_model_summary(const std::string& dir) {
  const std::filesystem::path root(dir);
  const ModelConfig config = load_model_config((root / "config.json").string());
  const ParamLayout layout(config);
  std::vector<float> params(static_cast<size_t>(layout.total_floats()));
  const LoadReport report =
      load_hf_weights(open_weight_files(root.string()), layout, config, params.data());
  int64_t count = 0;
  for (const ParamSpec& spec : layout.specs()) count += spec.numel;
  std::printf("%s: %s, %lld layers, hidden %lld, %lld heads, FFN %lld, vocab %lld, %lld labels\n",
              dir.c_str(), family_spec(config.family).model_type,
              static_cast<long long>(config.num_hidden_layers),
              static_cast<long long>(config.hidden_size),
              static_cast<long long>(config.num_attention_heads),
              static_cast<long long>(config.intermediate_size),
              static_cast<long long>(config.vocab_size), static_cast<long long>(config.num_labels));
  std::printf("parameters: %lld in %zu tensors\n", static_cast<long long>(count),
              layout.specs().size());
  for (const std::string& name : report.initialised)
    std::printf("initialised (absent from the checkpoint): %s\n", name.c_str());
  for (const std::string& name : report.ignored)
    std::printf("ignored (not a model parameter): %s\n", name.c_str());
}

}  // namespace cpuft
