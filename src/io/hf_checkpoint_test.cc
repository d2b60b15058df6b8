#include "io/hf_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "core/check.h"

namespace cpuft {
namespace {

const char* kConfig = R"({"vocab_size": 11, "hidden_size": 8, "num_hidden_layers": 2,
  "num_attention_heads": 2, "intermediate_size": 12, "max_position_embeddings": 16,
  "num_labels": 3, "initializer_range": 0.5})";

class BertCheckpoint : public ::testing::Test {
 protected:
  ModelConfig config = parse_model_config(kConfig, "config.json");
  ParamLayout layout{config};
  std::string dir =
      (std::filesystem::temp_directory_path() / ("cpuft_ckpt_" + std::to_string(::getpid())))
          .string();

  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }

  // Every parameter filled with a value derived from its name and index.
  std::vector<float> numbered_params() const {
    std::vector<float> params(static_cast<size_t>(layout.total_floats()), 0.0f);
    for (size_t s = 0; s < layout.specs().size(); ++s) {
      const ParamSpec& spec = layout.specs()[s];
      for (int64_t i = 0; i < spec.numel; ++i)
        params[spec.offset + i] = static_cast<float>(s) + static_cast<float>(i) * 1e-3f;
    }
    return params;
  }

  // Writes the given parameters under names transformed by `rename` ("" drops a tensor).
  std::string write(const std::vector<float>& params,
                    const std::function<std::string(const std::string&)>& rename,
                    const std::string& file = "model.safetensors") {
    std::vector<TensorToWrite> tensors;
    for (const ParamSpec& spec : layout.specs()) {
      const std::string name = rename(spec.name);
      if (!name.empty()) tensors.push_back({name, spec.shape, params.data() + spec.offset});
    }
    const std::string path = dir + "/" + file;
    write_safetensors(path, tensors);
    return path;
  }

  std::string load_error(const std::string& path) {
    std::vector<float> out(static_cast<size_t>(layout.total_floats()));
    try {
      load_hf_weights(SafetensorsFile::open(path), layout, config, out.data());
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }
};

TEST_F(BertCheckpoint, SaveLoadRoundTrip) {
  const std::vector<float> params = numbered_params();
  const std::string path = dir + "/saved.safetensors";
  save_hf_weights(path, layout, params.data());
  std::vector<float> loaded(params.size(), -1.0f);
  const LoadReport report =
      load_hf_weights(SafetensorsFile::open(path), layout, config, loaded.data());
  EXPECT_TRUE(report.initialised.empty());
  EXPECT_TRUE(report.ignored.empty());
  for (const ParamSpec& spec : layout.specs())
    for (int64_t i = 0; i < spec.numel; ++i)
      ASSERT_EQ(loaded[spec.offset + i], params[spec.offset + i]) << spec.name;
  // Saved under BertForSequenceClassification's names, as transformers expects.
  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_NE(file.find("bert.encoder.layer.1.attention.self.key.weight"), nullptr);
  EXPECT_NE(file.find("classifier.weight"), nullptr);
}

TEST_F(BertCheckpoint, BareBertModelWithOldLayerNormNamesGetsAFreshHead) {
  const std::vector<float> params = numbered_params();
  // A sentence-transformers style BertModel: no "bert." prefix, no classifier; TF-era
  // gamma/beta.
  const std::string path = write(params, [](const std::string& name) -> std::string {
    if (name.starts_with("classifier.")) return "";
    std::string bare = name.substr(5);
    if (bare.ends_with("LayerNorm.weight")) bare.replace(bare.size() - 6, 6, "gamma");
    if (bare.ends_with("LayerNorm.bias")) bare.replace(bare.size() - 4, 4, "beta");
    return bare;
  });
  std::vector<float> loaded(params.size());
  const LoadReport report =
      load_hf_weights(SafetensorsFile::open(path), layout, config, loaded.data());
  EXPECT_EQ(report.initialised, (std::vector<std::string>{"classifier.weight", "classifier.bias"}));
  const ParamSpec& ln = layout.at("bert.encoder.layer.0.output.LayerNorm.weight");
  EXPECT_EQ(loaded[ln.offset + 3], params[ln.offset + 3]);
  // The fresh head: weights normal(0, initializer_range), bias zero.
  const ParamSpec& w = layout.at("classifier.weight");
  double sum2 = 0;
  for (int64_t i = 0; i < w.numel; ++i) sum2 += loaded[w.offset + i] * loaded[w.offset + i];
  EXPECT_NEAR(std::sqrt(sum2 / static_cast<double>(w.numel)), 0.5, 0.2);
  const ParamSpec& b = layout.at("classifier.bias");
  for (int64_t i = 0; i < b.numel; ++i) EXPECT_EQ(loaded[b.offset + i], 0.0f);
}

