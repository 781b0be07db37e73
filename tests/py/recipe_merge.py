"""Recipe inheritance as OmegaConf composes configs (the reference for tests/recipe/inherit_test.cpp).

Each `base:` file (a path or a list of paths, relative to the file naming it) is loaded the same
way, depth-first (its own bases merged into it first), and the file is OmegaConf.merge(base...,
file): later bases win, the file's own keys last. OmegaConf.merge merges mappings key by key and
replaces everything else whole (lists, scalars, None, a mapping where a scalar was; a list over a
mapping or the reverse raises ConfigTypeError), as Hydra's
defaults list composes configs. Prints the merged tree as JSON, interpolations left unresolved.

Run on python3-omegaconf (2.2.2 in Debian 12).

usage: recipe_merge.py RECIPE.yaml
"""
import json
import os
import sys

from omegaconf import OmegaConf


def load(path):
    cfg = OmegaConf.load(path)
    base = cfg.pop("base", None)
    bases = [] if base is None else [base] if isinstance(base, str) else list(base)
    merged = [load(os.path.join(os.path.dirname(path), b)) for b in bases]
    return OmegaConf.merge(*merged, cfg) if merged else cfg


if __name__ == "__main__":
    print(json.dumps(OmegaConf.to_container(load(sys.argv[1]), resolve=False)))
