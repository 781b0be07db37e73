"""scikit-learn's multi-label metrics as the reference for runner/train/multilabel_metrics.cpp.

usage: multilabel_metrics_ref.py IN.safetensors
  IN holds `scores` (N x C float), `targets` (N x C, 0/1) and `thresholds` (C float64): a class is
  predicted where score > threshold.
Prints {"ap": [per class], "map", "map_micro", "f1": [per class], "f1_macro", "f1_micro",
"f1_samples", "precision", "recall", "accuracy"}, each with zero_division=0; a class without a
positive example has AP -0.0 (sklearn warns), printed as 0.
"""
import json
import sys
import warnings

import numpy as np
from sklearn.metrics import accuracy_score, average_precision_score, f1_score, precision_score, recall_score

from st import load_file

warnings.simplefilter("ignore")
data = load_file(sys.argv[1])
scores = data["scores"].numpy()
y = data["targets"].numpy().astype(np.int64)
pred = (scores > data["thresholds"].numpy()[None, :]).astype(np.int64)
out = {
    "ap": [float(v) + 0.0 for v in average_precision_score(y, scores, average=None)],
    "map": float(average_precision_score(y, scores, average="macro")),
    "map_micro": float(average_precision_score(y, scores, average="micro")),
    "f1": [float(v) for v in f1_score(y, pred, average=None, zero_division=0)],
    "f1_macro": float(f1_score(y, pred, average="macro", zero_division=0)),
    "f1_micro": float(f1_score(y, pred, average="micro", zero_division=0)),
    "f1_samples": float(f1_score(y, pred, average="samples", zero_division=0)),
    "precision": float(precision_score(y, pred, average="macro", zero_division=0)),
    "recall": float(recall_score(y, pred, average="macro", zero_division=0)),
    "accuracy": float(accuracy_score(y, pred)),
}
print(json.dumps(out))
