// Evaluation metrics, as Hugging Face evaluate's "glue" metric computes them (sklearn/scipy), plus
// run_glue.py's "combined_score". Pure functions; everything is computed in double.
//
// Exactness: the counting metrics (accuracy, F1, MCC) equal sklearn's to the last few ulps.
// Pearson and Spearman equal scipy's on float64 input; HF feeds scipy float32 arrays and recent
// scipy then rounds pearsonr to float32 (about 1e-7), which these do not copy.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "data/glue_tasks.h"

namespace cpuft {

// Fraction of positions where prediction equals label (sklearn accuracy_score).
double accuracy(std::span<const int32_t> predictions, std::span<const int32_t> labels);

// Binary F1 of class 1 (sklearn f1_score, pos_label=1). Values must be 0 or 1. With no positive
// label and no positive prediction it is 0, as sklearn's zero_division default gives.
double f1_binary(std::span<const int32_t> predictions, std::span<const int32_t> labels);

// Matthews correlation for any number of classes (sklearn matthews_corrcoef); 0 when undefined
// (predictions or labels all one class).
double matthews_corrcoef(std::span<const int32_t> predictions, std::span<const int32_t> labels);

// Pearson correlation (scipy.stats.pearsonr); NaN when either input is constant, as scipy returns.
double pearson(std::span<const float> predictions, std::span<const float> labels);

// Spearman rank correlation, ties get their average rank (scipy.stats.spearmanr); NaN when
// either input is constant.
double spearman(std::span<const float> predictions, std::span<const float> labels);

// Mean of squared differences (run_glue's "mse" for --*_file regression data).
double mean_squared_error(std::span<const float> predictions, std::span<const float> labels);

// The metrics named by task.metric_names, plus "combined_score" (their mean) when there are two
// or more, as run_glue.py reports them. Classification tasks take class ids; regression tasks
// (stsb, --*_file regression) take scores. A predict-only task (ax), the wrong overload or
// mismatched lengths throw Error.
std::map<std::string, double> glue_metrics(const GlueTask& task,
                                           const std::vector<int32_t>& predictions,
                                           const std::vector<int32_t>& labels);
std::map<std::string, double> glue_metrics(const GlueTask& task,
                                           const std::vector<float>& predictions,
                                           const std::vector<float>& labels);

}  // namespace cpuft
