"""timm's layer-wise lr decay groups for resnet50d, as the reference for optimizer.layer_decay.

usage: layer_decay_ref.py LR WEIGHT_DECAY LAYER_DECAY [MODEL]
Prints JSON: [{"name", "lr", "weight_decay", "params": [names...]}, ...] in timm's group order,
with lr = LR * lr_scale, which is what timm's schedulers set each group to
(param_group['lr'] = value * param_group['lr_scale']).

timm is not packaged for Debian, so this re-derives, line for line, the two functions timm's
create_optimizer_v2(model, layer_decay=...) uses, from huggingface/pytorch-image-models at
aa4b5850c1543fa488abf260f18390eda46cf85d:
  timm/models/_manipulate.py  group_with_matcher(..., reverse=True)  (via group_parameters)
  timm/optim/_param_groups.py param_groups_layer_decay (weight_decay_exclude_1d=True,
                              min_scale=0, no fallback/no_opt_scale)
and timm/models/resnet.py's ResNet.group_matcher(coarse=False). The model is timm_resnet.py's
resnet50d (timm's module names).
"""
import json
import re
import sys
from collections import defaultdict
from itertools import chain

import timm_resnet


def group_matcher_resnet():
    return dict(stem=r'^conv1|bn1|maxpool', blocks=r'^layer(\d+)\.(\d+)')


def layer_map_of(named, matcher):
    compiled = [(re.compile(spec), (ordinal,), None) for ordinal, (_, spec) in enumerate(matcher.items())]

    def grouping(name):
        for match_fn, prefix, suffix in compiled:
            r = match_fn.match(name)
            if r:
                return tuple(map(float, chain.from_iterable(filter(None, (prefix, r.groups(), suffix)))))
        return float('inf'),

    groups = defaultdict(list)
    for k, _ in named:
        groups[grouping(k)].append(k)
    layer_map, lid = {}, -1
    for k in sorted(groups):
        lid += 1  # no MATCH_PREV_GROUP suffixes in a dict of plain regexes
        for n in groups[k]:
            layer_map[n] = lid
    return layer_map


def param_groups_layer_decay(model, weight_decay, layer_decay):
    layer_map = layer_map_of(model.named_parameters(), group_matcher_resnet())
    num_layers = max(layer_map.values()) + 1
    layer_max = num_layers - 1
    layer_scales = list(max(0.0, layer_decay ** (layer_max - i)) for i in range(num_layers))
    groups = {}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1:
            g_decay, this_decay = "no_decay", 0.
        else:
            g_decay, this_decay = "decay", weight_decay
        layer_id = layer_map.get(name, layer_max)
        group_name = "layer_%d_%s" % (layer_id, g_decay)
        if group_name not in groups:
            groups[group_name] = {"name": group_name, "lr_scale": layer_scales[layer_id],
                                  "weight_decay": this_decay, "params": []}
        groups[group_name]["params"].append(name)
    return list(groups.values())


def main():
    lr, weight_decay, layer_decay = map(float, sys.argv[1:4])
    model = getattr(timm_resnet, sys.argv[4] if len(sys.argv) > 4 else "resnet50d")(num_classes=37)
    out = []
    for g in param_groups_layer_decay(model, weight_decay, layer_decay):
        out.append({"name": g["name"], "lr": lr * g["lr_scale"], "weight_decay": g["weight_decay"], "params": g["params"]})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
