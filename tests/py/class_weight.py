"""sklearn's compute_class_weight('balanced') as the reference for train.loss.weight: balanced.

usage: class_weight.py LABELS.json NUM_CLASSES
  LABELS.json: the training split's labels, a JSON list of ints.
Prints a JSON list: compute_class_weight('balanced', classes=arange(NUM_CLASSES), y=labels), i.e.
n_samples / (n_classes * np.bincount(y)) in float64 (json writes each as Python's repr, which reads
back as the same double).
"""
import json
import sys

import numpy as np
from sklearn.utils.class_weight import compute_class_weight

with open(sys.argv[1]) as f:
    labels = np.array(json.load(f), dtype=np.int64)
weights = compute_class_weight("balanced", classes=np.arange(int(sys.argv[2])), y=labels)
print(json.dumps([float(w) for w in weights]))
