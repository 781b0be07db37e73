# sklearn's classification report, confusion matrix and top-5 accuracy for the predictions in a
# JSON file {"targets": [...], "scores": [[...], ...], "classes": [...]}; prints them as JSON, with
# the single-label recipe metrics f1_macro (f1_score's default labels: those in y or pred) and
# balanced_accuracy.
import json
import sys

import numpy as np
import warnings

from sklearn.metrics import (balanced_accuracy_score, classification_report, confusion_matrix, f1_score,
                             top_k_accuracy_score)

warnings.simplefilter("ignore")  # balanced_accuracy_score warns of a predicted class absent from y

d = json.load(open(sys.argv[1]))
y = np.array(d["targets"])
scores = np.array(d["scores"])
pred = scores.argmax(1)
labels = list(range(len(d["classes"])))
kw = dict(labels=labels, target_names=d["classes"], zero_division=0)
print(json.dumps({
    "text": classification_report(y, pred, digits=4, **kw),
    "dict": classification_report(y, pred, output_dict=True, **kw),
    "confusion": confusion_matrix(y, pred, labels=labels).tolist(),
    "top5": top_k_accuracy_score(y, scores, k=5, labels=labels),
    "f1_macro": f1_score(y, pred, average="macro", zero_division=0),
    "balanced_accuracy": balanced_accuracy_score(y, pred),
}))
