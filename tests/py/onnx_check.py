"""Reads an ONNX file trainrun wrote with the real onnx package and, where it is installed, runs it
with onnxruntime (tests/export/onnx_test.cpp).

usage: onnx_check.py MODEL.onnx [INPUT.bin EXPECTED.bin [EXACT.bin]]
  INPUT.bin: float32 input of shape [N] + the model's C, H, W; EXPECTED.bin: float32 [N, classes],
  what trainrun's own eval forward gave for it; EXACT.bin: float64 [N, classes], the same model
  run in float64 (a reference for how far each fp32 evaluation is from the exact function).

Prints one JSON object: what the file declares (ir_version, opset_import, metadata_props, the
graph's inputs and outputs with their dims, initializer names, node op types), whether
onnx.checker.check_model(full_check=True) accepted it ("checker": "ok", or the error), and, with
INPUT/EXPECTED, onnxruntime's version and the largest absolute difference from EXPECTED (or, where
onnxruntime is missing, "onnxruntime": null and why); where that exceeds 1e-4, the difference with
onnxruntime's graph optimisations off too; with EXACT, onnxruntime's difference from it.
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


def run(path, model, input_path, expected_path, exact_path=None):
    try:
        import onnxruntime
    except ImportError as e:
        return {"onnxruntime": None, "why": f"onnxruntime is not installed ({e}; Debian packages "
                                            f"python3-onnxruntime from 13 on)"}
    shape = dims(model.graph.input[0])[1:]
    x = np.fromfile(input_path, dtype=np.float32).reshape([-1] + shape)
    out = {"onnxruntime": onnxruntime.__version__, "batch": int(x.shape[0])}

    def logits(level):
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = level
        # One thread: ctest runs a test per core, and ORT's spinning pool beside another busy
        # process was 3.8x slower (all models on Debian 13: 245 s in a CI run, 65 s alone).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        return session.run(["logits"], {"input": x})[0].astype(np.float64)

    def max_abs_diff(y, reference):
        return float(np.max(np.abs(y - reference.reshape(y.shape))))

    # As users run it: ORT's default graph optimisations (BatchNormalization folded into the Conv
    # weights, Conv+Relu fused, ...).
    y = logits(onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL)
    out["logits_shape"] = list(y.shape)
    out["max_abs_diff"] = max_abs_diff(y, np.fromfile(expected_path, dtype=np.float32).astype(np.float64))
    if exact_path:
        out["max_abs_diff_vs_exact"] = max_abs_diff(y, np.fromfile(exact_path, dtype=np.float64))
    # Where that is over 1e-4: once more with none, the graph as written, node by node (whether
    # the optimisations or the arithmetic make the difference).
    if out["max_abs_diff"] > 1e-4:
        y = logits(onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL)
        out["max_abs_diff_unoptimized"] = max_abs_diff(y, np.fromfile(expected_path, dtype=np.float32).astype(np.float64))
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
        out.update(run(path, model, sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
