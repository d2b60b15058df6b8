#!/usr/bin/env python3
"""Writes tests/fixtures/metrics_cases.json: predictions, labels and the metric values that
sklearn.metrics and scipy.stats give for them (what HF evaluate's "glue" metric calls), for
src/data/metrics_test.cc.

Run offline in the golden venv (numpy, scipy, scikit-learn), never in CI:
    /work/venv-golden/bin/python tools/make_metrics_fixture.py --out tests/fixtures/metrics_cases.json

Regression values are float32 numbers (what the C++ side holds) written out exactly; scipy is run on
them as float64, so the fixture holds the exact correlations. (HF passes float32 arrays, and recent
scipy then rounds pearsonr to float32; the C++ side does not copy that rounding.)
A NaN (scipy's answer for constant input) is written as null.
"""
import argparse
import json
import math
import warnings

import numpy as np
import scipy
import sklearn
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef, mean_squared_error


def num(x):
    x = float(x)
    return None if math.isnan(x) else x


def with_combined(result):
    # run_glue.py: combined_score = np.mean(list(result.values())) when there are 2+ metrics.
    if len(result) > 1:
        result["combined_score"] = np.mean(list(result.values())).item()
    return result


def classification(task, preds, labels):
    preds = np.asarray(preds, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns on the degenerate cases we want
        if task == "cola":
            result = {"matthews_correlation": float(matthews_corrcoef(labels, preds))}
        elif task in ("mrpc", "qqp"):
            result = {"accuracy": float(accuracy_score(labels, preds)),
                      "f1": float(f1_score(y_true=labels, y_pred=preds))}
        else:
            result = {"accuracy": float(accuracy_score(labels, preds))}
    return with_combined(result)


def regression(task, preds, labels):
    p = np.asarray(preds, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns nan
        if task == "stsb":
            result = {"pearson": float(pearsonr(p, y)[0]), "spearmanr": float(spearmanr(p, y)[0])}
        else:  # --*_file regression data
            result = {"mse": float(mean_squared_error(y, p))}
    return with_combined(result)


def f32(values):
    return [float(np.float32(v)) for v in values]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/fixtures/metrics_cases.json")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    cases = []

    def add_cls(name, task, preds, labels):
        preds, labels = [int(v) for v in preds], [int(v) for v in labels]
        expected = {k: num(v) for k, v in classification(task, preds, labels).items()}
        cases.append({"name": name, "task": task, "predictions": preds, "labels": labels,
                      "expected": expected})

    def add_reg(name, task, preds, labels):
        preds, labels = f32(preds), f32(labels)
        expected = {k: num(v) for k, v in regression(task, preds, labels).items()}
        cases.append({"name": name, "task": task, "predictions": preds, "labels": labels,
                      "expected": expected})

    # Random classification cases: sizes from tiny to MRPC-dev-like, noisy predictions.
    for task in ("mrpc", "qqp", "cola", "sst2", "rte", "wnli", "qnli"):
        for n in (5, 37, 408, 1043):
            labels = rng.integers(0, 2, n)
            flip = rng.random(n) < rng.uniform(0.05, 0.5)
            preds = np.where(flip, 1 - labels, labels)
            add_cls(f"{task}_random_{n}", task, preds, labels)
    for n in (7, 100, 2000):
        labels = rng.integers(0, 3, n)
        preds = np.where(rng.random(n) < 0.3, rng.integers(0, 3, n), labels)
        add_cls(f"mnli_random_{n}", "mnli", preds, labels)

    # Degenerate cases.
    add_cls("cola_all_same_prediction", "cola", [1] * 20, rng.integers(0, 2, 20))
    add_cls("cola_all_same_label", "cola", rng.integers(0, 2, 20), [0] * 20)
    add_cls("cola_perfect", "cola", [0, 1, 1, 0, 1], [0, 1, 1, 0, 1])
    add_cls("cola_inverted", "cola", [1, 0, 0, 1, 0], [0, 1, 1, 0, 1])
    add_cls("mrpc_no_positive_prediction", "mrpc", [0] * 12, rng.integers(0, 2, 12))
    add_cls("mrpc_no_positive_at_all", "mrpc", [0] * 6, [0] * 6)
    add_cls("mrpc_all_positive_prediction", "mrpc", [1] * 15, rng.integers(0, 2, 15))
    add_cls("mrpc_single", "mrpc", [1], [1])

    # STS-B: continuous predictions against labels on STS-B's 0..5 scale.
    for n in (3, 50, 1500):
        labels = rng.uniform(0, 5, n)
        preds = labels + rng.normal(0, 1.0, n)
        add_reg(f"stsb_random_{n}", "stsb", preds, labels)
    # Many ties (STS-B gold scores are often multiples of 0.2; predictions rounded to 0.5).
    for n in (20, 600):
        labels = np.round(rng.uniform(0, 5, n) * 5) / 5
        preds = np.round((labels + rng.normal(0, 0.8, n)) * 2) / 2
        add_reg(f"stsb_ties_{n}", "stsb", preds, labels)
    add_reg("stsb_all_tied_but_two", "stsb", [2.5] * 8 + [1.0, 4.0], [3.0] * 5 + [1.0] * 5)
    add_reg("stsb_anticorrelated", "stsb", [5, 4, 3, 2, 1, 0], [0.2, 1.4, 2.0, 3.6, 4.0, 5.0])
    add_reg("stsb_constant_prediction", "stsb", [2.0] * 10, rng.uniform(0, 5, 10))
    add_reg("stsb_large_offset", "stsb", 1000 + rng.normal(0, 1, 40), rng.uniform(0, 5, 40))
    for n in (4, 300):
        labels = rng.normal(0, 3, n)
        add_reg(f"regression_mse_{n}", "regression", labels + rng.normal(0, 1, n), labels)

    doc = {"generator": "tools/make_metrics_fixture.py", "seed": args.seed,
           "versions": {"numpy": np.__version__, "scipy": scipy.__version__,
                        "sklearn": sklearn.__version__},
           "cases": cases}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {args.out}")


if __name__ == "__main__":
    main()
