// The real all-MiniLM-L6-v2 golden (tests/fixtures/golden_minilm_mrpc.safetensors): the weights
// come from scripts/fetch_minilm.sh (the directory in CPUFT_MINILM_DIR, or its default cache), the
// new classifier head and the batch of 8 MRPC dev pairs from the fixture. The fixture is compact:
// tensors of up to 4096 elements are stored whole, larger ones as their L2 norm and 256 Rademacher
// projections (golden/projection.h), through which every element is compared.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "golden/golden_model.h"
#include "golden/golden_util.h"
#include "golden/projection.h"

namespace cpuft::golden {

using cpuft::testing::minilm_dir;

// ||ours - ref|| / ref_norm estimated from the projections: sqrt(mean_k (<ours, r_k> - ref_k)^2)
// / ref_norm, with <ours, r_k> summed over the elements `projector` was given.
inline double projected_relative_error(const Projector& projector, const std::vector<double>& ref,
                                       double ref_norm) {
  const Projections ours = projector.result();
  EXPECT_EQ(ref.size(), static_cast<size_t>(kProjections));
  double sum = 0;
  for (int k = 0; k < kProjections; ++k) sum += std::pow(ours[k] - ref.at(k), 2);
  return std::sqrt(sum / kProjections) / ref_norm;
}

// The compact form of tests/fixtures/golden_minilm_mrpc_bf16.safetensors (the --bf16 reference):
// a tensor's L2 norm and 32 fixed samples, element round(i * (numel - 1) / 31) for i = 0..31, as
// tools/make_goldens.py's sample() takes them (31 is odd, so there are no ties and integer rounding
// is exact).
inline std::vector<float> samples(const float* x, int64_t numel) {
  std::vector<float> out(32);
  for (int64_t i = 0; i < 32; ++i) out[i] = x[(i * (numel - 1) + 15) / 31];
  return out;
}

// Our tensor x against the reference's norm and samples: the norms agree within `tolerance`
// relative plus `floor`, and the samples' difference is within the same bound (a necessary
// condition of a relative L2 error below `tolerance` of the whole tensor).
inline void expect_close(const float* x, int64_t numel, float ref_norm,
                         const std::vector<float>& ref_samples, double tolerance, double floor,
                         const std::string& what) {
  const double norm = l2(x, numel);
  EXPECT_NEAR(norm, ref_norm, tolerance * ref_norm + floor) << what;
  const std::vector<float> ours = samples(x, numel);
  double diff = 0;
  for (size_t i = 0; i < 32; ++i)
    diff += std::pow(static_cast<double>(ours[i]) - ref_samples[i], 2);
  EXPECT_LE(std::sqrt(diff), tolerance * ref_norm + floor) << what;
}

// The MiniLM weights plus the fixture's head (init.*), the fixture's batch, and a model of the
// requested precision. Check `ok` first (ASSERT_TRUE in the test): the weights may be missing.
struct MiniLmGolden : GoldenModel {
  explicit MiniLmGolden(MatmulPrecision precision = MatmulPrecision::f32)
      : GoldenModel("golden_minilm_mrpc.safetensors", 128, precision) {
    const std::string dir = minilm_dir();
    ok = std::filesystem::exists(dir + "/model.safetensors");
    if (!ok) return;
    const LoadReport report = load_hf_weights(SafetensorsFile::open(dir + "/model.safetensors"),
                                              layout, config, params.data());
    // The checkpoint is a bare BertModel: only the classifier head is new; take HF's draw
    // of it.
    std::vector<std::string> initialised = report.initialised;
    std::sort(initialised.begin(), initialised.end());
    EXPECT_EQ(initialised, metadata_json(file, "new_params").get<std::vector<std::string>>());
    for (const std::string& name : report.initialised) {
      ok = ok && file.find("init." + name) != nullptr;
      EXPECT_NE(file.find("init." + name), nullptr) << name;
      if (ok) file.read_f32(*file.find("init." + name), params.data() + layout.at(name).offset);
    }
    model.refresh_bf16_weights(p);  // a no-op for fp32
  }

  bool ok = false;  // weights found and loaded
};

}  // namespace cpuft::golden
