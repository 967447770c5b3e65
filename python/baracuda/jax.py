"""baracuda ops on JAX arrays, eagerly (DLPack, zero copy).

``call(op, **kw)`` selects the plan like ``baracuda.plan`` (descriptor fields by name; a JAX
array given for a layout field stands for its layout), reads the input arrays in place through
``__dlpack__`` and returns the outputs as new JAX arrays. JAX arrays are immutable, so outputs
and workspace are allocated through PyTorch or CuPy (whichever is installed) and handed to JAX
with ``jax.dlpack.from_dlpack``; the op runs on the allocating library's current stream after
JAX has finished writing the inputs. Under ``jax.jit`` these calls are not traceable yet (an
XLA FFI registration is the next step).
"""
from __future__ import annotations

from typing import Any, Dict

import jax

from . import Error, fields as _fields, problem_line, select, _pref_line

__all__ = ["call"]


def _allocator():
    try:
        import torch

        from . import torch as _bt  # registers the torch fast path

        def empty(spec: Dict[str, Any], nbytes: int = 0):
            if nbytes:
                return torch.empty(nbytes, dtype=torch.uint8, device="cuda")
            return torch.empty(spec["shape"], dtype=_bt.torch_dtype(spec["dtype"]), device="cuda")

        return empty, lambda: torch.cuda.current_stream().cuda_stream
    except ImportError:
        pass
    try:
        import cupy

        dt = {"f32": "float32", "f16": "float16", "f64": "float64", "i8": "int8", "u8": "uint8", "i16": "int16",
              "i32": "int32", "i64": "int64", "bool": "bool"}

        def empty(spec: Dict[str, Any], nbytes: int = 0):
            if nbytes:
                return cupy.empty(nbytes, dtype="uint8")
            if spec["dtype"] not in dt:
                raise Error("Unsupported", f"CuPy has no {spec['dtype']} arrays (install PyTorch for it)")
            return cupy.empty(spec["shape"], dtype=dt[spec["dtype"]])

        return empty, lambda: cupy.cuda.get_current_stream().ptr
    except ImportError:
        raise Error("Unsupported", "baracuda.jax allocates outputs through PyTorch or CuPy; install one of them") from None


def call(op: str, /, *, preference: Any = None, **kw: Any) -> Dict[str, jax.Array]:
    """Runs ``op`` on JAX arrays; returns its outputs by operand name as JAX arrays."""
    desc_fields = _fields(op)
    desc = {k.rstrip("_"): v for k, v in kw.items() if k.rstrip("_") in desc_fields}
    p = select(op, problem_line(**desc), _pref_line(preference))
    empty, current_stream = _allocator()
    views: Dict[str, Any] = {}
    for k, v in kw.items():
        k = k.rstrip("_")
        if isinstance(v, (list, tuple)) and v and all(hasattr(e, "__dlpack__") or e is None for e in v):
            for i, e in enumerate(v):
                views[f"{k}[{i}]"] = e
        elif hasattr(v, "__dlpack__"):
            views[k] = v
    for name in [n for n in views if p._p.operands and n not in {o["name"] for o in p.operands}]:
        del views[name]
    for a in views.values():
        if a is not None and hasattr(a, "block_until_ready"):
            a.block_until_ready()  # JAX's own streams finish the inputs first
    outs = {}
    for spec in p.outputs:
        t = empty(spec)
        views[spec["name"]] = t
        outs[spec["name"]] = t
    ws = p.workspace_size
    workspace = empty({}, ws) if ws else None
    ws_ptr = 0
    if workspace is not None:
        ws_ptr = workspace.data_ptr() if hasattr(workspace, "data_ptr") else workspace.data.ptr
    p._p.run(views, ws_ptr, ws, current_stream(), -1)
    return {k: jax.dlpack.from_dlpack(t) for k, t in outs.items()}
