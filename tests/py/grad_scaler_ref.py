"""torch.amp.GradScaler("cuda") on given numbers, for tests/gpu/fp16_scaler_test.cpp.

usage: grad_scaler_ref.py SPEC.json
SPEC: {"weight": [[..]], "bias": [..], "lr", "init_scale", "growth_factor", "backoff_factor",
       "growth_interval", "steps": [{"x": [[..]], "y": [..]}, ...]}
Each step as a PyTorch fp16 script takes it: Linear under torch.autocast("cuda", torch.float16),
cross_entropy on the float32 logits, scaler.scale(loss).backward(), scaler.unscale_(opt),
scaler.step(opt) (SGD), scaler.update().
Prints one JSON object: {"torch": version, "scales": [scale after each update],
"skipped": [whether the step left the weights as they were], "weight", "bias"}, or
{"skip": why} when this torch has no CUDA.
"""
import json
import sys

import torch

spec = json.load(open(sys.argv[1]))
if not torch.cuda.is_available():
    print(json.dumps({"skip": "torch %s here has no CUDA" % torch.__version__}))
    sys.exit(0)

dev = torch.device("cuda")
weight = torch.tensor(spec["weight"], dtype=torch.float32)
lin = torch.nn.Linear(weight.shape[1], weight.shape[0]).to(dev)
with torch.no_grad():
    lin.weight.copy_(weight)
    lin.bias.copy_(torch.tensor(spec["bias"], dtype=torch.float32))
opt = torch.optim.SGD(lin.parameters(), lr=spec["lr"])
kwargs = {k: spec[k] for k in ("init_scale", "growth_factor", "backoff_factor", "growth_interval")}
try:  # torch >= 2.3; torch.cuda.amp.GradScaler is the same class, deprecated there
    scaler = torch.amp.GradScaler("cuda", **kwargs)
except (AttributeError, TypeError):
    scaler = torch.cuda.amp.GradScaler(**kwargs)

scales, skipped = [], []
for s in spec["steps"]:
    x = torch.tensor(s["x"], dtype=torch.float32, device=dev)
    y = torch.tensor(s["y"], dtype=torch.int64, device=dev)
    opt.zero_grad()
    with torch.autocast("cuda", dtype=torch.float16):
        out = lin(x)
    loss = torch.nn.functional.cross_entropy(out.float(), y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    before = [p.detach().clone() for p in lin.parameters()]
    scaler.step(opt)
    scaler.update()
    scales.append(scaler.get_scale())
    skipped.append(all(torch.equal(b, p) for b, p in zip(before, lin.parameters())))

print(json.dumps({"torch": torch.__version__, "scales": scales, "skipped": skipped,
                  "weight": lin.weight.detach().cpu().tolist(), "bias": lin.bias.detach().cpu().tolist()}))