TEST_F(BertCheckpoint, MissingEncoderTensorIsAnError) {
  const std::string path = write(numbered_params(), [](const std::string& name) {
    return name == "bert.encoder.layer.1.intermediate.dense.bias" ? std::string() : name;
  });
  EXPECT_EQ(load_error(path),
            path + ": missing tensor 'bert.encoder.layer.1.intermediate.dense.bias'");
}

TEST_F(BertCheckpoint, WrongShapeNamesTensorAndShapes) {
  std::vector<float> params = numbered_params();
  std::vector<TensorToWrite> tensors;
  std::vector<float> wrong(3 * 8 + 8, 0.0f);
  for (const ParamSpec& spec : layout.specs()) {
    if (spec.name == "classifier.weight")
      tensors.push_back({spec.name, {4, 8}, wrong.data()});
    else
      tensors.push_back({spec.name, spec.shape, params.data() + spec.offset});
  }
  const std::string path = dir + "/wrong.safetensors";
  write_safetensors(path, tensors);
  EXPECT_EQ(load_error(path), path +
                                  ": tensor 'classifier.weight' has shape [4, 8], the config "
                                  "needs [3, 8]");
}

TEST_F(BertCheckpoint, TwoNamesForOneParameterIsAnError) {
  std::vector<float> params = numbered_params();
  std::vector<TensorToWrite> tensors;
  for (const ParamSpec& spec : layout.specs())
    tensors.push_back({spec.name, spec.shape, params.data() + spec.offset});
  const ParamSpec& pooler = layout.at("bert.pooler.dense.bias");
  tensors.push_back({"pooler.dense.bias", pooler.shape, params.data() + pooler.offset});
  const std::string path = dir + "/dup.safetensors";
  write_safetensors(path, tensors);
  EXPECT_NE(load_error(path).find("both name parameter 'bert.pooler.dense.bias'"),
            std::string::npos);
}

TEST_F(BertCheckpoint, LayerBeyondConfigIsAnError) {
  std::vector<float> params = numbered_params();
  std::vector<TensorToWrite> tensors;
  for (const ParamSpec& spec : layout.specs())
    tensors.push_back({spec.name, spec.shape, params.data() + spec.offset});
  const ParamSpec& bias = layout.at("bert.encoder.layer.0.output.dense.bias");
  tensors.push_back(
      {"bert.encoder.layer.2.output.dense.bias", bias.shape, params.data() + bias.offset});
  const std::string path = dir + "/extra.safetensors";
  write_safetensors(path, tensors);
  EXPECT_NE(load_error(path).find("tensor 'bert.encoder.layer.2.output.dense.bias' has no place"),
            std::string::npos);
}

