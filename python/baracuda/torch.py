"""baracuda ops as PyTorch custom ops (``torch.ops.baracuda.<row>``), with autograd.

Every row of the op table is one ``torch.library`` custom op, generated from the table::

    torch.ops.baracuda.<row>(problem: str, preference: str, inputs: Tensor?[]) -> Tensor[]

``inputs`` are the plan's input operands in the order ``plan.inputs`` lists them; the outputs
come back in ``plan.outputs`` order, allocated by the op from PyTorch's caching allocator on the
current stream (workspace too). The ops are functional: an operand the plan updates in place
(role ``inout``) is cloned first and returned. A fake implementation (shapes from the plan,
selected for sm_90 without touching the GPU) lets ``torch.compile(fullgraph=True)`` trace them,
and forward rows whose table has a ``<row>_backward`` get an autograd formula that runs it:
the backward plan takes the forward descriptor, reads forward operands by name and the output
gradients as ``d<name>`` / ``d_<name>`` / ``grad_<name>``, and writes the input gradients under
the same names. Nothing here is written per op.

``call(op, **kw)`` is the keyword form: descriptor fields and input operands by name (a tensor
given for a layout field of the descriptor stands for its layout too), returning the outputs by
name. The functional wrappers below it keep ``torch.nn.functional``'s names and arguments.
"""
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

import builtins  # the reductions below take the names sum, all, any, max, min (as torch's)
import functools
import math

import baracuda as _baracuda

from . import Error, _C, _ROW_BY_NAME, fields as _all_fields, problem_line, select, _pref_line

__all__ = ["call", "custom_op", "register_all", "dtype_of", "torch_dtype", "cat", "stack", "full", "zeros", "ones",
           "full_like", "zeros_like", "ones_like", "arange", "linspace", "logspace", "eye", "flip", "roll", "pad", "embedding", "embedding_bag",
           "linear", "rope", "causal_conv1d", "elementwise", "elementwise_ops", "Linear", "Embedding",
           "EmbeddingBag", "CausalConv1d", "sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "all", "any",
           "count_nonzero", "logsumexp", "vector_norm", "var", "std", "argmax", "argmin", "max", "min",
           "split", "chunk", "tensor_split", "unbind"]

_TO_TORCH = {
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
    "f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2, "i8": torch.int8, "u8": torch.uint8,
    "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "bool": torch.bool,
    "c64": torch.complex64, "c128": torch.complex128,
}
_CODE = {name: code for name, code, _ in _C.dtypes()}
_FROM_TORCH = {t: name for name, t in _TO_TORCH.items()}
_C._set_torch(torch.Tensor, {t: _CODE[name] for name, t in _TO_TORCH.items()})
_baracuda._TORCH_READY = True


def torch_dtype(name: str) -> torch.dtype:
    return _TO_TORCH[name]


def dtype_of(t: torch.dtype) -> str:
    name = _FROM_TORCH.get(t)
    if name is None:
        raise Error("InvalidProblem", f"{t} has no baracuda equivalent")
    return name


_HOST_PREF = "target_arch=90"  # fake / meta shapes: select for sm_90 without a GPU


def _fake_pref(pref: str) -> str:
    return pref if "target_arch" in pref else (pref + " " + _HOST_PREF).strip()


def _empty(spec: Dict[str, Any], device: torch.device) -> torch.Tensor:
    dt = _TO_TORCH[spec["dtype"]]
    if spec["strides"] is not None:
        return torch.empty_strided(spec["shape"], spec["strides"], dtype=dt, device=device)
    return torch.empty(spec["shape"], dtype=dt, device=device)


def _device_of(inputs: Sequence[Optional[torch.Tensor]]) -> torch.device:
    for t in inputs:
        if t is not None:
            return t.device
    return torch.device("cuda", torch.cuda.current_device())


class _Runner:
    """What a run of one (row, problem, preference) needs, read off its plan once."""

    __slots__ = ("native", "in_names", "outs", "ws")

    def __init__(self, p: Any) -> None:
        self.native = p._p
        self.in_names = [o["name"] for o in p.inputs]
        # (name, shape, strides or None, torch dtype, in place)
        self.outs = [(o["name"], tuple(o["shape"]), o["strides"], _TO_TORCH[o["dtype"]], o["role"] == "inout")
                     for o in p.outputs]
        self.ws = p.workspace_size


_RUNNERS: Dict[Tuple[str, str, str, int], _Runner] = {}
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _run(row: str, problem: str, pref: str, inputs: List[Optional[torch.Tensor]]) -> List[torch.Tensor]:
    device = _device_of(inputs)
    index = device.index if device.index is not None else torch.cuda.current_device()
    key = (row, problem, pref, index)
    r = _RUNNERS.get(key)
    if r is None:
        with torch.cuda.device(index):
            r = _RUNNERS[key] = _Runner(select(row, problem, pref))
    if len(inputs) != len(r.in_names):
        raise Error("InvalidProblem", f"{row}: {len(inputs)} inputs given, the plan reads {len(r.in_names)} "
                    f"({', '.join(r.in_names)})")
    views: Dict[str, Any] = dict(zip(r.in_names, inputs))
    outs = []
    for name, shape, strides, dt, inout in r.outs:
        src = views.get(name) if inout else None
        if src is not None:
            t = src.clone()  # the op is functional: the updated copy is returned
        elif strides is not None:
            t = torch.empty_strided(shape, strides, dtype=dt, device=device)
        else:
            t = torch.empty(shape, dtype=dt, device=device)
        views[name] = t
        outs.append(t)
    workspace = torch.empty(r.ws, dtype=torch.uint8, device=device) if r.ws else None
    stream = _raw_stream(index) if _raw_stream is not None else torch.cuda.current_stream(device).cuda_stream
    r.native.run(views, workspace.data_ptr() if r.ws else 0, r.ws, stream, -1)
    return outs


def _fake(row: str, problem: str, pref: str, inputs: List[Optional[torch.Tensor]]) -> List[torch.Tensor]:
    p = select(row, problem, _fake_pref(pref))
    device = _device_of(inputs)
    return [_empty(spec, device) for spec in p.outputs]


# ---------------------------------------------------------------- autograd from the table

def _grad_names(name: str) -> List[str]:
    base, _, idx = name.partition("[")
    idx = "[" + idx if idx else ""
    return [f"d{base}{idx}", f"d_{base}{idx}", f"grad_{base}{idx}"]


def _setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
    problem, pref, tensors = inputs
    ctx.problem, ctx.pref = problem, pref
    ctx.n_in = len(tensors)
    present = [t for t in tensors if t is not None]
    ctx.in_present = [t is not None for t in tensors]
    ctx.save_for_backward(*present, *output)
    ctx.n_out = len(output)


def _make_backward(row: str, bwd_row: str):
    def backward(ctx: Any, grads: List[Optional[torch.Tensor]]) -> Tuple[None, None, List[Optional[torch.Tensor]]]:
        if row == "norm" and "residual=true" in ctx.problem:
            # norm_backward reads h (not x) and its dx is also the residual's gradient: the by-name
            # binding below would pass x and leave the residual without a gradient
            raise Error("Unsupported", "norm: autograd through the fused residual add is not wired yet; "
                        "run norm_backward with h as x, or add the residual before the norm")
        saved = list(ctx.saved_tensors)
        k = builtins.sum(ctx.in_present)
        present, outs = saved[:k], saved[k:]
        it = iter(present)
        tensors = [next(it) if p else None for p in ctx.in_present]
        fwd = select(row, ctx.problem, ctx.pref)
        named: Dict[str, Optional[torch.Tensor]] = {}
        for spec, t in zip(fwd.inputs, tensors):
            named[spec["name"]] = t
        out_names = [spec["name"] for spec in fwd.outputs]
        for name, t in zip(out_names, outs):
            named[name] = t
        bwd = select(bwd_row, ctx.problem, ctx.pref)
        need = {spec["name"] for spec in bwd.inputs}
        for name, g, t in zip(out_names, grads, outs):
            if t.is_floating_point():
                for gn in _grad_names(name):
                    if gn in need:  # (zeros only for a gradient the backward reads)
                        named[gn] = g if g is not None else torch.zeros_like(t)
        b_inputs = [named.get(spec["name"]) for spec in bwd.inputs]
        b_outs = custom_op(bwd_row)(ctx.problem, ctx.pref, b_inputs)
        produced = {spec["name"]: t for spec, t in zip(bwd.outputs, b_outs)}
        in_grads: List[Optional[torch.Tensor]] = []
        for spec, t in zip(fwd.inputs, tensors):
            g = None
            if t is not None and t.is_floating_point():
                for gn in _grad_names(spec["name"]):
                    if gn in produced:
                        g = produced[gn]
                        break
            in_grads.append(g)
        return None, None, in_grads

    return backward


def _problem_fields(problem: str) -> Dict[str, str]:
    return dict(kv.split("=", 1) for kv in problem.split())


