#include "data/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"

namespace cpuft {

namespace {

template <typename T>
void require_same_size(std::span<const T> predictions, std::span<const T> labels,
                       const char* metric) {
  CPUFT_REQUIRE(predictions.size() == labels.size(), metric, ": ", predictions.size(),
                " predictions but ", labels.size(), " labels");
  CPUFT_REQUIRE(!labels.empty(), metric, ": no examples");
}

// Pearson correlation the way scipy computes it: centre, scale by the largest magnitude (guards
// against overflow in the squares), normalise, dot, clip to [-1, 1].
double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  const bool constant_x = std::all_of(x.begin(), x.end(), [&](double v) { return v == x[0]; });
  const bool constant_y = std::all_of(y.begin(), y.end(), [&](double v) { return v == y[0]; });
  if (constant_x || constant_y) return std::numeric_limits<double>::quiet_NaN();
  const double x_mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  const double y_mean = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(n);
  std::vector<double> xm(n), ym(n);
  double x_max = 0, y_max = 0;
  for (size_t i = 0; i < n; ++i) {
    xm[i] = x[i] - x_mean;
    ym[i] = y[i] - y_mean;
    x_max = std::max(x_max, std::abs(xm[i]));
    y_max = std::max(y_max, std::abs(ym[i]));
  }
  double x_norm = 0, y_norm = 0;
  for (size_t i = 0; i < n; ++i) {
    xm[i] /= x_max;
    ym[i] /= y_max;
    x_norm += xm[i] * xm[i];
    y_norm += ym[i] * ym[i];
  }
  x_norm = std::sqrt(x_norm);
  y_norm = std::sqrt(y_norm);
  double r = 0;
  for (size_t i = 0; i < n; ++i) r += (xm[i] / x_norm) * (ym[i] / y_norm);
  return std::clamp(r, -1.0, 1.0);
}

// 1-based ranks; a run of equal values shares the mean of the ranks it spans.
std::vector<double> average_ranks(std::span<const float> values) {
  const size_t n = values.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(n);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && values[order[j]] == values[order[i]]) ++j;
    // Positions i..j-1 hold ranks i+1..j; their mean is (i + 1 + j) / 2.
    const double rank = 0.5 * static_cast<double>(i + 1 + j);
    for (size_t k = i; k < j; ++k) ranks[order[k]] = rank;
    i = j;
  }
  return ranks;
}

std::map<std::string, double> with_combined_score(const std::vector<std::string>& names,
                                                  std::map<std::string, double> result) {
  // run_glue.py: result["combined_score"] = np.mean(list(result.values())) when len(result) > 1.
  if (names.size() > 1) {
    double sum = 0;
    for (const std::string& name : names) sum += result.at(name);
    result["combined_score"] = sum / static_cast<double>(names.size());
  }
  return result;
}

void require_metrics(const GlueTask& task) {
  CPUFT_REQUIRE(!task.metric_names.empty(), "task ", task.name,
                " has no metrics (it is predict-only)");
}

}  // namespace

double accuracy(std::span<const int32_t> predictions, std::span<const int32_t> labels) {
  require_same_size(predictions, labels, "accuracy");
  size_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) correct += predictions[i] == labels[i];
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

double f1_binary(std::span<const int32_t> predictions, std::span<const int32_t> labels) {
  require_same_size(predictions, labels, "f1");
  double tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    CPUFT_REQUIRE(
        (labels[i] == 0 || labels[i] == 1) && (predictions[i] == 0 || predictions[i] == 1),
        "f1: binary F1 needs classes 0 and 1, got label ", labels[i], " prediction ",
        predictions[i], " at position ", i);
    tp += predictions[i] == 1 && labels[i] == 1;
    fp += predictions[i] == 1 && labels[i] == 0;
    fn += predictions[i] == 0 && labels[i] == 1;
  }
  // sklearn: F1 = 2 tp / (2 tp + fp + fn), and 0 when that is 0/0.
  const double denominator = 2 * tp + fp + fn;
  return denominator == 0 ? 0.0 : 2 * tp / denominator;
}

