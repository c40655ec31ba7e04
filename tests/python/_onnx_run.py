"""Running a model's ONNX export in ONNX Runtime (shared by the ONNX tests; needs the onnx
extra, which the callers check with ``pytest.importorskip``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastpcam import onnx_inputs


def session(model: Any) -> Any:
    """An ONNX Runtime session of ``model.to_onnx()``, checked by the ONNX checker."""
    import onnx
    import onnxruntime as ort

    proto = model.to_onnx()
    onnx.checker.check_model(proto)
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


def run(model: Any, X: Any) -> dict[str, np.ndarray]:
    """The exported model's outputs on ``X``, by name."""
    sess = session(model)
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, onnx_inputs(model, X))))
