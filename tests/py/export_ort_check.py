"""A `trainrun export`ed model in the Python runtimes, for tests/gpu/cuda_run_commands_test.cpp.

usage: export_ort_check.py MODEL.pt MODEL.onnx C H W
Runs one seeded random batch [2, C, H, W] through the TorchScript file (torch.jit.load, on the
CPU, and on CUDA where this torch has it) and through the ONNX file in onnxruntime (CPU).
Prints one JSON object: {"torch", "onnxruntime" (version or null), "why" (when null),
"ort_vs_torchscript", "cuda_vs_cpu" (max |difference| of the logits, or null)}.
"""
import json
import sys

import torch

pt, onnx_path, c, h, w = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
x = torch.randn(2, c, h, w, generator=torch.Generator().manual_seed(0))
module = torch.jit.load(pt, map_location="cpu").eval()
with torch.no_grad():
    ref = module(x)
out = {"torch": torch.__version__, "onnxruntime": None, "ort_vs_torchscript": None, "cuda_vs_cpu": None}
if torch.cuda.is_available():
    on_gpu = torch.jit.load(pt, map_location="cuda").eval()
    with torch.no_grad():
        out["cuda_vs_cpu"] = (on_gpu(x.cuda()).cpu() - ref).abs().max().item()
try:
    import onnxruntime as ort
except ImportError as e:
    out["why"] = str(e)
else:
    session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    out["onnxruntime"] = ort.__version__
    out["ort_vs_torchscript"] = float(abs(torch.from_numpy(got) - ref).max())
print(json.dumps(out))
