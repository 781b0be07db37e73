"""Reads an ONNX file trainrun wrote with the real onnx package and, where it is installed, runs it
with onnxruntime (tests/export/onnx_test.cpp).

usage: onnx_check.py MODEL.onnx [INPUT.bin EXPECTED.bin]
  INPUT.bin: float32 input of shape [N] + the model's C, H, W; EXPECTED.bin: float32 [N, classes],
  what trainrun's own eval forward gave for it.

Prints one JSON object: what the file declares (ir_version, opset_import, metadata_props, the
graph's inputs and outputs with their dims, initializer names, node op types), whether
onnx.checker.check_model(full_check=True) accepted it ("checker": "ok", or the error), and, with
INPUT/EXPECTED, onnxruntime's version and the largest absolute difference from EXPECTED (or, where
onnxruntime is missing, "onnxruntime": null and why).
"""
import json
import sys

import numpy as np
import onnx


def dims(value_info):
    return [d.dim_param if d.dim_param else d.dim_value for d in value_info.type.tensor_type.shape.dim]


def describe(model):
    return {
        "onnx": onnx.__version__,
        "ir_version": model.ir_version,
        "opset_import": {o.domain: o.version for o in model.opset_import},
        "metadata": {p.key: p.value for p in model.metadata_props},
        "inputs": [[v.name, dims(v)] for v in model.graph.input],
        "outputs": [[v.name, dims(v)] for v in model.graph.output],
        "initializers": [t.name for t in model.graph.initializer],
        "ops": sorted({n.op_type for n in model.graph.node}),
    }


def run(path, model, input_path, expected_path):
    try:
        import onnxruntime
    except ImportError as e:
        return {"onnxruntime": None, "why": f"onnxruntime is not installed ({e}; Debian packages "
                                            f"python3-onnxruntime from 13 on)"}
    shape = dims(model.graph.input[0])[1:]
    x = np.fromfile(input_path, dtype=np.float32).reshape([-1] + shape)
    expected = None
    out = {"onnxruntime": onnxruntime.__version__, "batch": int(x.shape[0])}
    # Once as users run it (ORT's default graph optimisations: BatchNormalization folded into the
    # Conv weights, Conv+Relu fused, ...), once with none: the graph as written, node by node.
    for key, level in (("max_abs_diff", onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL),
                       ("max_abs_diff_unoptimized", onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL)):
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = level
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        (y,) = session.run(["logits"], {"input": x})
        if expected is None:
            expected = np.fromfile(expected_path, dtype=np.float32).reshape(y.shape)
            out["logits_shape"] = list(y.shape)
        out[key] = float(np.max(np.abs(y.astype(np.float64) - expected.astype(np.float64))))
    return out


def main():
    path = sys.argv[1]
    model = onnx.load(path)
    out = describe(model)
    try:
        onnx.checker.check_model(model, full_check=True)
        out["checker"] = "ok"
    except Exception as e:  # the checker's own exception types differ between onnx versions
        out["checker"] = f"{type(e).__name__}: {e}"
    if len(sys.argv) > 3 and out["checker"] == "ok":
        out.update(run(path, model, sys.argv[2], sys.argv[3]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
