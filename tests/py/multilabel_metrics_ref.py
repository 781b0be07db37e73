"""scikit-learn's multi-label metrics as the reference for runner/train/multilabel_metrics.cpp.

usage: multilabel_metrics_ref.py IN.safetensors
  IN holds `scores` (N x C float), `targets` (N x C, 0/1) and `thresholds` (C float64): a class is
  predicted where score > threshold.
Prints {"ap": [per class], "map", "map_micro", "f1": [per class], "f1_macro", "f1_micro",
"f1_samples", "precision", "recall", "accuracy"}, each with zero_division=0; a class without a
positive example has AP -0.0 (sklearn warns), printed as 0.
And "tuned": per class with a positive example, the threshold a Python user picks for the best F1
(precision_recall_curve, F1 = 2PR / (P + R), argmax: predicted where score >= it), that F1, and
whether no other threshold comes within 1e-12 of it; null for a class without one.
"""
import json
import sys
import warnings

import numpy as np
from sklearn.metrics import precision_recall_curve, accuracy_score, average_precision_score, f1_score, precision_score, recall_score

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


def tuned(truth, score):
    if truth.sum() == 0:
        return None
    p, r, t = precision_recall_curve(truth, score)
    f1 = np.nan_to_num(2 * p * r / (p + r))[:-1]
    i = int(np.argmax(f1))
    return {"threshold": float(t[i]), "f1": float(f1[i]), "unique": int((f1 > f1[i] - 1e-12).sum()) == 1}


out["tuned"] = [tuned(y[:, c], scores[:, c]) for c in range(y.shape[1])]
print(json.dumps(out))
