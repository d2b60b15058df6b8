#include "train/outputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/check.h"
#include "model/family.h"

namespace cpuft {

double round_to(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

void write_json(const std::string& path, const nlohmann::json& value) {
  write_file_atomically(path, value.dump(2) + "\n");
}

nlohmann::json fine_tuned_config(const std::string& original_config_text,
                                 const std::vector<std::string>& label_names, bool regression,
                                 const std::string& task_name) {
  nlohmann::json config = nlohmann::json::parse(original_config_text);
  // The family's *ForSequenceClassification (the config was checked: model_type is known).
  const FamilySpec* family = find_family(config.value("model_type", std::string("bert")));
  config["architectures"] = {family != nullptr ? family->architecture
                                               : "BertForSequenceClassification"};
  nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
  const size_t num_labels = regression ? 1 : label_names.size();
  for (size_t i = 0; i < num_labels; ++i) {
    const std::string name = regression ? "LABEL_0" : label_names[i];
    id2label[std::to_string(i)] = name;
    label2id[name] = i;
  }
  config["id2label"] = id2label;
  config["label2id"] = label2id;
  config.erase("num_labels");  // transformers derives it from id2label
  config["problem_type"] = regression ? "regression" : "single_label_classification";
  if (!task_name.empty()) config["finetuning_task"] = task_name;
  return config;
}

namespace {

std::string fmt(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", v);
  return buffer;
}

}  // namespace

std::string training_curves_svg(const nlohmann::json& log_history, const std::string& title) {
  std::vector<std::pair<double, double>> loss;                          // (step, loss)
  std::map<std::string, std::vector<std::pair<double, double>>> evals;  // metric -> points
  for (const nlohmann::json& entry : log_history) {
    if (!entry.contains("step")) continue;
    const double step = entry["step"].get<double>();
    if (entry.contains("loss")) loss.emplace_back(step, entry["loss"].get<double>());
    for (const auto& [key, value] : entry.items()) {
      if (key.starts_with("eval_") && value.is_number() && key != "eval_loss" &&
          key.find("runtime") == std::string::npos && key.find("per_second") == std::string::npos &&
          key != "eval_samples")
        evals[key].emplace_back(step, value.get<double>());
    }
  }
  const double width = 720, height = 400, left = 60, right = 60, top = 40, bottom = 50;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  double max_step = 1, max_loss = 1e-9;
  for (auto [s, l] : loss) {
    max_step = std::max(max_step, s);
    max_loss = std::max(max_loss, l);
  }
  for (auto& [k, points] : evals)
    for (auto [s, v] : points) max_step = std::max(max_step, s);
  auto x = [&](double step) { return left + plot_w * step / max_step; };
  auto y_loss = [&](double l) { return top + plot_h * (1 - l / max_loss); };
  auto y_metric = [&](double v) { return top + plot_h * (1 - std::clamp(v, 0.0, 1.0)); };

  std::string svg = str("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", width, "\" height=\"",
                        height, "\" font-family=\"sans-serif\" font-size=\"12\">\n",
                        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  svg += str("<text x=\"", width / 2, "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">", title,
             "</text>\n");
  svg += str("<line x1=\"", left, "\" y1=\"", top + plot_h, "\" x2=\"", left + plot_w, "\" y2=\"",
             top + plot_h, "\" stroke=\"black\"/>\n<line x1=\"", left, "\" y1=\"", top, "\" x2=\"",
             left, "\" y2=\"", top + plot_h, "\" stroke=\"black\"/>\n");
  svg += str("<text x=\"", left + plot_w / 2, "\" y=\"", height - 12,
             "\" text-anchor=\"middle\">step (max ", fmt(max_step), ")</text>\n");
  svg += str("<text x=\"14\" y=\"", top + plot_h / 2, "\" transform=\"rotate(-90 14 ",
             top + plot_h / 2, ")\" text-anchor=\"middle\" fill=\"#1f77b4\">training loss (max ",
             fmt(max_loss), ")</text>\n");
  if (!loss.empty()) {
    svg += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"";
    for (auto [s, l] : loss) svg += str(x(s), ",", y_loss(l), " ");
    svg += "\"/>\n";
  }
  if (!evals.empty()) {
    svg += str("<line x1=\"", left + plot_w, "\" y1=\"", top, "\" x2=\"", left + plot_w, "\" y2=\"",
               top + plot_h, "\" stroke=\"black\"/>\n");
    svg += str("<text x=\"", width - 14, "\" y=\"", top + plot_h / 2, "\" transform=\"rotate(90 ",
               width - 14, " ", top + plot_h / 2,
               ")\" text-anchor=\"middle\">eval metric (0-1)</text>\n");
  }
  const char* colors[] = {"#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
  size_t c = 0;
  for (auto& [key, points] : evals) {
    const char* color = colors[c++ % 5];
    svg += str("<polyline fill=\"none\" stroke=\"", color, "\" stroke-dasharray=\"4 3\" points=\"");
    for (auto [s, v] : points) svg += str(x(s), ",", y_metric(v), " ");
    svg += "\"/>\n";
    for (auto [s, v] : points)
      svg += str("<circle cx=\"", x(s), "\" cy=\"", y_metric(v), "\" r=\"3\" fill=\"", color,
                 "\"/>\n");
    svg += str("<text x=\"", left + 10, "\" y=\"", top + 14 + 14 * static_cast<double>(c),
               "\" fill=\"", color, "\">", key, " (last ", fmt(points.back().second), ")</text>\n");
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace cpuft
