"""baracuda: Hopper-native CUDA primitives for ML frameworks, from Python.

Every op of the library's op table is reachable here without per-op glue::

    import baracuda
    baracuda.ops()                                   # the op table's rows
    p = baracuda.plan("rope", dtype="bf16", seq=4096, heads_q=32, heads_k=8, head_dim=128)
    p.operands, p.workspace_size, p.sku, p.precision_guarantee
    p(q=q, q_out=q_out, k=k, k_out=k_out)            # any __dlpack__ / __cuda_array_interface__ object

Keyword names are the descriptor's field names (``baracuda.fields(op)`` lists them with their
defaults); values are Python values or the problem-line syntax of the C++ library and its
benchmark (``"f32[4,5]{5,1}"``, ``"1,2,3"``, ``"bf16"``). A tensor given as a field value stands
for its layout. ``baracuda.torch`` registers every op as a ``torch.library`` custom op with
autograd; ``baracuda.jax`` runs ops on JAX arrays.
"""
from __future__ import annotations

import atexit
import sys
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import _C

__version__: str = _C.__version__

__all__ = [
    "Error", "Plan", "BoundPlan", "Preference", "OpRow", "ops", "fields", "plan", "layout_string", "problem_line",
    "clear_plan_cache", "__version__",
]


class Error(RuntimeError):
    """A library Status that is not OK: ``code`` (e.g. ``"InvalidProblem"``) and ``message``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


_C._set_error_type(Error)
atexit.register(_C._release)


class OpRow(tuple):
    """One row of the op table: (name, family, direction, plan type)."""

    __slots__ = ()

    def __new__(cls, name: str, family: str, direction: str, plan_type: str) -> "OpRow":
        return super().__new__(cls, (name, family, direction, plan_type))

    name = property(lambda self: self[0])
    family = property(lambda self: self[1])
    direction = property(lambda self: self[2])
    plan_type = property(lambda self: self[3])

    def __repr__(self) -> str:
        return f"OpRow(name={self[0]!r}, family={self[1]!r}, direction={self[2]!r}, plan_type={self[3]!r})"


_ROWS = [OpRow(*r) for r in _C.ops()]
_ROW_BY_NAME = {r.name: r for r in _ROWS}


def ops() -> List[OpRow]:
    """Every row of the op table, in its order (the same list as ``baracuda_bench --list``)."""
    return list(_ROWS)


def fields(op: str) -> Dict[str, str]:
    """The descriptor fields of ``op`` with their default values (problem-line syntax)."""
    return dict(_C.fields(op))


# ---------------------------------------------------------------- problem lines from Python values

_DTYPE_NAMES = {name for name, _, _ in _C.dtypes()}


def _dtype_name(dt: Any) -> Optional[str]:
    """The baracuda name of a framework dtype (torch / numpy / jax), or None."""
    s = str(dt)
    if s.startswith("torch."):
        s = s[len("torch."):]
    s = s.replace("dtype(", "").replace(")", "").replace("'", "")
    table = {
        "float32": "f32", "float": "f32", "float16": "f16", "half": "f16", "bfloat16": "bf16", "float64": "f64",
        "double": "f64", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2", "int8": "i8", "uint8": "u8",
        "int16": "i16", "int32": "i32", "int64": "i64", "bool": "bool", "complex64": "c64", "complex128": "c128",
    }
    if s in table:
        return table[s]
    return s if s in _DTYPE_NAMES else None


def layout_string(t: Any, strides: bool = True) -> str:
    """``dtype[shape]{strides}`` of a tensor-like object (torch, CuPy, numpy, JAX); the strides
    only when asked and not contiguous."""
    dt = _dtype_name(t.dtype)
    if dt is None:
        raise Error("InvalidProblem", f"dtype {t.dtype} has no baracuda equivalent")
    shape = tuple(int(s) for s in t.shape)
    s = f"{dt}[{','.join(map(str, shape))}]"
    st = _strides_of(t) if strides else None
    if st is not None and st != _contiguous(shape):
        s += "{" + ",".join(map(str, st)) + "}"
    return s


def _contiguous(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(out))


def _strides_of(t: Any) -> Optional[Tuple[int, ...]]:
    st = getattr(t, "stride", None)
    if callable(st):  # torch
        return tuple(int(s) for s in st())
    st = getattr(t, "strides", None)  # numpy / CuPy: bytes
    if st is not None:
        size = t.dtype.itemsize
        return tuple(int(s) // size for s in st)
    return None  # JAX: contiguous


def _is_tensor(v: Any) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, (str, bytes))


def _value(v: Any, in_list: bool = False) -> str:
    """A field value in the problem-line syntax. A tensor stands for its layout: with strides as a
    field of its own (a TensorLayout: gemm's a / b / out), without inside a list (the elementwise
    operand list, whose entries are dtype[shape] or scalars; the strides are the call's)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return ",".join(_value(e, True) for e in v)
    if _is_tensor(v):
        return layout_string(v, strides=not in_list)
    dt = _dtype_name(v)
    if dt is not None:
        return dt
    raise Error("InvalidProblem", f"cannot express {v!r} in a problem line")


def problem_line(**fields: Any) -> str:
    """``k=v k=v`` from keyword arguments (the syntax ``Plan.select`` and the bench take)."""
    return " ".join(f"{k}={_value(v)}" for k, v in fields.items() if v is not None)


class Preference:
    """How a plan is chosen (PlanPreference): determinism ("any" / "run_to_run"), target_arch
    (90: select for sm_90 without a GPU), max_workspace_bytes, forced_backend, allow_tf32,
    autotune. Unset fields keep the library's defaults."""

    __slots__ = ("fields",)

    def __init__(self, **fields: Any) -> None:
        self.fields = {k: v for k, v in fields.items() if v is not None}

    def line(self) -> str:
        return problem_line(**self.fields)

    def __repr__(self) -> str:
        return f"Preference({self.line()})"


# ---------------------------------------------------------------- plans

class Plan:
    """A selected plan of one op-table row: what it expects and how to run it.

    ``p(**views, workspace=None, stream=None)`` runs it. Views are bound by operand name
    (``p.operands``); a list binds an array field (``in_=[a, b]`` binds ``in[0]``, ``in[1]``; a
    trailing underscore is dropped so Python keywords work). ``workspace`` is a device buffer of
    at least ``workspace_size`` bytes (a tensor-like object or an integer pointer); ``stream`` a
    ``cudaStream_t`` as an integer or an object with ``cuda_stream`` / ``ptr`` (torch / CuPy
    streams). Nothing is allocated: use ``baracuda.torch`` for allocating calls.
    """

    __slots__ = ("_p", "op", "problem")

    def __init__(self, native: Any) -> None:
        self._p = native
        self.op: str = native.op
        self.problem: str = native.problem

    @property
    def operands(self) -> List[Dict[str, Any]]:
        return self._p.operands

    @property
    def inputs(self) -> List[Dict[str, Any]]:
        """The operands run() reads: role "in", and "inout" (updated in place)."""
        return [o for o in self._p.operands if o["role"] != "out"]

    @property
    def outputs(self) -> List[Dict[str, Any]]:
        """The operands run() writes: role "out", and "inout"."""
        return [o for o in self._p.operands if o["role"] != "in"]

    @property
    def workspace_size(self) -> int:
        return self._p.workspace_size

    @property
    def sku(self) -> str:
        return self._p.sku

    @property
    def precision_guarantee(self) -> Dict[str, Any]:
        return self._p.precision_guarantee

    @property
    def repro(self) -> str:
        return self._p.repro

    def __repr__(self) -> str:
        return f"<baracuda.Plan {self.repro!r} sku={self.sku!r} workspace={self.workspace_size}>"

    @staticmethod
    def _views(views: Optional[Mapping[str, Any]], kw: Mapping[str, Any]) -> Dict[str, Any]:
        out = dict(views or {})
        for k, v in kw.items():
            out[k[:-1] if k.endswith("_") else k] = v
        return out

    def can_implement(self, views: Optional[Mapping[str, Any]] = None, **kw: Any) -> None:
        """Raises ``Error`` when the plan cannot run on these views (nothing is launched)."""
        _torch_fast_path()
        self._p.can_implement(self._views(views, kw))

    def __call__(self, views: Optional[Mapping[str, Any]] = None, *, workspace: Any = None, stream: Any = None,
                 **kw: Any) -> None:
        _torch_fast_path()
        ws_ptr, ws_bytes = _workspace(workspace, self._p.workspace_size)
        s = _stream_handle(stream)
        self._p.run(self._views(views, kw), ws_ptr, ws_bytes, s, s if s > 2 else -1)

    run = __call__

    def bind(self, views: Optional[Mapping[str, Any]] = None, **kw: Any) -> "BoundPlan":
        """The views checked and bound once: ``b = p.bind(x=x, y=y); b(stream=s)`` reruns the
        plan on the same memory with no per-call binding (timing loops, decode steps). The
        bound plan keeps the view objects alive."""
        _torch_fast_path()
        v = self._views(views, kw)
        return BoundPlan(self, self._p.bind(v), v)


class BoundPlan:
    """A plan bound to its views (``Plan.bind``): call it with ``workspace=`` and ``stream=``."""

    __slots__ = ("plan", "_b", "_keep")

    def __init__(self, plan: Plan, native: Any, keep: Dict[str, Any]) -> None:
        self.plan = plan
        self._b = native
        self._keep = keep  # the bound objects own the memory the plan points at

    def __call__(self, *, workspace: Any = None, stream: Any = None) -> None:
        ws_ptr, ws_bytes = _workspace(workspace, self.plan.workspace_size)
        self._b.run(ws_ptr, ws_bytes, _stream_handle(stream))

    def __repr__(self) -> str:
        return f"<baracuda.BoundPlan {self.plan.repro!r}>"


_TORCH_READY = False


def _torch_fast_path() -> None:
    """Once PyTorch is imported, its tensors are read through their attributes (baracuda.torch
    registers them; their __cuda_array_interface__ has no bfloat16 and costs a dict per call)."""
    global _TORCH_READY
    if not _TORCH_READY and "torch" in sys.modules:
        from . import torch as _bt  # registers the fast path
        del _bt

        _TORCH_READY = True


def _workspace(ws: Any, need: int) -> Tuple[int, int]:
    if ws is None:
        if need:
            raise Error("WorkspaceTooSmall", f"this plan needs a workspace of {need} bytes (pass workspace=)")
        return 0, 0
    if isinstance(ws, int):
        return ws, need
    if hasattr(ws, "data_ptr"):  # torch
        return int(ws.data_ptr()), int(ws.numel() * ws.element_size())
    cai = getattr(ws, "__cuda_array_interface__", None)
    if cai is not None:
        n = 1
        for s in cai["shape"]:
            n *= int(s)
        return int(cai["data"][0]), n * int(ws.dtype.itemsize)
    raise Error("InvalidProblem", f"workspace: a {type(ws).__name__} is neither a pointer nor a device buffer")


def _stream_handle(stream: Any) -> int:
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    raise Error("InvalidProblem", f"stream: cannot read a cudaStream_t from a {type(stream).__name__}")


_CACHE: Dict[Tuple[str, str, str, int], Plan] = {}


def _pref_line(preference: Any) -> str:
    if preference is None:
        return ""
    if isinstance(preference, Preference):
        return preference.line()
    if isinstance(preference, Mapping):
        return Preference(**preference).line()
    if isinstance(preference, str):
        return preference
    raise Error("InvalidProblem", f"preference: expected a Preference, a dict or a line, got {type(preference).__name__}")


def select(op: str, problem: str = "", preference: Any = None) -> Plan:
    """Selects ``op``'s plan for a problem line; cached per (op, problem, preference, device)."""
    pref = _pref_line(preference)
    key = (op, problem, pref, -1 if "target_arch" in pref else _C.current_device())
    p = _CACHE.get(key)
    if p is None:
        if op not in _ROW_BY_NAME:
            raise Error("InvalidProblem", f"no op named {op!r} (baracuda.ops() lists them)")
        p = Plan(_C.Plan.select(op, problem, pref))
        _CACHE[key] = p
    return p


def plan(op: str, *, preference: Any = None, **fields: Any) -> Plan:
    """Selects ``op``'s plan for a descriptor given as keyword arguments (see ``fields(op)``)."""
    return select(op, problem_line(**fields), preference)


def clear_plan_cache() -> None:
    _CACHE.clear()