TEST_F(BertCheckpoint, IntegerTensorUnderAParameterNameIsAnError) {
  // Build a file by hand: the word embedding stored as I32.
  std::vector<float> params = numbered_params();
  const std::string path = write(params, [](const std::string& name) { return name; });
  // Rewrite via raw bytes: change "F32" of the first tensor to "I32" (same size).
  std::vector<std::byte> bytes;
  {
    FILE* f = std::fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 0, SEEK_END);
    bytes.resize(static_cast<size_t>(std::ftell(f)));
    std::fseek(f, 0, SEEK_SET);
    ASSERT_EQ(std::fread(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const size_t at = text.find("\"F32\"");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = std::byte{'I'};
  const SafetensorsFile file = SafetensorsFile::from_bytes(bytes, "edited.safetensors");
  std::vector<float> out(static_cast<size_t>(layout.total_floats()));
  try {
    load_hf_weights(file, layout, config, out.data());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has dtype I32"), std::string::npos) << e.what();
  }
}

// A bare ModernBertModel checkpoint (no "model." prefix, no head): every encoder tensor loads
// under ModernBertForSequenceClassification's names, and the head is initialised as
// ModernBertPreTrainedModel._init_weights does it: truncated normals (initializer_cutoff_factor
// deviations) of deviation hidden_size^-0.5 for the classifier and initializer_range / sqrt(2 L)
// for head.dense, head.norm at 1, the classifier's bias at 0.
TEST(ModernBertCheckpoint, BareModelLoadsAndGetsModernBertsHeadInit) {
  const ModelConfig config = parse_model_config(
      R"({"model_type": "modernbert", "vocab_size": 30, "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 16, "pad_token_id": 0,
          "initializer_range": 0.5, "initializer_cutoff_factor": 2.0, "num_labels": 40})",
      "config.json");
  const ParamLayout layout(config);
  std::vector<float> params(static_cast<size_t>(layout.total_floats()), 0.25f);
  std::vector<TensorToWrite> tensors;
  for (const ParamSpec& spec : layout.specs()) {
    if (!spec.name.starts_with("model.")) continue;  // head.* and classifier.*: absent
    tensors.push_back({spec.name.substr(6), spec.shape, params.data() + spec.offset});
  }
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cpuft_modernbert_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  write_safetensors(path, tensors);
  std::vector<float> loaded(params.size(), -1.0f);
  const LoadReport report =
      load_hf_weights(SafetensorsFile::open(path), layout, config, loaded.data());
  std::filesystem::remove(path);
  EXPECT_EQ(report.initialised, (std::vector<std::string>{"head.dense.weight", "head.norm.weight",
                                                          "classifier.weight", "classifier.bias"}));
  const ParamSpec& norm = layout.at("model.final_norm.weight");
  EXPECT_EQ(loaded[norm.offset], 0.25f);
  auto rms_and_max = [&](const std::string& name) {
    const ParamSpec& s = layout.at(name);
    double sum2 = 0, largest = 0;
    for (int64_t i = 0; i < s.numel; ++i) {
      sum2 += static_cast<double>(loaded[s.offset + i]) * loaded[s.offset + i];
      largest = std::max(largest, static_cast<double>(std::abs(loaded[s.offset + i])));
    }
    return std::pair{std::sqrt(sum2 / static_cast<double>(s.numel)), largest};
  };
  // A normal truncated at 2 deviations has 0.88 of the deviation as its RMS.
  const auto [classifier_rms, classifier_max] = rms_and_max("classifier.weight");
  EXPECT_NEAR(classifier_rms, 0.88 * 0.125, 0.01);  // 64^-0.5 = 0.125; 2560 draws
  EXPECT_LE(classifier_max, 2 * 0.125);
  const auto [dense_rms, dense_max] = rms_and_max("head.dense.weight");
  EXPECT_NEAR(dense_rms, 0.88 * 0.25, 0.02);  // 0.5 / sqrt(2 x 2)
  EXPECT_LE(dense_max, 2 * 0.25);
  const ParamSpec& head_norm = layout.at("head.norm.weight");
  for (int64_t i = 0; i < head_norm.numel; ++i) EXPECT_EQ(loaded[head_norm.offset + i], 1.0f);
  const ParamSpec& bias = layout.at("classifier.bias");
  for (int64_t i = 0; i < bias.numel; ++i) EXPECT_EQ(loaded[bias.offset + i], 0.0f);
}

}  // namespace
}  // namespace cpuft
