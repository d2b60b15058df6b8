#include "io/tensorboard_logs.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "io/tensorboard_writer.h"

namespace cpuft {
namespace {

// Python's type(v) for the JSON value kinds that on_log drops.
const char* python_type(nlohmann::json::value_t type) {
  switch (type) {
    case nlohmann::json::value_t::null:
      return "<class 'NoneType'>";
    case nlohmann::json::value_t::array:
      return "<class 'list'>";
    case nlohmann::json::value_t::object:
      return "<class 'dict'>";
    default:
      return "<class 'object'>";
  }
}

template <typename Json>
TensorBoardLog log_of(const Json& entry) {
  CPUFT_REQUIRE(entry.is_object(), "tensorboard: a log entry must be a JSON object, got ",
                entry.dump());
  const auto step = entry.find("step");
  CPUFT_REQUIRE(step != entry.end() && step->is_number_integer(),
                "tensorboard: the log entry has no integer \"step\": ", entry.dump());
  TensorBoardLog log;
  log.step = step->template get<int64_t>();
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    if (it.key() == "step") continue;
    const std::string tag = tensorboard_tag(it.key());
    const Json& v = it.value();
    if (v.is_number()) {
      log.scalars.push_back({tag, static_cast<float>(v.template get<double>())});
    } else if (v.is_boolean()) {
      log.scalars.push_back({tag, v.template get<bool>() ? 1.0f : 0.0f});
    } else if (v.is_string()) {
      log.texts.push_back({tag, v.template get<std::string>()});
    } else {
      log.warnings.push_back(
          str("Trainer is attempting to log a value of \"", v.dump(), "\" of type ",
              python_type(v.type()), " for key \"", tag,
              "\" as a scalar. This invocation of Tensorboard's writer.add_scalar() is incorrect "
              "so we dropped this attribute."));
    }
  }
  return log;
}

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace

std::string tensorboard_tag(const std::string& log_key) {
  if (log_key.starts_with("eval_")) return "eval/" + log_key.substr(5);
  if (log_key.starts_with("test_")) return "test/" + log_key.substr(5);
  return "train/" + log_key;
}

TensorBoardLog tensorboard_log(const nlohmann::json& log_history_entry) {
  return log_of(log_history_entry);
}

TensorBoardLog tensorboard_log(const nlohmann::ordered_json& log_history_entry) {
  return log_of(log_history_entry);
}

void write_tensorboard_log(TensorBoardWriter& writer, const TensorBoardLog& log,
                           std::optional<double> wall_time) {
  for (const auto& s : log.scalars) writer.add_scalar(s.tag, s.value, log.step, wall_time);
  for (const auto& t : log.texts) writer.add_text(t.tag, t.text, log.step, wall_time);
  writer.flush();
}

std::string tensorboard_log_dir(const std::string& output_dir,
                                const std::optional<std::string>& env_logging_dir,
                                const std::tm& local_time, const std::string& hostname,
                                const std::string& home) {
  if (env_logging_dir) {
    // os.path.expanduser: a leading "~" alone or before "/" is $HOME.
    const std::string& dir = *env_logging_dir;
    if (dir == "~" || dir.starts_with("~/")) return home + dir.substr(1);
    return dir;
  }
  char stamp[64];
  const std::size_t n = std::strftime(stamp, sizeof(stamp), "%b%d_%H-%M-%S", &local_time);
  CPUFT_CHECK(n > 0, "strftime");
  return join(join(output_dir, "runs"), std::string(stamp, n) + "_" + hostname);
}

std::string tensorboard_log_dir(const std::string& output_dir) {
  const char* env = std::getenv("TENSORBOARD_LOGGING_DIR");
  const char* home = std::getenv("HOME");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  return tensorboard_log_dir(output_dir, env ? std::optional<std::string>(env) : std::nullopt,
                             local, host_name(), home ? home : "");
}

}  // namespace cpuft
