# sklearn's classification report, confusion matrix and top-5 accuracy for the predictions in a
# JSON file {"targets": [...], "scores": [[...], ...], "classes": [...]}; prints them as JSON.
import json
import sys

import numpy as np
from sklearn.metrics import classification_report, confusion_matrix, top_k_accuracy_score

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
}))