def _cat_setup(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
    problem, _, tensors = inputs
    f = _problem_fields(problem)
    ctx.dim, ctx.stack = int(f.get("dim", "0")), f.get("stack") == "true"
    ctx.sizes = [int(n) for n in f["sizes"].split(",")]
    ctx.n_in = len(tensors)
    ctx.in_dtypes = [None if t is None else t.dtype for t in tensors] if f.get("in_dtypes") else None


def _cat_backward(ctx: Any, grads: List[Optional[torch.Tensor]]) -> Tuple[None, None, List[Optional[torch.Tensor]]]:
    g = grads[0]
    if g is None:
        return None, None, [None] * ctx.n_in
    pieces = torch.unbind(g, ctx.dim) if ctx.stack else torch.split(g, ctx.sizes, ctx.dim)
    dts = ctx.in_dtypes or [None] * ctx.n_in
    return None, None, [p if dt is None or p.dtype == dt else p.to(dt) for p, dt in zip(pieces, dts)]


def _problem_setup(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
    ctx.problem, ctx.pref = inputs[0], inputs[1]


def _flip_backward(ctx: Any, grads: List[Optional[torch.Tensor]]) -> Tuple[None, None, List[Optional[torch.Tensor]]]:
    g = grads[0]
    return None, None, [None if g is None else custom_op("flip")(ctx.problem, ctx.pref, [g.contiguous()])[0]]


def _triangle_backward(ctx: Any, grads: List[Optional[torch.Tensor]]) -> Tuple[None, None, List[Optional[torch.Tensor]]]:
    g = grads[0]
    return None, None, [None if g is None else custom_op("triangle")(ctx.problem, ctx.pref, [g.contiguous()])[0]]


def _roll_backward(ctx: Any, grads: List[Optional[torch.Tensor]]) -> Tuple[None, None, List[Optional[torch.Tensor]]]:
    g = grads[0]
    if g is None:
        return None, None, [None]
    f = _problem_fields(ctx.problem)
    shape = [int(n) for n in f["shape"].split(",")] if f.get("shape") else []
    rank = int(f.get("rank", "0"))
    dims = [int(d) for d in f["dims"].split(",")] if f.get("dims") else []
    shifts = [int(v) for v in f["shifts"].split(",")]
    numel = math.prod(shape[:rank]) if rank else 1
    ext = [shape[d + rank if d < 0 else d] for d in dims] if dims else [numel]
    f["shifts"] = ",".join(str((-v) % n if n > 0 else 0) for v, n in zip(shifts, ext))  # the inverse roll
    problem = " ".join(f"{k}={v}" for k, v in f.items())
    return None, None, [custom_op("roll")(problem, ctx.pref, [g.contiguous()])[0]]


def _indexed_setup(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
    ctx.problem, ctx.pref = inputs[0], inputs[1]
    ctx.save_for_backward(*[t for t in inputs[2]], output[0])
    ctx.n_in = len(inputs[2])


def _line(f: Dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in f.items())


def _index_fields(f: Dict[str, str], data_shape: str) -> Dict[str, str]:
    """The fields a gather and a scatter of the same index share, with the data's shape."""
    keep = {k: f[k] for k in ("dtype", "index_dtype", "form", "rank", "index_shape", "dim", "bounds", "wrap_negative") if k in f}
    keep[data_shape[0]] = data_shape[1]
    return keep


def _gather_backward(ctx: Any, grads: List[Optional[torch.Tensor]]) -> Tuple[None, None, List[Optional[torch.Tensor]]]:
    g = grads[0]
    saved = ctx.saved_tensors  # input, index (, invalid_count), out
    input, index = saved[0], saved[1]
    if g is None or not input.is_floating_point():
        return None, None, [None] * ctx.n_in
    f = _problem_fields(ctx.problem)
    s = _index_fields(f, ("self_shape", f.get("input_shape", "")))
    if not s["self_shape"]:
        del s["self_shape"]
    s["reduce"] = "sum"
    dinput = custom_op("scatter")(_line(s), ctx.pref, [torch.zeros_like(input), index, g.contiguous()])[0]
    return None, None, [dinput] + [None] * (ctx.n_in - 1)


def _scatter_backward(ctx: Any, grads: List[Optional[torch.Tensor]]) -> Tuple[None, None, List[Optional[torch.Tensor]]]:
    g = grads[0]
    saved = ctx.saved_tensors  # self, index (, src) (, invalid_count), out
    f = _problem_fields(ctx.problem)
    has_src = f.get("src_is_value", "false") != "true"
    self, index, result = saved[0], saved[1], saved[-1]
    src = saved[2] if has_src else None
    if g is None or not self.is_floating_point():
        return None, None, [None] * ctx.n_in
    g = g.contiguous()
    reduce, include_self = f.get("reduce", "none"), f.get("include_self", "true") == "true"
    gat = _index_fields(f, ("input_shape", f.get("self_shape", "")))
    if not gat["input_shape"]:
        del gat["input_shape"]
    sca = _index_fields(f, ("self_shape", f.get("self_shape", "")))
    if not sca["self_shape"]:
        del sca["self_shape"]

    def gather_of(t: torch.Tensor) -> torch.Tensor:
        return custom_op("gather")(_line(gat), ctx.pref, [t.contiguous(), index])[0]

    def scatter_sum(base: torch.Tensor, values: Optional[torch.Tensor], value: float = 1.0) -> torch.Tensor:
        s = dict(sca, reduce="sum")
        if values is None:
            s.update(src_is_value="true", value=repr(value))
            return custom_op("scatter")(_line(s), ctx.pref, [base, index])[0]
        return custom_op("scatter")(_line(s), ctx.pref, [base, index, values.contiguous()])[0]

    def targeted() -> torch.Tensor:  # 1 where a valid index lands, else 0
        return scatter_sum(torch.zeros_like(self), None) > 0

    dself = dsrc = None
    if reduce == "none":
        dself = g.masked_fill(targeted(), 0)
        dsrc = gather_of(g) if src is not None else None
    elif reduce == "sum":
        dself = g if include_self else g.masked_fill(targeted(), 0)
        alpha = float(f["alpha"]) if "alpha" in f else 1.0
        dsrc = gather_of(g) * alpha if src is not None else None
    elif reduce == "mean":
        n = scatter_sum(torch.ones_like(self) if include_self else torch.zeros_like(self), None)
        gn = g / n.clamp(min=1)
        dself = gn if include_self else g.masked_fill(n > 0, 0)
        dsrc = gather_of(gn) if src is not None else None
    elif reduce in ("amax", "amin"):
        # ties share the gradient evenly (PyTorch's rule)
        mself = (self == result) if include_self else torch.zeros_like(self, dtype=torch.bool)
        msrc = (src == gather_of(result)) if src is not None else None
        n = scatter_sum(mself.to(g.dtype), msrc.to(g.dtype) if msrc is not None else None)
        gn = g / n.clamp(min=1)
        dself = torch.where(mself, gn, torch.zeros_like(gn)) if include_self else g.masked_fill(targeted(), 0)
        dsrc = torch.where(msrc, gather_of(gn), torch.zeros_like(src)) if src is not None else None
    elif reduce == "prod" and src is not None:
        # PyTorch's formula (FunctionsManual.cpp scatter_reduce_backward / index_reduce_backward,
        # prod): the products again with the zeros of self (for dself) or the single zero of a
        # target's src terms (for dsrc) replaced by 1, i.e. the exclusive products
        fwd = _line({k: v for k, v in f.items() if k != "count_invalid"})

        def prod_of(base: torch.Tensor, values: torch.Tensor) -> torch.Tensor:  # the forward again
            return custom_op("scatter")(fwd, ctx.pref, [base.contiguous(), index, values.contiguous()])[0]

        masked_self = self.masked_fill(self == 0, 1)
        dself = g * prod_of(masked_self, src) / masked_self
        if not include_self:  # (PyTorch's grad_self.scatter(dim, index, 0))
            dself = dself.masked_fill(targeted(), 0)
        src_zero = src == 0
        src_num_zeros = gather_of(scatter_sum(torch.zeros_like(self), src_zero.to(g.dtype)))
        src_single_zero = src_zero & (src_num_zeros == 1)
        masked_src_result = prod_of(self, src.masked_fill(src_single_zero, 1))
        dsrc = torch.where(src_single_zero, gather_of(g * masked_src_result),
                           gather_of(g * result) / src.masked_fill(src_zero, 1))
    else:
        raise Error("Unsupported", f"scatter: the gradient of reduce {reduce} is not implemented (sum, prod, mean, amax, amin "
                    "and none are)")
    return None, None, [dself, None] + ([dsrc] if has_src else []) + [None] * (ctx.n_in - 2 - int(has_src))


def _mask_backward(ctx: Any, grads: List[Optional[torch.Tensor]]) -> Tuple[None, None, List[Optional[torch.Tensor]]]:
    g = grads[0]
    saved = ctx.saved_tensors
    f = _problem_fields(ctx.problem)
    op = f.get("op", "nonzero")
    input, mask = saved[0], saved[1] if ctx.n_in > 1 else None
    if g is None or op == "nonzero" or not input.is_floating_point():
        return None, None, [None] * ctx.n_in
    g = g.contiguous()
    base = {k: f[k] for k in ("dtype", "mask_dtype", "rank", "shape") if k in f}
    if op == "masked_select":  # dinput: the gradient scattered back to the flagged positions
        line = _line(dict(base, op="masked_scatter", source_numel=str(g.numel())))
        dinput = custom_op("nonzero")(line, ctx.pref, [torch.zeros_like(input), mask, g])[0]
        return None, None, [dinput, None]
    # masked_scatter: dinput = dout off the flags, dsource = dout at the flags, in order (zero past the count)
    source = saved[2]
    dinput = g.masked_fill(mask.to(torch.bool) if mask.dtype == torch.bool else mask != 0, 0)
    line = _line(dict(base, op="masked_select", max_count=str(source.numel())))
    dsource = custom_op("nonzero")(line, ctx.pref, [g, mask])[0]
    return None, None, [dinput, None, dsource]


# Rows whose backward is no kernel row: views of the gradient (cat), the op itself again (flip,
# roll with the shifts negated) or the other indexed op (gather <-> scatter): (backward, setup).
_VIEW_BACKWARD: Dict[str, Tuple[Any, Any]] = {"cat": (_cat_backward, _cat_setup), "flip": (_flip_backward, _problem_setup),
                                              "roll": (_roll_backward, _problem_setup),
                                              "gather": (_gather_backward, _indexed_setup),
                                              "scatter": (_scatter_backward, _indexed_setup),
                                              "nonzero": (_mask_backward, _indexed_setup),
                                              "triangle": (_triangle_backward, _problem_setup)}

_OPS: Dict[str, Any] = {}


def custom_op(row: str) -> Any:
    """The custom op ``torch.ops.baracuda.<row>`` (registered on first use)."""
    op = _OPS.get(row)
    if op is not None:
        return op
    if row not in _ROW_BY_NAME:
        raise Error("InvalidProblem", f"no op named {row!r} (baracuda.ops() lists them)")

    def impl(problem: str, preference: str, inputs: List[Optional[torch.Tensor]]) -> List[torch.Tensor]:
        return _run(row, problem, preference, inputs)

    op = torch.library.custom_op(f"baracuda::{row}", mutates_args=(), device_types="cuda")(impl)

    @op.register_fake
    def _(problem: str, preference: str, inputs: List[Optional[torch.Tensor]]) -> List[torch.Tensor]:
        return _fake(row, problem, preference, inputs)

    bwd_row = row + "_backward"
    if _ROW_BY_NAME[row].direction == "forward" and bwd_row in _ROW_BY_NAME:
        custom_op(bwd_row)
        op.register_autograd(_make_backward(row, bwd_row), setup_context=_setup_context)
    elif row in _VIEW_BACKWARD:
        op.register_autograd(_VIEW_BACKWARD[row][0], setup_context=_VIEW_BACKWARD[row][1])
    _OPS[row] = op
    return op


def register_all() -> None:
    """Registers every row (they are otherwise registered on first use)."""
    for row in _ROW_BY_NAME:
        custom_op(row)


# ---------------------------------------------------------------- the keyword form

def _names(kw: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in kw.items():
        k = k[:-1] if k.endswith("_") else k
        if isinstance(v, (list, tuple)) and v and builtins.all(isinstance(e, torch.Tensor) or e is None for e in v):
            for i, e in enumerate(v):
                out[f"{k}[{i}]"] = e
        else:
            out[k] = v
    return out


def _layout(t: torch.Tensor, strides: bool) -> str:
    """dtype[shape]{strides} of a tensor (the strides when asked and not contiguous); written
    with what torch.compile's Dynamo traces (a dict lookup of the dtype, integer formatting)."""
    shape = [int(n) for n in t.shape]
    s = dtype_of(t.dtype) + "[" + ",".join([str(n) for n in shape]) + "]"
    if strides and not t.is_contiguous():
        s += "{" + ",".join([str(int(n)) for n in t.stride()]) + "}"
    return s


def _constant(fn):
    """Under torch.compile, Dynamo calls fn at trace time and keeps its result as a constant
    (fn's arguments are strings; it reaches into the extension, which Dynamo cannot trace)."""
    cached = functools.lru_cache(maxsize=None)(fn)

    def constant(*args: str) -> Any:
        return cached(*args)

    constant.__name__, constant.__doc__ = fn.__name__, fn.__doc__
    assume = getattr(torch.compiler, "assume_constant_result", None) or torch._dynamo.assume_constant_result
    return assume(constant)


@_constant
def _fields(op: str) -> Tuple[Tuple[str, str], ...]:
    return tuple(_all_fields(op).items())


@_constant
def _prepare(op: str, problem: str, pref: str) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(input names, output names) of op's plan for the problem; registers the custom op."""
    custom_op(op)
    p = select(op, problem, _fake_pref(pref) if _compiling() or not torch.cuda.is_available() else pref)
    return tuple(o["name"] for o in p.inputs), tuple(o["name"] for o in p.outputs)


def call(op: str, /, *, preference: Any = None, **kw: Any) -> Dict[str, torch.Tensor]:
    """Runs ``op`` through its custom op: descriptor fields and input operands by name.

    Returns the outputs by operand name. Autograd flows through forward rows that have a
    backward row; under ``torch.compile(fullgraph=True)`` the call is one node of the graph
    (the problem line is built from the tensors' static shapes)."""
    desc_fields = dict(_fields(op))
    names = _names(kw)
    desc = {}
    for k, v in kw.items():
        k = k[:-1] if k.endswith("_") else k
        if k not in desc_fields or v is None:
            continue
        if isinstance(v, torch.Tensor):  # an operand that is also a descriptor field
            default = desc_fields[k]
            if "[" in default:
                desc[k] = _layout(v, True)  # a layout field: the tensor's layout
            elif default in ("true", "false"):
                desc[k] = True  # a has-operand flag: the operand is given
            continue
        if isinstance(v, (list, tuple)):  # tensors in a list (the elementwise operands): dtype[shape]
            v = [_layout(e, False) if isinstance(e, torch.Tensor) else e for e in v]
        elif isinstance(v, torch.dtype):
            v = dtype_of(v)
        desc[k] = v
    problem = problem_line(**desc)
    pref = _pref_line(preference)
    in_names, out_names = _prepare(op, problem, pref)
    inputs = []
    for n in in_names:
        t = names.get(n)
        if t is not None and not isinstance(t, torch.Tensor):
            raise Error("InvalidProblem", f"{op}: operand '{n}' must be a torch.Tensor, got {type(t).__name__}")
        inputs.append(t)
    if _direct(inputs):
        outs = _run(op, problem, pref, inputs)  # eager, nothing to record: skip the dispatcher
    else:
        outs = getattr(torch.ops.baracuda, op)(problem, pref, inputs)
    return dict(zip(out_names, outs))


try:
    from torch.utils._python_dispatch import _get_current_dispatch_mode as _dispatch_mode
except ImportError:  # pragma: no cover
    def _dispatch_mode() -> Any:
        return None


def _direct(inputs: List[Optional[torch.Tensor]]) -> bool:
    """Whether the custom op's dispatch would only call _run: plain tensors, no autograd to
    record, no compile / trace / mode active."""
    if _compiling() or torch._C._is_torch_function_mode_enabled() or _dispatch_mode() is not None:
        return False
    grad = torch.is_grad_enabled()
    for t in inputs:
        if t is not None and (type(t) is not torch.Tensor or (grad and t.requires_grad)):
            return False
    return True


def _compiling() -> bool:
    try:
        return torch.compiler.is_compiling()
    except AttributeError:  # older torch
        return False


# ---------------------------------------------------------------- torch.nn.functional names

def elementwise_ops() -> List[Tuple[str, int, int]]:
    """(name, arity, grad mask) of every elementwise op (the EwOp list; bit i of the mask: the op
    is differentiable in operand i)."""
    return list(_C.elementwise_ops())


def _operand(x: Any) -> Any:
    return x if isinstance(x, torch.Tensor) else x  # scalars go into the problem line as numbers


def elementwise(op: str, *operands: Any, param: Optional[Sequence[float]] = None,
                out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """Any elementwise op by name (``add``, ``silu``, ``where`` ...): tensors and Python scalars
    with PyTorch's promotion and broadcasting; ``param`` the op's parameters (elementwise_ops.hpp)."""
    ins = [t if isinstance(t, torch.Tensor) else None for t in operands]
    r = call("elementwise", op=op, operand=[_operand(x) for x in operands], param=param,
             out_dtype=dtype_of(out_dtype) if out_dtype is not None else None, in_=ins)
    return r["out"]


def _cat_dtypes(ts: List[torch.Tensor]) -> Dict[str, Any]:
    """dtype (torch.cat's result type: promote_types over the inputs) and, when the inputs' dtypes
    differ, in_dtypes (each converted input is cast straight into its slice)."""
    dts = [t.dtype for t in ts]
    if builtins.all(dt == dts[0] for dt in dts):
        return {"dtype": dtype_of(dts[0])}
    try:
        result = functools.reduce(torch.promote_types, dts)
    except RuntimeError:  # a pair PyTorch does not promote (fp8): the row refuses it, naming the input
        result = dts[0]
    return {"dtype": dtype_of(result), "in_dtypes": [dtype_of(dt) for dt in dts]}


def cat(tensors: Sequence[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """torch.cat: one launch for up to 128 inputs of the result's dtype (every input has the
    result's rank); inputs of other dtypes promote as PyTorch's (result_type), each cast into its
    slice by one strided copy. Backward: the gradient split into views (cast to a converted
    input's dtype)."""
    ts = list(tensors)
    if not ts:
        raise Error("InvalidProblem", "cat: expected a non-empty list of tensors")
    rank = ts[0].dim()
    d = dim + rank if dim < 0 else dim
    shape = [int(n) for n in ts[0].shape]
    sizes = [int(t.shape[d]) if 0 <= d < t.dim() else 0 for t in ts]
    if 0 <= d < rank:
        shape[d] = builtins.sum(sizes)
    return call("cat", rank=rank, shape=shape, dim=int(dim), sizes=sizes, inputs=ts, **_cat_dtypes(ts))["out"]


def stack(tensors: Sequence[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """torch.stack: the inputs (one shape) along a new axis dim, one launch for up to 128 (mixed
    dtypes promote as in cat)."""
    ts = list(tensors)
    if not ts:
        raise Error("InvalidProblem", "stack: expected a non-empty list of tensors")
    rank = ts[0].dim() + 1
    d = dim + rank if dim < 0 else dim
    shape = [int(n) for n in ts[0].shape]
    shape.insert(builtins.max(0, builtins.min(d, rank - 1)), len(ts))
    return call("cat", rank=rank, shape=shape, dim=int(dim), sizes=[1] * len(ts), stack=True, inputs=ts,
                **_cat_dtypes(ts))["out"]


class _Unfold(torch.autograd.Function):
    """Tensor.unfold's view, with the backward on baracuda's unfold_backward row."""

    @staticmethod
    def forward(ctx: Any, input: torch.Tensor, dimension: int, size: int, step: int) -> torch.Tensor:
        ctx.args = ([int(n) for n in input.shape], int(dimension), int(size), int(step), input.dtype)
        return input.unfold(dimension, size, step)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None, None, None]:
        shape, d, size, step, dt = ctx.args
        g = call("unfold_backward", dtype=dtype_of(dt), rank=len(shape), shape=shape, dim=d, size=size, step=step,
                 grad_out=grad)["grad_input"]
        return g, None, None, None


def unfold(input: torch.Tensor, dimension: int, size: int, step: int) -> torch.Tensor:
    """Tensor.unfold(dimension, size, step): a view of every window of ``size`` elements ``step``
    apart along ``dimension`` (a new last axis); PyTorch's checks. Its gradient sums each
    window's back onto the input (the unfold_backward row: deterministic, one thread per input
    element). A 0-d or rank-8 input (the row takes ranks 1..7: the view adds an axis) keeps
    PyTorch's own backward."""
    if input.dim() == 0 or input.dim() >= 8 or not (input.requires_grad and input.dtype in _UNFOLD_GRAD_DTYPES):
        return input.unfold(dimension, size, step)
    return _Unfold.apply(input, dimension, size, step)


_UNFOLD_GRAD_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def _size(size: Any) -> List[int]:
    if len(size) == 1 and isinstance(size[0], (list, tuple, torch.Size)):
        size = size[0]
    return [int(n) for n in size]


def _fill(dtype: torch.dtype, shape: List[int], **kind: Any) -> torch.Tensor:
    return call("fill", dtype=dtype_of(dtype), rank=len(shape), shape=shape, **kind)["out"]


def full(size: Sequence[int], fill_value: Any, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """torch.full (dtype from fill_value when not given: bool, int64 or float32, as PyTorch)."""
    if dtype is None:
        dtype = torch.bool if isinstance(fill_value, bool) else torch.int64 if isinstance(fill_value, int) else torch.float32
    return _fill(dtype, _size([size]), value=fill_value)


def zeros(*size: Any, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _fill(dtype or torch.float32, _size(size), value=0)


def ones(*size: Any, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _fill(dtype or torch.float32, _size(size), value=1)


def full_like(input: torch.Tensor, fill_value: Any, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _fill(dtype or input.dtype, [int(n) for n in input.shape], value=fill_value)


def zeros_like(input: torch.Tensor, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return full_like(input, 0, dtype=dtype)


def ones_like(input: torch.Tensor, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return full_like(input, 1, dtype=dtype)


def _arange_length(dtype: torch.dtype, start: Any, end: Any, step: Any) -> int:
    """PyTorch's arange length (FillDescriptor::arange's rule): ceil((end - start) / step);
    integer dtypes truncate the bounds first, int64 divides exactly."""
    if dtype.is_floating_point:
        s, e, st = float(start), float(end), float(step)
        if not math.isfinite(s) or not math.isfinite(e):
            raise Error("InvalidProblem", f"arange: unsupported range: {s} -> {e}")
    else:
        s, e, st = int(start), int(end), int(step)
    if st == 0:
        raise Error("InvalidProblem", "arange: step must be nonzero")
    if not ((st > 0 and e >= s) or (st < 0 and e <= s)):
        raise Error("InvalidProblem", "arange: upper bound and larger bound inconsistent with step sign")
    if dtype == torch.int64:
        return abs(e - s + st - (1 if st > 0 else -1)) // abs(st)  # C's truncating division (same signs)
    return int(math.ceil((float(end) - float(start)) / float(step)))


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """torch.arange (int64 when every bound is an integer, else float32; PyTorch's length)."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = torch.int64 if builtins.all(isinstance(v, int) for v in (start, end, step)) else torch.float32
    n = _arange_length(dtype, start, end, step)
    return _fill(dtype, [n], kind="arange", start=start, end=end, step=step)


def linspace(start: float, end: float, steps: int, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _fill(dtype or torch.float32, [int(steps)], kind="linspace", start=start, end=end)


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _fill(dtype or torch.float32, [int(steps)], kind="logspace", start=start, end=end, base=float(base))


def eye(n: int, m: Optional[int] = None, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _fill(dtype or torch.float32, [int(n), int(n if m is None else m)], kind="eye")


def flip(input: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """torch.flip (any strides; autograd: the flip of the gradient)."""
    return call("flip", dtype=dtype_of(input.dtype), rank=input.dim(), shape=[int(n) for n in input.shape],
                dims=[int(d) for d in dims] or None, input=input)["out"]


def roll(input: torch.Tensor, shifts: Any, dims: Any = None) -> torch.Tensor:
    """torch.roll (no dims: the flattened roll; autograd: the roll of the gradient back)."""
    sh = [int(shifts)] if isinstance(shifts, int) else [int(v) for v in shifts]
    dm = [] if dims is None else [int(dims)] if isinstance(dims, int) else [int(d) for d in dims]
    return call("roll", dtype=dtype_of(input.dtype), rank=input.dim(), shape=[int(n) for n in input.shape], shifts=sh,
                dims=dm or None, input=input)["out"]


def _index_dtype(index: torch.Tensor) -> str:
    if index.dtype not in (torch.int32, torch.int64):
        raise Error("InvalidProblem", f"index: dtype {index.dtype} must be int32 or int64")
    return dtype_of(index.dtype)


def _counter(like: torch.Tensor) -> torch.Tensor:
    """The zeroed i64 device counter a count_invalid gather / scatter adds its out-of-range entries to."""
    return torch.zeros(1, dtype=torch.int64, device=like.device)


def _gather(input: torch.Tensor, dim: int, index: torch.Tensor, form: str, wrap: bool = False,
            fill_value: Any = None, bounds: Optional[str] = None, count: bool = False) -> Any:
    """The gather's out; with count, (out, the i64 [1] count of out-of-range index entries)."""
    rank = input.dim()
    d = dim + rank if dim < 0 else dim
    ishape = [int(n) for n in input.shape]
    if form == "slices":
        sshape = list(ishape)
        if 0 <= d < rank:
            sshape[d] = int(index.numel())
        index = index.reshape(-1)
    else:
        sshape = [int(n) for n in index.shape]
    r = call("gather", dtype=dtype_of(input.dtype), index_dtype=_index_dtype(index), form=form, rank=rank, input_shape=ishape or None,
             index_shape=sshape or None, dim=int(dim), bounds=bounds, wrap_negative=wrap or None, fill_value=fill_value,
             count_invalid=True if count else None, input=input, index=index, invalid_count=_counter(input) if count else None)
    return (r["out"], r["invalid_count"]) if count else r["out"]


def gather(input: torch.Tensor, dim: int, index: torch.Tensor, *, fill_value: Any = None, mode: Optional[str] = None) -> torch.Tensor:
    """torch.gather (any strides; autograd: a scatter sum of the gradient). An out-of-range index is
    never read: it gathers ``fill_value`` (0); ``mode="clamp"`` clamps instead (JAX's "clip")."""
    return _gather(input, dim, index, "elements", fill_value=fill_value, bounds=mode)


def take_along_dim(input: torch.Tensor, indices: torch.Tensor, dim: Optional[int] = None) -> torch.Tensor:
    """torch.take_along_dim: input and indices broadcast against each other except along dim
    (stride-0 views, no copy); dim None: over the flattened input."""
    if dim is None:
        return _gather(input.reshape(-1), 0, indices.reshape(-1), "elements")
    rank = input.dim()
    d = dim + rank if dim < 0 else dim
    shape = [builtins.max(int(a), int(b)) for a, b in zip(input.shape, indices.shape)]
    ishape, xshape = list(shape), list(shape)
    ishape[d], xshape[d] = int(indices.shape[d]), int(input.shape[d])
    return _gather(input.expand(xshape), dim, indices.expand(ishape), "elements")


def take(input: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """torch.take: the flattened input at index (negative entries count from the end)."""
    return _gather(input.reshape(-1), 0, index.reshape(-1), "elements", wrap=True).reshape(index.shape)


def index_select(input: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """torch.index_select (16-byte rows where the layout allows; autograd: index_add of the gradient)."""
    return _gather(input, dim, index, "slices")


_REDUCE_NAMES = {None: "none", "add": "sum", "multiply": "prod", "sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax",
                 "amin": "amin"}


def _scatter(self: torch.Tensor, dim: int, index: torch.Tensor, src: Optional[torch.Tensor], form: str, reduce: str = "none",
             value: Any = None, include_self: bool = True, alpha: Any = None, wrap: bool = False,
             preference: Any = None, count: bool = False) -> Any:
    """The scatter's out; with count, (out, the i64 [1] count of out-of-range index entries)."""
    rank = self.dim()
    d = dim + rank if dim < 0 else dim
    tshape = [int(n) for n in self.shape]
    if form == "slices":
        sshape = list(tshape)
        if 0 <= d < rank:
            sshape[d] = int(index.numel())
        index = index.reshape(-1)
    else:
        sshape = [int(n) for n in index.shape]
        if src is not None and list(src.shape) != sshape:  # PyTorch's larger src: the index-shaped corner
            src = src[tuple(slice(0, n) for n in sshape)]
    r = call("scatter", preference=preference, dtype=dtype_of(self.dtype), index_dtype=_index_dtype(index), form=form, rank=rank,
             self_shape=tshape or None, index_shape=sshape or None, dim=int(dim), reduce=reduce,
             include_self=None if include_self else False, src_is_value=True if src is None else None,
             value=value if src is None else None, alpha=alpha, wrap_negative=wrap or None, count_invalid=True if count else None,
             self=self, index=index, src=src, invalid_count=_counter(self) if count else None)
    return (r["out"], r["invalid_count"]) if count else r["out"]


def scatter(input: torch.Tensor, dim: int, index: torch.Tensor, src: Any = None, value: Any = None, *,
            reduce: Optional[str] = None) -> torch.Tensor:
    """torch.scatter (src or value; reduce "add" / "multiply"). Duplicate targets without a reduce:
    one of them wins (PyTorch's rule; the last one under PlanPreference determinism=run_to_run)."""
    if src is not None and not isinstance(src, torch.Tensor):
        src, value = None, src
    return _scatter(input, dim, index, src, "elements", _REDUCE_NAMES[reduce], value=value)


def scatter_add(input: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    return _scatter(input, dim, index, src, "elements", "sum")


def scatter_reduce(input: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor, reduce: str, *,
                   include_self: bool = True) -> torch.Tensor:
    """torch.scatter_reduce: "sum", "prod", "mean", "amax", "amin" (mean is always deterministic)."""
    return _scatter(input, dim, index, src, "elements", _REDUCE_NAMES[reduce], include_self=include_self)


def index_add(input: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *, alpha: Any = 1) -> torch.Tensor:
    return _scatter(input, dim, index, source, "slices", "sum", alpha=None if alpha == 1 else alpha)


def index_copy(input: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    return _scatter(input, dim, index, source, "slices", "none")


def index_fill(input: torch.Tensor, dim: int, index: torch.Tensor, value: Any) -> torch.Tensor:
    return _scatter(input, dim, index, None, "slices", "none", value=value)


def index_reduce(input: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, reduce: str, *,
                 include_self: bool = True) -> torch.Tensor:
    """torch.index_reduce: "prod", "mean", "amax", "amin"."""
    return _scatter(input, dim, index, source, "slices", _REDUCE_NAMES[reduce], include_self=include_self)


def put(input: torch.Tensor, index: torch.Tensor, source: torch.Tensor, accumulate: bool = False) -> torch.Tensor:
    """torch.put: the flattened input written at index (negative entries count from the end)."""
    flat = _scatter(input.reshape(-1), 0, index.reshape(-1), source.reshape(-1), "elements", "sum" if accumulate else "none",
                    wrap=True)
    return flat.reshape(input.shape)


def _mask_call(op: str, input: torch.Tensor, mask: Optional[torch.Tensor] = None, source: Optional[torch.Tensor] = None,
               **fields: Any) -> Dict[str, torch.Tensor]:
    shape = [int(n) for n in input.shape]
    return call("nonzero", op=op, dtype=dtype_of(input.dtype), mask_dtype=None if mask is None else dtype_of(mask.dtype),
                rank=input.dim(), shape=shape or None, input=input, mask=mask, source=source, **fields)


def nonzero_static(input: torch.Tensor, *, size: int, fill_value: int = -1) -> torch.Tensor:
    """torch.nonzero_static: [size, rank] coordinates, rows past the count = fill_value (one launch
    sequence, no host synchronization: graph-capturable)."""
    return _mask_call("nonzero", input, max_count=int(size), fill_value=int(fill_value))["out"]


def nonzero(input: torch.Tensor, *, as_tuple: bool = False) -> Any:
    """torch.nonzero: a counting pass, one host synchronization (as PyTorch's), then exactly
    `count` rows (nonzero_static avoids the synchronization)."""
    count = int(_mask_call("nonzero", input, max_count=0)["count"].item())
    out = _mask_call("nonzero", input, max_count=count)["out"]
    return tuple(out.unbind(1)) if as_tuple else out


def argwhere(input: torch.Tensor) -> torch.Tensor:
    return nonzero(input)


def masked_select(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """torch.masked_select (input and mask broadcast; one host synchronization for the count)."""
    shape = torch.broadcast_shapes(input.shape, mask.shape)
    x, m = input.expand(shape), mask.expand(shape)
    count = int(_mask_call("masked_select", x, m, max_count=0)["count"].item())
    return _mask_call("masked_select", x, m, max_count=count)["out"]


def masked_scatter(input: torch.Tensor, mask: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """torch.masked_scatter: the flagged positions, in order, take source's elements."""
    src = source.reshape(-1)
    return _mask_call("masked_scatter", input, mask.expand(input.shape), src, source_numel=int(src.numel()))["out"]


class _IndexOutOfRange(Error, IndexError):
    """An advanced-indexing entry out of range: a baracuda.Error and, as PyTorch's, an IndexError."""


_Checks = List[Tuple[int, torch.Tensor, int]]


def _advanced(x: torch.Tensor, indices: Sequence[Any]) -> Tuple[torch.Tensor, int, torch.Tensor, List[int], List[int], _Checks]:
    """Advanced indexing as one slices-form index along the span of x's axes from the first
    indexed axis to the last, flattened: (x with the span flattened at `at`, at, the index into
    the span [B·M], B, M, [(axis, index entries, extent)] of the indexed axes). B is the index
    tensors' broadcast shape; M the extents of the span's axes that are not indexed (empty when
    the index tensors are adjacent); entry (b, m) is the span offset of the indexed coordinates
    of b with the other span axes at m. Boolean masks become their nonzero coordinates (one
    synchronization each, as PyTorch's); negative entries count from the end; an entry out of
    range becomes -1, which the ops never dereference (it reads 0, writes nothing, is counted)."""
    idx: List[Optional[torch.Tensor]] = []
    for i in indices:
        if i is None or (isinstance(i, slice) and i == slice(None)):
            idx.append(None)
        elif isinstance(i, torch.Tensor) and i.dtype == torch.bool:
            idx.extend(nonzero(i, as_tuple=True))
        elif isinstance(i, torch.Tensor) and not (i.is_floating_point() or i.is_complex()):
            idx.append(i)
        else:
            raise Error("Unsupported", f"index: entries must be integer or bool tensors or ':' (got {type(i).__name__})")
    if len(idx) > x.dim():
        raise _IndexOutOfRange("InvalidProblem", f"too many indices for tensor of dimension {x.dim()} (got {len(idx)})")
    idx += [None] * (x.dim() - len(idx))
    axes = [a for a, i in enumerate(idx) if i is not None]
    if not axes:
        raise Error("InvalidProblem", "index: no index tensor")
    a0, a1 = axes[0], axes[-1]
    span = [int(n) for n in x.shape[a0:a1 + 1]]
    weight = [1] * len(span)  # the row-major strides of the flattened span
    for k in range(len(span) - 2, -1, -1):
        weight[k] = weight[k + 1] * span[k + 1]
    ts = torch.broadcast_tensors(*[idx[a] for a in axes])
    bshape = [int(n) for n in ts[0].shape]
    lin = torch.zeros(bshape, dtype=torch.int64, device=x.device)
    valid = torch.ones(bshape, dtype=torch.bool, device=x.device)
    checks: _Checks = []
    for a, t in zip(axes, ts):
        n = int(x.shape[a])
        t = t.to(device=x.device, dtype=torch.int64)
        checks.append((a, t, n))
        t = torch.where(t < 0, t + n, t)
        valid &= (t >= 0) & (t < n)
        lin = lin + t * weight[a - a0]
    mids = [a for a in range(a0, a1 + 1) if idx[a] is None]
    if mids:  # index tensors separated by ':': every position of the axes between them too
        off = torch.zeros([], dtype=torch.int64, device=x.device)
        for a in mids:
            off = off.unsqueeze(-1) + torch.arange(int(x.shape[a]), dtype=torch.int64, device=x.device) * weight[a - a0]
        lin = lin.reshape(-1, 1) + off.reshape(1, -1)
        valid = valid.reshape(-1, 1).expand(lin.shape)
    lin = torch.where(valid, lin, torch.full_like(lin, -1))
    return x.flatten(a0, a1), a0, lin.reshape(-1), bshape, [int(x.shape[a]) for a in mids], checks


def _raise_out_of_range(count: torch.Tensor, checks: _Checks) -> None:
    """Raises PyTorch's IndexError when the op counted out-of-range entries (reading the device
    counter is a host synchronization)."""
    if int(count.item()) == 0:
        return
    for a, t, n in checks:
        bad = (t < -n) | (t >= n)
        if bool(bad.any().item()):
            v = int(t[bad].reshape(-1)[0].item())
            raise _IndexOutOfRange("InvalidProblem", f"index {v} is out of bounds for dimension {a} with size {n}")
    raise _IndexOutOfRange("InvalidProblem", "index: an index entry is out of bounds")


def index(x: torch.Tensor, indices: Sequence[Any], *, check_bounds: bool = True) -> torch.Tensor:
    """x[indices] with index tensors, boolean masks and ':' (PyTorch's advanced indexing): one
    index_select along the flattened span of the indexed axes. Index tensors separated by ':'
    put their broadcast dimensions first (PyTorch's rule): a copy of the result when axes come
    before the first indexed one. check_bounds: an out-of-range entry raises IndexError (also a
    baracuda.Error) as PyTorch does, by reading the op's device count of such entries: one host
    synchronization, which CUDA graph capture and torch.compile(fullgraph=True) refuse;
    check_bounds=False skips the read (capturable) and an out-of-range entry reads 0."""
    xm, at, flat, bshape, mshape, checks = _advanced(x, indices)
    if check_bounds:
        out, count = _gather(xm, at, flat, "slices", count=True)
        _raise_out_of_range(count, checks)
    else:
        out = _gather(xm, at, flat, "slices")
    lead, trail = [int(n) for n in xm.shape[:at]], [int(n) for n in xm.shape[at + 1:]]
    out = out.reshape(lead + bshape + mshape + trail)
    if not mshape or not lead:
        return out
    nl, nb = len(lead), len(bshape)  # [lead, B, M, trail] -> PyTorch's [B, lead, M, trail]
    return contiguous(out.permute(list(range(nl, nl + nb)) + list(range(nl)) + list(range(nl + nb, out.dim()))))


def index_put(x: torch.Tensor, indices: Sequence[Any], values: Any, accumulate: bool = False, *,
              check_bounds: bool = True) -> torch.Tensor:
    """x.index_put(indices, values, accumulate): one index_copy (or index_add) into a copy of x
    along the flattened span of the indexed axes; duplicates without accumulate: one of them wins
    (PyTorch's rule). values broadcast to x[indices]'s shape (index tensors separated by ':': the
    broadcast index dimensions first, as PyTorch's). check_bounds as index's: an out-of-range
    entry raises IndexError (reading the device count: one host synchronization); False: it is
    dropped, no read (capturable)."""
    if not builtins.all(i is None or isinstance(i, torch.Tensor) or i == slice(None) for i in indices):
        raise Error("Unsupported", "index_put: entries must be tensors or ':'")
    base = x if x.is_contiguous() else x.contiguous()
    xm, at, flat, bshape, mshape, checks = _advanced(base, indices)
    lead, trail = [int(n) for n in xm.shape[:at]], [int(n) for n in xm.shape[at + 1:]]
    v = values if isinstance(values, torch.Tensor) else torch.tensor(values, dtype=x.dtype, device=x.device)
    v = v.to(device=x.device, dtype=x.dtype)
    if mshape and lead:  # PyTorch's [B, lead, M, trail] -> [lead, B, M, trail] (a view)
        v = v.expand(bshape + lead + mshape + trail)
        nb, nl = len(bshape), len(lead)
        v = v.permute(list(range(nb, nb + nl)) + list(range(nb)) + list(range(nb + nl, v.dim())))
    else:
        v = v.expand(lead + bshape + mshape + trail)
    v = v.reshape(lead + [int(flat.numel())] + trail)  # (any strides: stride 0 where values broadcast)
    reduce = "sum" if accumulate else "none"
    if check_bounds:
        out, count = _scatter(xm, at, flat, v, "slices", reduce, count=True)
        _raise_out_of_range(count, checks)
    else:
        out = _scatter(xm, at, flat, v, "slices", reduce)
    return out.reshape(x.shape)


def _copy(x: torch.Tensor) -> torch.Tensor:
    shape = [int(n) for n in x.shape]
    dt = dtype_of(x.dtype)
    return call("copy", dtype=dt, out_dtype=dt, in_rank=x.dim(), in_shape=shape or None, out_rank=x.dim(),
                out_shape=shape or None, src=x)["dst"]


class _Contiguous(torch.autograd.Function):
    """A contiguous copy of any view by the copy row; the gradient passes through (the view's own
    backward — expand's sum, permute's inverse, narrow's padding — is the view op's)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return _copy(x)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        return g


def contiguous(x: torch.Tensor) -> torch.Tensor:
    """A contiguous copy of any view (strides 0 and negative included), one launch."""
    return _Contiguous.apply(x)


def repeat(input: torch.Tensor, *sizes: Any) -> torch.Tensor:
    """Tensor.repeat: one copy of a stride-0 view [r0, n0, r1, n1, ...]."""
    reps = [int(r) for r in (sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)) else sizes)]
    if len(reps) < input.dim():
        raise Error("InvalidProblem", "repeat: fewer repeats than dimensions")
    x = input.reshape([1] * (len(reps) - input.dim()) + list(input.shape))
    view = x.reshape([v for n in x.shape for v in (1, int(n))]).expand([v for r, n in zip(reps, x.shape) for v in (r, int(n))])
    return contiguous(view).reshape([r * int(n) for r, n in zip(reps, x.shape)])


def tile(input: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    d = [int(v) for v in dims]
    return repeat(input, [1] * (input.dim() - len(d)) + d)


def repeat_interleave(input: torch.Tensor, repeats: Any, dim: Optional[int] = None) -> torch.Tensor:
    """torch.repeat_interleave: int repeats — one copy of a stride-0 view; tensor repeats — an
    index_select by the cumulative counts (one synchronization for the length, as PyTorch's)."""
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else (dim + x.dim() if dim < 0 else dim)
    if isinstance(repeats, int) or (isinstance(repeats, torch.Tensor) and repeats.numel() == 1 and x.shape[d] != 1):
        r = int(repeats)
        shape = list(x.shape)
        view = x.unsqueeze(d + 1).expand(shape[:d + 1] + [r] + shape[d + 1:])
        return contiguous(view).reshape(shape[:d] + [shape[d] * r] + shape[d + 1:])
    reps = repeats.to(device=x.device, dtype=torch.int64)
    ends = cumsum(reps, 0)
    total = int(ends[-1].item()) if ends.numel() else 0
    marks = scatter_add(zeros(total + 1, dtype=torch.int64), 0, ends, ones_like(ends))
    idx = cumsum(marks[:total], 0)  # output position -> its source entry
    return index_select(x, d, idx)


def one_hot(tensor: torch.Tensor, num_classes: int = -1) -> torch.Tensor:
    """F.one_hot: a scatter of 1 into zeros (num_classes = -1: max + 1, one synchronization)."""
    n = int(amax(tensor).item()) + 1 if num_classes < 0 else int(num_classes)
    base = zeros(*(list(tensor.shape) + [n]), dtype=torch.int64)
    return scatter(base, -1, tensor.unsqueeze(-1).to(torch.int64), 1)


def pixel_shuffle(input: torch.Tensor, upscale_factor: int) -> torch.Tensor:
    r = int(upscale_factor)
    *lead, c, h, w = [int(n) for n in input.shape]
    v = input.reshape(lead + [c // (r * r), r, r, h, w])
    k = len(lead)
    v = v.permute(list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2])
    return contiguous(v).reshape(lead + [c // (r * r), h * r, w * r])


def pixel_unshuffle(input: torch.Tensor, downscale_factor: int) -> torch.Tensor:
    r = int(downscale_factor)
    *lead, c, h, w = [int(n) for n in input.shape]
    v = input.reshape(lead + [c, h // r, r, w // r, r])
    k = len(lead)
    v = v.permute(list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3])
    return contiguous(v).reshape(lead + [c * r * r, h // r, w // r])


def narrow_copy(input: torch.Tensor, dim: int, start: int, length: int) -> torch.Tensor:
    return contiguous(input.narrow(dim, start, length))


def movedim(input: torch.Tensor, source: Any, destination: Any) -> torch.Tensor:
    """torch.movedim as a contiguous copy (movedim-with-copy)."""
    return contiguous(torch.movedim(input, source, destination))


def meshgrid(*tensors: torch.Tensor, indexing: str = "ij") -> List[torch.Tensor]:
    """torch.meshgrid as copies (each grid contiguous)."""
    ts = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)
    if indexing == "xy" and len(ts) >= 2:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [int(t.numel()) for t in ts]
    grids = []
    for k, t in enumerate(ts):
        view = [1] * len(ts)
        view[k] = shape[k]
        grids.append(contiguous(t.reshape(view).expand(shape)))
    if indexing == "xy" and len(ts) >= 2:  # (PyTorch's rule: the first two inputs and outputs swapped)
        grids[0], grids[1] = grids[1], grids[0]
    return grids


class _Split(torch.autograd.Function):
    """Views of x along dim: narrow()s of `sizes` that tile the axis in order (split, chunk,
    tensor_split), or every select() (unbind, `unbound`). Backward: the gradients joined by one
    cat (unbind: stack) launch; an output left without a gradient (unused) joins as a stride-0
    zero. As torch.split's views, the outputs refuse in-place changes while autograd records
    them (views made inside an autograd.Function)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int, sizes: Tuple[int, ...], unbound: bool) -> Tuple[torch.Tensor, ...]:
        ctx.set_materialize_grads(False)
        ctx.dim, ctx.sizes, ctx.unbound = dim, sizes, unbound
        ctx.shape, ctx.dtype, ctx.device = [int(n) for n in x.shape], x.dtype, x.device
        if unbound:
            return tuple(x.select(dim, i) for i in range(len(sizes)))
        out, start = [], 0
        for n in sizes:
            out.append(x.narrow(dim, start, n))
            start += n
        return tuple(out)

    @staticmethod
    def backward(ctx: Any, *grads: Optional[torch.Tensor]) -> Tuple[Optional[torch.Tensor], None, None, None]:
        if builtins.all(g is None for g in grads):
            return None, None, None, None
        full = []
        for g, n in zip(grads, ctx.sizes):
            if g is None:
                shape = list(ctx.shape)
                if ctx.unbound:
                    del shape[ctx.dim]
                else:
                    shape[ctx.dim] = n
                g = torch.zeros((), dtype=ctx.dtype, device=ctx.device).expand(shape)
            full.append(g)
        return (stack(full, ctx.dim) if ctx.unbound else cat(full, ctx.dim)), None, None, None


def _views(x: torch.Tensor, d: int, starts: Sequence[int], sizes: Sequence[int]) -> Tuple[torch.Tensor, ...]:
    """x.narrow(d, starts[i], sizes[i]) for every i; through _Split (one cat launch backward) when
    autograd records x and the pieces tile the axis in order, else the views themselves."""
    tiles = starts[0] == 0 and builtins.all(starts[k + 1] == starts[k] + sizes[k] for k in range(len(sizes) - 1)) \
        and starts[-1] + sizes[-1] == int(x.shape[d])
    if tiles and torch.is_grad_enabled() and x.requires_grad and not x.is_complex():
        return _Split.apply(x, d, tuple(int(n) for n in sizes), False)
    return tuple(x.narrow(d, s, n) for s, n in zip(starts, sizes))


def _tiling(sizes: Sequence[int]) -> List[int]:
    starts, at = [], 0
    for n in sizes:
        starts.append(at)
        at += n
    return starts


def split(tensor: torch.Tensor, split_size_or_sections: Any, dim: int = 0) -> Tuple[torch.Tensor, ...]:
    """torch.split: views of tensor along dim, pieces of split_size (the last smaller) or of the
    listed sizes. Backward: the gradients joined by one cat launch (unused pieces as stride-0
    zeros); as torch.split's, the pieces cannot be modified in place while autograd records them."""
    if tensor.dim() == 0:
        raise Error("InvalidProblem", "split expects at least a 1-dimensional tensor")
    d = _wrap_dim(int(dim), tensor.dim())
    n = int(tensor.shape[d])
    if isinstance(split_size_or_sections, (list, tuple, torch.Size)):
        sizes = [int(v) for v in split_size_or_sections]
        if builtins.any(v < 0 for v in sizes):
            raise Error("InvalidProblem", f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                        f"split_sizes={sizes}")
        if builtins.sum(sizes) != n:
            raise Error("InvalidProblem", f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                        f"dimension {d}), but got split_sizes={sizes}")
        if not sizes:
            return ()
    else:
        s = int(split_size_or_sections)
        if s < 0:
            raise Error("InvalidProblem", f"split expects split_size be non-negative, but got split_size={s}")
        if s == 0 and n != 0:
            raise Error("InvalidProblem", f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        count = builtins.max((n + s - 1) // s, 1) if s else 1
        sizes = [s] * count
        sizes[-1] = s - (s * count - n)
    return _views(tensor, d, _tiling(sizes), sizes)


def chunk(input: torch.Tensor, chunks: int, dim: int = 0) -> Tuple[torch.Tensor, ...]:
    """torch.chunk: split into pieces of ceil(size / chunks) (so possibly fewer than chunks)."""
    if input.dim() == 0:
        raise Error("InvalidProblem", "chunk expects at least a 1-dimensional tensor")
    if int(chunks) <= 0:
        raise Error("InvalidProblem", f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(int(dim), input.dim())
    n = int(input.shape[d])
    s = (n + int(chunks) - 1) // int(chunks)
    if s == 0 and n == 0:  # (PyTorch's: `chunks` empty pieces)
        return split(input, [0] * int(chunks), d)
    return split(input, s, d)


def tensor_split(input: torch.Tensor, indices_or_sections: Any, dim: int = 0) -> Tuple[torch.Tensor, ...]:
    """torch.tensor_split: `sections` pieces (the first size % sections one longer), or the pieces
    between the listed indices (Python slice bounds: negative from the end, clamped)."""
    if input.dim() == 0:
        raise Error("InvalidProblem", "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(int(dim), input.dim())
    n = int(input.shape[d])
    arg = indices_or_sections
    if isinstance(arg, torch.Tensor):
        if arg.dim() > 1 or arg.is_floating_point() or arg.dtype == torch.bool:
            raise Error("InvalidProblem", "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                        "one-dimensional tensor of integers")
        arg = int(arg.item()) if arg.dim() == 0 else [int(v) for v in arg.tolist()]
    if isinstance(arg, (list, tuple)):
        bounds = [0] + [int(v) for v in arg] + [n]
        starts, sizes = [], []
        for k in range(len(bounds) - 1):  # at::slice's rule
            s, e = bounds[k], bounds[k + 1]
            s, e = s + n if s < 0 else s, e + n if e < 0 else e
            s = builtins.min(builtins.max(s, 0), n)
            e = builtins.min(builtins.max(e, s), n)
            starts.append(s)
            sizes.append(e - s)
        return _views(input, d, starts, sizes)
    sections = int(arg)
    if sections <= 0:
        raise Error("InvalidProblem", f"number of sections must be larger than 0, got {sections}")
    sizes = [n // sections + (1 if k < n % sections else 0) for k in range(sections)]
    return _views(input, d, _tiling(sizes), sizes)


def unbind(input: torch.Tensor, dim: int = 0) -> Tuple[torch.Tensor, ...]:
    """torch.unbind: the views input.select(dim, i). Backward: the gradients joined by one stack
    launch (unused ones as stride-0 zeros)."""
    if input.dim() == 0:
        raise _IndexOutOfRange("InvalidProblem", "Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(int(dim), input.dim())
    n = int(input.shape[d])
    if n and torch.is_grad_enabled() and input.requires_grad and not input.is_complex():
        return _Split.apply(input, d, (1,) * n, True)
    return tuple(input.select(d, i) for i in range(n))


def diagonal(input: torch.Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> torch.Tensor:
    """torch.diagonal as a copy (diagonal_copy)."""
    return contiguous(torch.diagonal(input, offset, dim1, dim2))


def _wrap_dim(dim: int, rank: int) -> int:
    """dim in [-rank, rank) as PyTorch wraps it (IndexError otherwise; a 0-d tensor counts as 1-d)."""
    r = builtins.max(rank, 1)
    if not -r <= dim < r:
        raise _IndexOutOfRange("InvalidProblem", f"Dimension out of range (expected to be in range of [{-r}, {r - 1}], but got {dim})")
    return dim + r if dim < 0 else dim


def diag_embed(input: torch.Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> torch.Tensor:
    """torch.diag_embed: the last axis placed on the offset diagonal of the (dim1, dim2) planes of a
    new tensor (the other axes: input's leading ones, in order). One index_copy into zeros of the
    result's (contiguous) shape, along the flattened span of its axes dim1 .. dim2 (every position
    of the axes between them too); autograd: a gather of the diagonal."""
    rank = input.dim() + 1
    d1, d2 = _wrap_dim(int(dim1), rank), _wrap_dim(int(dim2), rank)
    if d1 == d2:
        raise Error("InvalidProblem", f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = int(offset)
    n = int(input.shape[-1])
    m = n + builtins.abs(offset)
    lead = [int(v) for v in input.shape[:-1]]
    a0, a1 = builtins.min(d1, d2), builtins.max(d1, d2)
    shape = list(lead)
    shape.insert(a0, m)
    shape.insert(a1, m)
    if n == 0 or math.prod(shape) == 0:  # (nothing on the diagonal)
        return torch.zeros(shape, dtype=input.dtype, device=input.device)
    mids = shape[a0 + 1:a1]
    count = math.prod(mids)
    # the span [m, mids..., m] flattened: its first axis weighs count·m, its last 1, the mids' positions q·m
    w1, w2 = (count * m, 1) if d1 < d2 else (1, count * m)
    i = arange(n, dtype=torch.int64)
    pos = (i + builtins.max(-offset, 0)) * w1 + (i + builtins.max(offset, 0)) * w2
    if mids:
        pos = (pos.reshape(-1, 1) + arange(count, dtype=torch.int64).reshape(1, -1) * m).reshape(-1)
    src = input.movedim(-1, a0).reshape(lead[:a0] + [n * count] + lead[a0 + len(mids):])  # [before, n, mids, after]
    base = zeros(*shape, dtype=input.dtype)
    return index_copy(base.flatten(a0, a1), a0, pos, src).reshape(shape)


def diag(input: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    if input.dim() == 1:
        return diag_embed(input, diagonal)
    return contiguous(torch.diagonal(input, diagonal))


def tril(input: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    """torch.tril (any batch, any strides; autograd: tril of the gradient)."""
    return call("triangle", dtype=dtype_of(input.dtype), rank=input.dim(), shape=[int(n) for n in input.shape],
                diagonal=int(diagonal), input=input)["out"]


def triu(input: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    return call("triangle", dtype=dtype_of(input.dtype), rank=input.dim(), shape=[int(n) for n in input.shape],
                diagonal=int(diagonal), upper=True, input=input)["out"]


def _tri_count(row: int, col: int, offset: int, upper: bool) -> int:
    if upper:
        return builtins.sum(builtins.max(0, col - builtins.max(0, i + offset)) for i in range(row))
    return builtins.sum(builtins.min(col, builtins.max(0, i + offset + 1)) for i in range(row))


def tril_indices(row: int, col: int, offset: int = 0) -> torch.Tensor:
    """torch.tril_indices: [2, count] row-major coordinates (no synchronization: the count is known)."""
    mask = tril(ones(row, col, dtype=torch.bool), offset)
    return contiguous(nonzero_static(mask, size=_tri_count(row, col, offset, False)).t())


def triu_indices(row: int, col: int, offset: int = 0) -> torch.Tensor:
    mask = triu(ones(row, col, dtype=torch.bool), offset)
    return contiguous(nonzero_static(mask, size=_tri_count(row, col, offset, True)).t())


def pad(input: torch.Tensor, pad: Sequence[int], mode: str = "constant", value: Optional[float] = None) -> torch.Tensor:
    """torch.nn.functional.pad: ``pad`` pairs from the last dimension backwards."""
    rank = input.dim()
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise Error("InvalidProblem", f"pad: {len(pad)} padding values for a rank-{rank} input")
    low = [0] * rank
    high = [0] * rank
    for i in range(len(pad) // 2):
        low[rank - 1 - i] = int(pad[2 * i])
        high[rank - 1 - i] = int(pad[2 * i + 1])
    return call("pad", dtype=dtype_of(input.dtype), mode=mode, rank=rank, in_shape=list(input.shape), pad_low=low,
                pad_high=high, value=0.0 if value is None else value, x=input)["y"]


def embedding(input: torch.Tensor, weight: torch.Tensor, padding_idx: Optional[int] = None,
              max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> torch.Tensor:
    """torch.nn.functional.embedding (max_norm and sparse gradients are not supported)."""
    if max_norm is not None or sparse:
        raise Error("Unsupported", "embedding: max_norm and sparse gradients are not supported")
    num, dim = weight.shape
    r = call("embedding", dtype=dtype_of(weight.dtype), index_dtype=dtype_of(input.dtype), num_embeddings=num,
             embedding_dim=dim, num_indices=input.numel(), padding_idx=padding_idx,
             scale_grad_by_freq=scale_grad_by_freq, weight=weight, indices=input.reshape(-1))
    return r["out"].reshape(*input.shape, dim)


def embedding_bag(input: torch.Tensor, weight: torch.Tensor, offsets: Optional[torch.Tensor] = None,
                  max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights: Optional[torch.Tensor] = None,
                  include_last_offset: bool = False, padding_idx: Optional[int] = None) -> torch.Tensor:
    """torch.nn.functional.embedding_bag (1-D input with offsets, or 2-D input of fixed bags)."""
    if max_norm is not None or sparse or scale_grad_by_freq:
        raise Error("Unsupported", "embedding_bag: max_norm, sparse and scale_grad_by_freq are not supported")
    num, dim = weight.shape
    kw: Dict[str, Any] = dict(dtype=dtype_of(weight.dtype), index_dtype=dtype_of(input.dtype), num_embeddings=num,
                              embedding_dim=dim, mode=mode, include_last_offset=include_last_offset,
                              padding_idx=padding_idx, weight=weight, per_sample_weights=per_sample_weights)
    if input.dim() == 2:
        kw.update(num_bags=input.shape[0], bag_size=input.shape[1], num_indices=input.numel(), indices=input.reshape(-1))
        if per_sample_weights is not None:
            kw["per_sample_weights"] = per_sample_weights.reshape(-1)
    else:
        if offsets is None:
            raise Error("InvalidProblem", "embedding_bag: a 1-D input needs offsets")
        bags = offsets.numel() - (1 if include_last_offset else 0)
        if offsets.dtype != input.dtype:
            offsets = offsets.to(input.dtype)  # PyTorch requires them equal too; one index dtype here
        kw.update(num_bags=bags, num_indices=input.numel(), indices=input, offsets=offsets)
    return call("embedding_bag", **kw)["out"]


def linear(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """torch.nn.functional.linear: input [..., in] @ weight[out, in]^T + bias."""
    lead = input.shape[:-1]
    x = input.reshape(-1, input.shape[-1])
    out = torch.empty(x.shape[0], weight.shape[0], dtype=input.dtype, device="meta")
    r = call("gemm", a=x, b=weight, transpose_b=True, out=out, has_bias=bias is not None,
             bias=bias)
    return r["out"].reshape(*lead, weight.shape[0])


def rope(q: torch.Tensor, k: torch.Tensor, *, cos: Optional[torch.Tensor] = None, sin: Optional[torch.Tensor] = None,
         positions: Optional[torch.Tensor] = None, **fields: Any) -> Tuple[torch.Tensor, torch.Tensor]:
    """Rotary embedding of q and k (the rope descriptor's fields as keywords: layout, pairing,
    base, rotary_dim, ...); returns (q_out, k_out)."""
    r = call("rope", q=q, k=k, cos=cos, sin=sin, positions=positions, dtype=dtype_of(q.dtype), **fields)
    return r["q_out"], r["k_out"]


def causal_conv1d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                  activation: Optional[str] = None) -> torch.Tensor:
    """Depthwise causal conv1d over x [batch, channels, seq] with weight [channels, width]
    (the causal-conv1d package's ``causal_conv1d_fn``; activation None / "silu" / "swish")."""
    b, c, l = x.shape
    act = "none" if activation is None else ("silu" if activation == "swish" else activation)
    st = x.stride()
    layout = "bcl" if st[2] == 1 or l <= 1 else "blc"
    r = call("causal_conv1d", dtype=dtype_of(x.dtype), weight_dtype=dtype_of(weight.dtype), layout=layout, batch=b,
             channels=c, seq=l, width=weight.shape[1], has_bias=bias is not None, activation=act, x=x, weight=weight,
             bias=bias)
    return r["y"]


# ---------------------------------------------------------------- reductions (the reduce row)

def _reduce(op: str, input: torch.Tensor, dim: Any, keepdim: bool, out: Optional[torch.dtype] = None,
            **extra: Any) -> Dict[str, torch.Tensor]:
    rank = input.dim()
    dims = [] if dim is None else ([int(dim)] if isinstance(dim, int) else [int(d) for d in dim])
    return call("reduce", op=op, dtype=dtype_of(input.dtype), rank=rank, shape=[int(n) for n in input.shape],
                num_dims=len(dims), dims=dims if dims else None, keepdim=keepdim,
                out_dtype=dtype_of(out) if out is not None else None, x=input, **extra)


def sum(input: torch.Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """torch.sum (integer and bool inputs sum into int64)."""
    return _reduce("sum", input, dim, keepdim, dtype)["y"]


def nansum(input: torch.Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _reduce("nansum", input, dim, keepdim, dtype)["y"]


def mean(input: torch.Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _reduce("mean", input, dim, keepdim, dtype)["y"]


def nanmean(input: torch.Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _reduce("nanmean", input, dim, keepdim, dtype)["y"]


def prod(input: torch.Tensor, dim: Optional[int] = None, keepdim: bool = False, *,
         dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _reduce("prod", input, dim, keepdim, dtype)["y"]


def _all_if_empty(dim: Any) -> Any:
    """amax / amin's dim: () (PyTorch's default) reduces every axis; 0 is axis 0."""
    return None if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0) else dim


def amax(input: torch.Tensor, dim: Any = (), keepdim: bool = False) -> torch.Tensor:
    return _reduce("amax", input, _all_if_empty(dim), keepdim)["y"]


def amin(input: torch.Tensor, dim: Any = (), keepdim: bool = False) -> torch.Tensor:
    return _reduce("amin", input, _all_if_empty(dim), keepdim)["y"]


def all(input: torch.Tensor, dim: Any = None, keepdim: bool = False) -> torch.Tensor:
    return _reduce("all", input, dim, keepdim)["y"]


def any(input: torch.Tensor, dim: Any = None, keepdim: bool = False) -> torch.Tensor:
    return _reduce("any", input, dim, keepdim)["y"]


def count_nonzero(input: torch.Tensor, dim: Any = None) -> torch.Tensor:
    return _reduce("count_nonzero", input, dim, False)["y"]


def logsumexp(input: torch.Tensor, dim: Any, keepdim: bool = False) -> torch.Tensor:
    return _reduce("logsumexp", input, dim, keepdim)["y"]


def vector_norm(x: torch.Tensor, ord: float = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """torch.linalg.vector_norm."""
    return _reduce("norm", x, dim, keepdim, dtype, p=float(ord))["y"]


def var(input: torch.Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> torch.Tensor:
    return _reduce("var", input, dim, keepdim, correction=float(correction))["y"]


def std(input: torch.Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> torch.Tensor:
    return _reduce("std", input, dim, keepdim, correction=float(correction))["y"]


def argmax(input: torch.Tensor, dim: Optional[int] = None, keepdim: bool = False) -> torch.Tensor:
    return _reduce("argmax", input, dim, keepdim)["indices"]


def argmin(input: torch.Tensor, dim: Optional[int] = None, keepdim: bool = False) -> torch.Tensor:
    return _reduce("argmin", input, dim, keepdim)["indices"]


def max(input: torch.Tensor, dim: int, keepdim: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """torch.max(input, dim): (values, indices)."""
    r = _reduce("max", input, dim, keepdim)
    return r["y"], r["indices"]


def min(input: torch.Tensor, dim: int, keepdim: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """torch.min(input, dim): (values, indices)."""
    r = _reduce("min", input, dim, keepdim)
    return r["y"], r["indices"]


def var_mean(input: torch.Tensor, dim: Any = None, *, correction: float = 1,
             keepdim: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """torch.var_mean: (var, mean) in one pass (autograd through reduce_backward: both gradients)."""
    r = _reduce("var_mean", input, dim, keepdim, correction=float(correction))
    return r["y"], r["y2"]


def std_mean(input: torch.Tensor, dim: Any = None, *, correction: float = 1,
             keepdim: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """torch.std_mean: (std, mean) in one pass (autograd through reduce_backward: both gradients)."""
    r = _reduce("std_mean", input, dim, keepdim, correction=float(correction))
    return r["y"], r["y2"]


def aminmax(input: torch.Tensor, *, dim: Optional[int] = None, keepdim: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """torch.aminmax: (min, max) in one pass."""
    r = _reduce("aminmax", input, dim, keepdim)
    return r["y"], r["y2"]


# ---------------------------------------------------------------- scans (the scan row)

def _scan(op: str, input: torch.Tensor, dim: int, out: Optional[torch.dtype] = None, **extra: Any) -> Dict[str, torch.Tensor]:
    return call("scan", op=op, dtype=dtype_of(input.dtype), rank=input.dim(), shape=[int(n) for n in input.shape],
                dim=int(dim), out_dtype=dtype_of(out) if out is not None else None, x=input, **extra)


def cumsum(input: torch.Tensor, dim: int, *, dtype: Optional[torch.dtype] = None, reverse: bool = False,
           exclusive: bool = False) -> torch.Tensor:
    """torch.cumsum (integer and bool inputs into int64); reverse / exclusive: jax.lax's forms."""
    return _scan("cumsum", input, dim, dtype, reverse=reverse, exclusive=exclusive)["y"]


def cumprod(input: torch.Tensor, dim: int, *, dtype: Optional[torch.dtype] = None, reverse: bool = False,
            exclusive: bool = False) -> torch.Tensor:
    return _scan("cumprod", input, dim, dtype, reverse=reverse, exclusive=exclusive)["y"]


def cummax(input: torch.Tensor, dim: int, *, reverse: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """torch.cummax: (values, indices), ties to the last index as PyTorch's."""
    r = _scan("cummax", input, dim, reverse=reverse)
    return r["y"], r["indices"]


def cummin(input: torch.Tensor, dim: int, *, reverse: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    r = _scan("cummin", input, dim, reverse=reverse)
    return r["y"], r["indices"]


def logcumsumexp(input: torch.Tensor, dim: int, *, reverse: bool = False, exclusive: bool = False) -> torch.Tensor:
    return _scan("logcumsumexp", input, dim, reverse=reverse, exclusive=exclusive)["y"]


# ---------------------------------------------------------------- softmax and norms (the row families)

def _softmax(op: str, input: torch.Tensor, dim: int, dtype: Optional[torch.dtype], mask: Optional[torch.Tensor],
             causal: bool, diagonal: int, masked_rows: str) -> torch.Tensor:
    if mask is not None:
        mask = mask.expand(input.shape)  # a broadcast mask as stride-0 axes (no copy)
    return call("softmax", op=op, dtype=dtype_of(input.dtype), out_dtype=dtype_of(dtype) if dtype is not None else None,
                rank=input.dim(), shape=[int(n) for n in input.shape], dim=int(dim),
                mask_dtype=dtype_of(mask.dtype) if mask is not None else None, causal=bool(causal),
                diagonal=int(diagonal), masked_rows=masked_rows, x=input, mask=mask)["y"]


def softmax(input: torch.Tensor, dim: int, *, dtype: Optional[torch.dtype] = None, mask: Optional[torch.Tensor] = None,
            causal: bool = False, diagonal: int = 0, masked_rows: str = "nan") -> torch.Tensor:
    """F.softmax (dtype: f32 for an f16 / bf16 input, PyTorch's half-to-float form), with the masked
    forms: ``mask`` broadcastable to input (bool: keep where True, as ``masked_fill(~mask, -inf)``;
    float: added), ``causal`` (entry k of query q kept while k <= q + diagonal, the query axis
    being the one before ``dim``), ``masked_rows`` "nan" (torch.softmax of a fully masked line)
    or "zero" (0 and a zero gradient, as torch._masked_softmax)."""
    return _softmax("softmax", input, dim, dtype, mask, causal, diagonal, masked_rows)


def log_softmax(input: torch.Tensor, dim: int, *, dtype: Optional[torch.dtype] = None, mask: Optional[torch.Tensor] = None,
                causal: bool = False, diagonal: int = 0, masked_rows: str = "nan") -> torch.Tensor:
    return _softmax("log_softmax", input, dim, dtype, mask, causal, diagonal, masked_rows)


def softmin(input: torch.Tensor, dim: int, *, dtype: Optional[torch.dtype] = None, mask: Optional[torch.Tensor] = None,
            causal: bool = False, diagonal: int = 0, masked_rows: str = "nan") -> torch.Tensor:
    return _softmax("softmin", input, dim, dtype, mask, causal, diagonal, masked_rows)


def _norm(op: str, input: torch.Tensor, normalized_shape: Sequence[int], weight: Optional[torch.Tensor],
          bias: Optional[torch.Tensor], eps: Optional[float], residual: Optional[torch.Tensor]) -> Dict[str, torch.Tensor]:
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    param = weight if weight is not None else bias
    # weight / bias / residual: a tensor sets the descriptor's flag and binds the operand; False clears it
    return call("norm", op=op, dtype=dtype_of(input.dtype),
                param_dtype=dtype_of(param.dtype) if param is not None else None, rank=input.dim(),
                shape=[int(n) for n in input.shape], norm_dims=k, weight=weight if weight is not None else False,
                bias=bias if bias is not None else False, residual=residual if residual is not None else False,
                eps=float(eps) if eps is not None else None, x=input)


def layer_norm(input: torch.Tensor, normalized_shape: Sequence[int], weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, eps: float = 1e-5) -> torch.Tensor:
    """F.layer_norm (autograd through norm_backward: dx, dweight, dbias)."""
    return _norm("layer_norm", input, normalized_shape, weight, bias, eps, None)["y"]


def rms_norm(input: torch.Tensor, normalized_shape: Sequence[int], weight: Optional[torch.Tensor] = None,
             eps: Optional[float] = None) -> torch.Tensor:
    """F.rms_norm (eps None: the machine epsilon of input's dtype, as PyTorch)."""
    return _norm("rms_norm", input, normalized_shape, weight, None, eps, None)["y"]


def _channel_norm(op: str, input: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                  running_mean: Optional[torch.Tensor], running_var: Optional[torch.Tensor], training: bool,
                  momentum: float, eps: float, groups: int = 1) -> torch.Tensor:
    param = next((t for t in (weight, bias, running_mean) if t is not None), None)
    running = running_mean is not None
    r = call("channel_norm", op=op, dtype=dtype_of(input.dtype), param_dtype=dtype_of(param.dtype) if param is not None else None,
             rank=input.dim(), shape=[int(n) for n in input.shape], groups=int(groups),
             weight=weight if weight is not None else False, bias=bias if bias is not None else False,
             running_stats=running, training=bool(training), momentum=float(momentum), eps=float(eps), x=input,
             running_mean=running_mean, running_var=running_var)
    if running and training:  # the op is functional: its updated running stats are copied back
        with torch.no_grad():
            running_mean.copy_(r["running_mean"])
            running_var.copy_(r["running_var"])
    return r["y"]


def batch_norm(input: torch.Tensor, running_mean: Optional[torch.Tensor], running_var: Optional[torch.Tensor],
               weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> torch.Tensor:
    """F.batch_norm (NCHW or channels_last; the running stats updated in place when training)."""
    return _channel_norm("batch_norm", input, weight, bias, running_mean, running_var, training or running_mean is None,
                         momentum, eps)


def group_norm(input: torch.Tensor, num_groups: int, weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, eps: float = 1e-5) -> torch.Tensor:
    """F.group_norm."""
    return _channel_norm("group_norm", input, weight, bias, None, None, True, 0.1, eps, num_groups)


def instance_norm(input: torch.Tensor, running_mean: Optional[torch.Tensor] = None,
                  running_var: Optional[torch.Tensor] = None, weight: Optional[torch.Tensor] = None,
                  bias: Optional[torch.Tensor] = None, use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-5) -> torch.Tensor:
    """F.instance_norm (running stats: averaged over the batch, as PyTorch's)."""
    return _channel_norm("instance_norm", input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps)


def normalize(input: torch.Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> torch.Tensor:
    """F.normalize: input / max(||input||_p, eps) along dim (p > 0, inf allowed)."""
    return call("normalize", op="normalize", dtype=dtype_of(input.dtype), rank=input.dim(), shape=[int(n) for n in input.shape],
                dim=int(dim), p=float(p), eps=float(eps), input=input)["output"]


def weight_norm(v: torch.Tensor, g: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """torch._weight_norm: g · v / ||v|| with the norm over every axis but dim (0 or the last);
    g has v's rank with 1 on every other axis (nn.utils.weight_norm's weight_g)."""
    return call("normalize", op="weight_norm", dtype=dtype_of(v.dtype), rank=v.dim(), shape=[int(n) for n in v.shape], dim=int(dim),
                input=v, g=g)["output"]


def local_response_norm(input: torch.Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> torch.Tensor:
    """F.local_response_norm: input / (k + alpha / size · Σ x² over size neighbouring channels)^beta."""
    return call("local_response_norm", dtype=dtype_of(input.dtype), rank=input.dim(), shape=[int(n) for n in input.shape],
                size=int(size), alpha=float(alpha), beta=float(beta), k=float(k), input=input)["output"]


# ---------------------------------------------------------------- losses

def cross_entropy(input: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor] = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0, *, z_loss: float = 0.0) -> torch.Tensor:
    """F.cross_entropy: class indices (an integer target) or class probabilities (a float target of
    input's shape); ``z_loss`` adds PaLM's z_loss · logsumexp² per sample (not in PyTorch)."""
    prob = target.is_floating_point()
    return call("cross_entropy", op="cross_entropy", dtype=dtype_of(input.dtype),
                index_dtype=None if prob else dtype_of(target.dtype), target_kind="probability" if prob else "index",
                rank=input.dim(), shape=[int(n) for n in input.shape], weight=weight if weight is not None else False,
                ignore_index=int(ignore_index), label_smoothing=float(label_smoothing), reduction=reduction,
                z_loss=float(z_loss), input=input, target=target)["loss"]


def nll_loss(input: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor] = None, ignore_index: int = -100,
             reduction: str = "mean") -> torch.Tensor:
    """F.nll_loss (input: log-probabilities)."""
    return call("cross_entropy", op="nll_loss", dtype=dtype_of(input.dtype), index_dtype=dtype_of(target.dtype),
                rank=input.dim(), shape=[int(n) for n in input.shape], weight=weight if weight is not None else False,
                ignore_index=int(ignore_index), reduction=reduction, input=input, target=target)["loss"]


def fused_linear_cross_entropy(input: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
                               bias: Optional[torch.Tensor] = None, *, ce_weight: Optional[torch.Tensor] = None,
                               ignore_index: int = -100, label_smoothing: float = 0.0, reduction: str = "mean",
                               z_loss: float = 0.0, chunk_tokens: int = 0) -> torch.Tensor:
    """cross_entropy(F.linear(input, weight, bias), target) without the [tokens, classes] logits
    (Liger's fused linear cross entropy): input [tokens, hidden], weight [classes, hidden]. The
    gradients of input, weight and bias are formed in the forward (when any of them requires
    grad) and scaled by the incoming gradient in the backward; reduction mean or sum."""
    grad = torch.is_grad_enabled() and builtins.any(t is not None and t.requires_grad for t in (input, weight, bias))
    return call("fused_linear_cross_entropy", input=input, weight=weight, bias=bias if bias is not None else False,
                index_dtype=dtype_of(target.dtype), ce_weight=ce_weight if ce_weight is not None else False,
                ignore_index=int(ignore_index), label_smoothing=float(label_smoothing), reduction=reduction,
                z_loss=float(z_loss), compute_grad=bool(grad), chunk_tokens=int(chunk_tokens), target=target)["loss"]


def _pointwise_loss(op: str, input: torch.Tensor, target: torch.Tensor, reduction: str, **kw: Any) -> torch.Tensor:
    """An element-wise loss: every operand broadcast to input's shape (stride-0 views, no copy)."""
    shape = input.shape
    ops = {k: (v.expand(shape) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    for flag in ("weight", "pos_weight"):
        if flag in ops and ops[flag] is None:
            ops[flag] = False
    return call("pointwise_loss", op=op, dtype=dtype_of(input.dtype), rank=input.dim(), shape=[int(n) for n in shape],
                reduction=reduction, input=input, target=target.expand(shape), **ops)["loss"]


def mse_loss(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    return _pointwise_loss("mse", input, target, reduction)


def l1_loss(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    return _pointwise_loss("l1", input, target, reduction)


def smooth_l1_loss(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean", beta: float = 1.0) -> torch.Tensor:
    return _pointwise_loss("smooth_l1", input, target, reduction, beta=float(beta))


def huber_loss(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean", delta: float = 1.0) -> torch.Tensor:
    return _pointwise_loss("huber", input, target, reduction, delta=float(delta))


def binary_cross_entropy(input: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor] = None,
                         reduction: str = "mean") -> torch.Tensor:
    return _pointwise_loss("binary_cross_entropy", input, target, reduction, weight=weight)


def binary_cross_entropy_with_logits(input: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor] = None,
                                     reduction: str = "mean", pos_weight: Optional[torch.Tensor] = None) -> torch.Tensor:
    return _pointwise_loss("binary_cross_entropy_with_logits", input, target, reduction, weight=weight, pos_weight=pos_weight)


def kl_div(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean", log_target: bool = False) -> torch.Tensor:
    return _pointwise_loss("kl_div", input, target, reduction, log_target=bool(log_target))


def poisson_nll_loss(input: torch.Tensor, target: torch.Tensor, log_input: bool = True, full: bool = False,
                     eps: float = 1e-8, reduction: str = "mean") -> torch.Tensor:
    return _pointwise_loss("poisson_nll", input, target, reduction, log_input=bool(log_input), full=bool(full), eps=float(eps))


def gaussian_nll_loss(input: torch.Tensor, target: torch.Tensor, var: torch.Tensor, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> torch.Tensor:
    """F.gaussian_nll_loss (a var of input's shape without its last axis gains it, as PyTorch's)."""
    if var.dim() == input.dim() - 1 and var.shape == input.shape[:-1]:
        var = var.unsqueeze(-1)
    return _pointwise_loss("gaussian_nll", input, target, reduction, var=var, full=bool(full), eps=float(eps))


def soft_margin_loss(input: torch.Tensor, target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    return _pointwise_loss("soft_margin", input, target, reduction)


def hinge_embedding_loss(input: torch.Tensor, target: torch.Tensor, margin: float = 1.0, reduction: str = "mean") -> torch.Tensor:
    return _pointwise_loss("hinge_embedding", input, target, reduction, margin=float(margin))


def margin_ranking_loss(input1: torch.Tensor, input2: torch.Tensor, target: torch.Tensor, margin: float = 0.0,
                        reduction: str = "mean") -> torch.Tensor:
    return _pointwise_loss("margin_ranking", input1, target, reduction, input2=input2, margin=float(margin))


def multilabel_soft_margin_loss(input: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor] = None,
                                reduction: str = "mean") -> torch.Tensor:
    return call("row_loss", op="multilabel_soft_margin", dtype=dtype_of(input.dtype), rank=input.dim(),
                shape=[int(n) for n in input.shape], reduction=reduction, weight=weight if weight is not None else False,
                input=input, target=target.to(input.dtype))["loss"]


def cosine_embedding_loss(input1: torch.Tensor, input2: torch.Tensor, target: torch.Tensor, margin: float = 0.0,
                          reduction: str = "mean") -> torch.Tensor:
    """F.cosine_embedding_loss (target 1 / -1, taken in the inputs' dtype)."""
    return call("row_loss", op="cosine_embedding", dtype=dtype_of(input1.dtype), rank=input1.dim(),
                shape=[int(n) for n in input1.shape], reduction=reduction, margin=float(margin), input1=input1, input2=input2,
                target=target.to(input1.dtype))["loss"]


def triplet_margin_loss(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: str = "mean") -> torch.Tensor:
    return call("row_loss", op="triplet_margin", dtype=dtype_of(anchor.dtype), rank=anchor.dim(),
                shape=[int(n) for n in anchor.shape], reduction=reduction, margin=float(margin), p=float(p), eps=float(eps),
                swap=bool(swap), anchor=anchor, positive=positive, negative=negative)["loss"]


def ctc_loss(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> torch.Tensor:
    """F.ctc_loss: log_probs [T, N, C] (or [T, C]), targets padded [N, S] or concatenated [Σ target_lengths];
    lengths as tensors or sequences of ints (moved to log_probs' device in targets' integer dtype). The
    gradient is PyTorch's (for log_probs that come from a log_softmax). Concatenated targets read the
    target lengths on the host (their maximum sizes the workspace), as PyTorch does."""
    dev = log_probs.device
    idx = targets.dtype if targets.dtype in (torch.int32, torch.int64) else torch.int64
    targets = targets.to(device=dev, dtype=idx)
    il = torch.as_tensor(input_lengths, dtype=idx, device=dev)
    tl = torch.as_tensor(target_lengths, dtype=idx, device=dev)
    batched = log_probs.dim() == 3
    T, C = int(log_probs.shape[0]), int(log_probs.shape[-1])
    N = int(log_probs.shape[1]) if batched else 1
    concatenated = batched and targets.dim() == 1
    if concatenated:
        S, total = (int(tl.max()) if tl.numel() else 0), int(targets.shape[0])
    else:
        S, total = int(targets.shape[-1]), 0
    return call("ctc_loss", dtype=dtype_of(log_probs.dtype), index_dtype=dtype_of(idx), batched=batched, T=T, N=N, C=C,
                max_target_length=S, concatenated=concatenated, total_target_length=total, blank=int(blank), reduction=reduction,
                zero_infinity=bool(zero_infinity), log_probs=log_probs, targets=targets, input_lengths=il.reshape(il.shape if batched else ()),
                target_lengths=tl.reshape(tl.shape if batched else ()))["loss"]


# ---------------------------------------------------------------- modules (the stateful ops)

class Linear(torch.nn.Linear):
    """torch.nn.Linear on baracuda's GEMM (same parameters, initialisation and state dict)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return linear(input, self.weight, self.bias)


class Embedding(torch.nn.Embedding):
    """torch.nn.Embedding on baracuda's embedding (max_norm and sparse are refused)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                         self.scale_grad_by_freq, self.sparse)


class EmbeddingBag(torch.nn.EmbeddingBag):
    """torch.nn.EmbeddingBag on baracuda's embedding_bag."""

    def forward(self, input: torch.Tensor, offsets: Optional[torch.Tensor] = None,
                per_sample_weights: Optional[torch.Tensor] = None) -> torch.Tensor:
        return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                             self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)


class CausalConv1d(torch.nn.Module):
    """Depthwise causal conv1d over [batch, channels, seq]: weight [channels, width], optional
    bias, optional SiLU (the causal-conv1d package's module shape)."""

    def __init__(self, channels: int, width: int = 4, bias: bool = True, activation: Optional[str] = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.activation = activation
        self.weight = torch.nn.Parameter(torch.empty(channels, width, **kw))
        self.bias = torch.nn.Parameter(torch.empty(channels, **kw)) if bias else None
        bound = 1.0 / width**0.5  # nn.Conv1d's default for groups == channels (fan_in = width)
        torch.nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            torch.nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return causal_conv1d(x, self.weight, self.bias, self.activation)


class LayerNorm(torch.nn.LayerNorm):
    """torch.nn.LayerNorm on baracuda's norm (same parameters, initialisation and state dict)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


if hasattr(torch.nn, "RMSNorm"):  # PyTorch >= 2.4

    class RMSNorm(torch.nn.RMSNorm):
        """torch.nn.RMSNorm on baracuda's norm."""

        def forward(self, input: torch.Tensor) -> torch.Tensor:
            return rms_norm(input, self.normalized_shape, self.weight, self.eps)