double matthews_corrcoef(std::span<const int32_t> predictions, std::span<const int32_t> labels) {
  require_same_size(predictions, labels, "matthews_correlation");
  // Per class: how often it is the true label (t) and the prediction (p). sklearn's formula, in
  // float64 like sklearn (integer products would overflow int64 on large sets).
  std::map<int32_t, std::pair<double, double>> counts;
  double correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    counts[labels[i]].first += 1;
    counts[predictions[i]].second += 1;
    correct += predictions[i] == labels[i];
  }
  const double n = static_cast<double>(labels.size());
  double t_dot_p = 0, p_dot_p = 0, t_dot_t = 0;
  for (const auto& [cls, tp] : counts) {
    t_dot_p += tp.first * tp.second;
    p_dot_p += tp.second * tp.second;
    t_dot_t += tp.first * tp.first;
  }
  const double cov_ytyp = correct * n - t_dot_p;
  const double cov_ypyp = n * n - p_dot_p;
  const double cov_ytyt = n * n - t_dot_t;
  if (cov_ypyp * cov_ytyt == 0) return 0.0;
  return cov_ytyp / std::sqrt(cov_ytyt * cov_ypyp);
}

double pearson(std::span<const float> predictions, std::span<const float> labels) {
  require_same_size(predictions, labels, "pearson");
  CPUFT_REQUIRE(labels.size() >= 2, "pearson: needs at least 2 examples, got ", labels.size());
  return correlation(std::vector<double>(predictions.begin(), predictions.end()),
                     std::vector<double>(labels.begin(), labels.end()));
}

double spearman(std::span<const float> predictions, std::span<const float> labels) {
  require_same_size(predictions, labels, "spearmanr");
  CPUFT_REQUIRE(labels.size() >= 2, "spearmanr: needs at least 2 examples, got ", labels.size());
  return correlation(average_ranks(predictions), average_ranks(labels));
}

double mean_squared_error(std::span<const float> predictions, std::span<const float> labels) {
  require_same_size(predictions, labels, "mse");
  double sum = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const double d = static_cast<double>(predictions[i]) - static_cast<double>(labels[i]);
    sum += d * d;
  }
  return sum / static_cast<double>(labels.size());
}

std::map<std::string, double> glue_metrics(const GlueTask& task,
                                           const std::vector<int32_t>& predictions,
                                           const std::vector<int32_t>& labels) {
  require_metrics(task);
  CPUFT_REQUIRE(!task.is_regression(), "task ", task.name,
                " is a regression task: its metrics take float scores");
  std::map<std::string, double> result;
  for (const std::string& name : task.metric_names) {
    if (name == "accuracy") {
      result[name] = accuracy(predictions, labels);
    } else if (name == "f1") {
      result[name] = f1_binary(predictions, labels);
    } else if (name == "matthews_correlation") {
      result[name] = matthews_corrcoef(predictions, labels);
    } else {
      throw Error(str("task ", task.name, ": metric '", name, "' does not take class ids"));
    }
  }
  return with_combined_score(task.metric_names, std::move(result));
}

std::map<std::string, double> glue_metrics(const GlueTask& task,
                                           const std::vector<float>& predictions,
                                           const std::vector<float>& labels) {
  require_metrics(task);
  CPUFT_REQUIRE(task.is_regression(), "task ", task.name,
                " is a classification task: its metrics take class ids");
  std::map<std::string, double> result;
  for (const std::string& name : task.metric_names) {
    if (name == "pearson") {
      result[name] = pearson(predictions, labels);
    } else if (name == "spearmanr") {
      result[name] = spearman(predictions, labels);
    } else if (name == "mse") {
      result[name] = mean_squared_error(predictions, labels);
    } else {
      throw Error(str("task ", task.name, ": metric '", name, "' does not take scores"));
    }
  }
  return with_combined_score(task.metric_names, std::move(result));
}

}  // namespace cpuft
