"""transformers' TrainerState as TrainerState.load_from_json builds it, for the tests:
transformers is not packaged for Debian, so this holds the dataclass's fields and defaults, and
reads each file the way load_from_json does, `TrainerState(**json.loads(text))`: a key that is
not a field raises TypeError ("TrainerState.__init__() got an unexpected keyword argument
'trainrun'"), as transformers does.

Fields and defaults from huggingface/transformers, src/transformers/trainer_callback.py at commit
55093b758b338fdc7903e778509523d755ae080d, a main-branch commit of the 4.47-4.49 line: it has
PR #34418's ProgressCallback(max_str_len) (merged October 2024, released in 4.47) and not yet
PR #35885's best_global_step (opened January 2025). That field came later with the default None,
so later versions, 5.x included, read these files too, while older ones would refuse a file that
had it. Annotations are simplified; names, order and defaults are the source's.

Beyond load_from_json, a file must also hold every field (transformers' save_to_json writes
dataclasses.asdict, so a file it wrote has them all) and come back unchanged through
asdict (what save_to_json would write after load_from_json).

    hf_trainer_state.py PATH...   (a folder: every trainer_state.json under it, links followed)
prints "ok FILE" per file; on the first bad one prints "FILE: why" and exits 1.
"""
import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Union

TRANSFORMERS_COMMIT = "55093b758b338fdc7903e778509523d755ae080d"


@dataclass
class TrainerState:
    epoch: Optional[float] = None
    global_step: int = 0
    max_steps: int = 0
    logging_steps: int = 500
    eval_steps: int = 500
    save_steps: int = 500
    train_batch_size: int = None
    num_train_epochs: int = 0
    num_input_tokens_seen: int = 0
    total_flos: float = 0
    log_history: List[Dict[str, float]] = None
    best_metric: Optional[float] = None
    best_model_checkpoint: Optional[str] = None
    is_local_process_zero: bool = True
    is_world_process_zero: bool = True
    is_hyper_param_search: bool = False
    trial_name: str = None
    trial_params: Dict[str, Union[str, float, int, bool]] = None
    stateful_callbacks: List["TrainerCallback"] = None

    def __post_init__(self):
        # The source's, for a file's dict: None becomes empty, a dict is kept as read.
        if self.log_history is None:
            self.log_history = []
        if self.stateful_callbacks is None:
            self.stateful_callbacks = {}
        elif not isinstance(self.stateful_callbacks, dict):
            raise TypeError("stateful_callbacks read from a file must be a dict, got %r" % (self.stateful_callbacks,))

    @classmethod
    def load_from_json(cls, json_path):
        with open(json_path, "r", encoding="utf-8") as f:
            text = f.read()
        return cls(**json.loads(text))


def check(path):
    """Why transformers' TrainerState would not take `path` as its own, or None."""
    try:
        state = TrainerState.load_from_json(path)
    except TypeError as e:
        return "TypeError: %s" % e
    except ValueError as e:
        return "not JSON: %s" % e
    data = json.load(open(path, encoding="utf-8"))
    missing = [f.name for f in dataclasses.fields(TrainerState) if f.name not in data]
    if missing:
        return "missing key(s) %s (save_to_json writes every field)" % ", ".join(missing)
    if dataclasses.asdict(state) != data:
        return "changed by load_from_json then save_to_json"
    return None


def state_files(path):
    if not os.path.isdir(path):
        return [path]
    found = []
    for root, _, files in os.walk(path, followlinks=True):
        found += [os.path.join(root, f) for f in files if f == "trainer_state.json"]
    return sorted(found)


def main():
    files = [f for p in sys.argv[1:] for f in state_files(p)]
    if not files:
        print("no trainer_state.json in %s" % " ".join(sys.argv[1:]))
        return 1
    for f in files:
        why = check(f)
        if why:
            print("%s: %s" % (f, why))
            return 1
        print("ok %s" % f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
