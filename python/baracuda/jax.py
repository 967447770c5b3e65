"""baracuda ops on JAX arrays, eagerly (DLPack, zero copy).

``call(op, **kw)`` selects the plan like ``baracuda.plan`` (descriptor fields by name; a JAX
array given for a layout field stands for its layout), reads the input arrays in place through
``__dlpack__`` and returns the outputs as new JAX arrays. JAX arrays are immutable, so outputs
and workspace are allocated through PyTorch or CuPy (whichever is installed) and handed to JAX
with ``jax.dlpack.from_dlpack``; the op runs on the allocating library's current stream after
JAX has finished writing the inputs. Under ``jax.jit`` these calls are not traceable yet (an
XLA FFI registration is the next step).

``jax.lax``'s indexing operators, eagerly, with JAX's signatures and semantics:

* ``gather`` and ``scatter`` / ``scatter_add`` / ``scatter_mul`` / ``scatter_min`` /
  ``scatter_max`` (any ``GatherDimensionNumbers`` / ``ScatterDimensionNumbers``, batching
  dimensions included; modes clip, fill / drop, promise_in_bounds) run as baracuda's ``gather`` /
  ``scatter`` rows in the elements form over the flattened operand: one linear index per result
  (gather) or update (scatter) element, computed by a small jitted JAX function.
* ``dynamic_slice`` and ``dynamic_update_slice`` run as baracuda's ``copy`` row on strided
  views (no index array).

Inputs JAX owns stay referenced until the stream that reads them has passed the launch (an
event per launch, polled at the next one), so a temporary argument is not recycled by JAX's
allocator while the kernel still reads it.
"""
from __future__ import annotations

import collections
import functools
import math
from typing import Any, Callable, Dict, List, NamedTuple, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import Error, fields as _fields, problem_line, select, _pref_line, _contiguous, _dtype_name

__all__ = [
    "call", "gather", "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max", "dynamic_slice",
    "dynamic_update_slice",
]


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
    _hold(list(views.values()))
    return {k: jax.dlpack.from_dlpack(t) for k, t in outs.items()}


# ---------------------------------------------------------------- launches on views

@functools.lru_cache(maxsize=1)
def _backend() -> Tuple[Callable[..., Any], Callable[[], int], Callable[[Any], Any], Callable[[], Callable[[], bool]]]:
    """(empty, current stream, alias, event) of the library ``_allocator`` picked: alias(x) is a
    zero-copy torch / CuPy array over a JAX array's buffer (its slices and reshapes are offset,
    strided views, which DLPack of a JAX array cannot express); event() records an event on the
    current stream and returns its "done?" poll."""
    empty, stream = _allocator()
    try:
        import torch

        def alias(x: Any) -> Any:
            return torch.from_dlpack(x)

        def event() -> Callable[[], bool]:
            e = torch.cuda.Event()
            e.record()
            return e.query
    except ImportError:
        import cupy

        def alias(x: Any) -> Any:
            return cupy.from_dlpack(x)

        def event() -> Callable[[], bool]:
            e = cupy.cuda.Event()
            e.record()
            return lambda: bool(e.done)
    return empty, stream, alias, event


# (done?, objects): what a launch reads, held until its stream has passed it
_PENDING: "collections.deque[Tuple[Callable[[], bool], List[Any]]]" = collections.deque()


def _hold(objs: List[Any]) -> None:
    """Keeps ``objs`` alive until the current stream passes this point (JAX frees a buffer as
    soon as its last reference goes, on its own streams, unaware of the launch that reads it);
    releases the entries of earlier launches that have completed."""
    event = _backend()[3]
    while _PENDING and _PENDING[0][0]():
        _PENDING.popleft()
    _PENDING.append((event(), objs))


try:
    from jax.core import Tracer as _Tracer
except ImportError:  # pragma: no cover
    _Tracer = ()


def _concrete(x: Any, what: str, fn: str) -> Any:
    if isinstance(x, _Tracer):
        raise Error("Unsupported", f"baracuda.jax.{fn}: {what} is traced (jax.jit / vmap / grad); these functions run "
                    f"eagerly on concrete arrays, use jax.lax.{fn} inside traced code")
    return jnp.asarray(x)


def _alias(x: jax.Array) -> Any:
    x.block_until_ready()  # JAX's own streams finish writing it first
    return _backend()[2](x)


def _empty(shape: Sequence[int], dtype: str) -> Any:
    return _backend()[0]({"shape": [int(n) for n in shape], "dtype": dtype})


def _launch(op: str, views: Dict[str, Any], **desc: Any) -> None:
    """Runs ``op``'s plan for the descriptor ``desc`` on ``views`` as given (outputs included:
    they may be views of a larger array) on the allocating library's current stream."""
    p = select(op, problem_line(**desc))
    empty, stream, _, _ = _backend()
    for v in views.values():
        if hasattr(v, "block_until_ready"):
            v.block_until_ready()
    ws = p.workspace_size
    workspace = empty({}, ws) if ws else None
    ws_ptr = 0
    if workspace is not None:
        ws_ptr = workspace.data_ptr() if hasattr(workspace, "data_ptr") else workspace.data.ptr
    p._p.run(views, ws_ptr, ws, stream(), -1)
    _hold(list(views.values()))


def _bname(dtype: Any, fn: str) -> str:
    dt = _dtype_name(dtype)
    if dt is None:
        raise Error("Unsupported", f"baracuda.jax.{fn}: dtype {dtype} has no baracuda equivalent")
    return dt


# ---------------------------------------------------------------- lax.gather / lax.scatter

class _Windows(NamedTuple):
    """A gather's result or a scatter's updates as windows of the operand (hashable: the jit key)."""
    operand_shape: Tuple[int, ...]
    start_map: Tuple[int, ...]         # operand dim of each index-vector entry
    sizes: Tuple[int, ...]             # window extent per operand dim (1 on collapsed / batching dims)
    window_dims: Tuple[int, ...]       # operand dims with an axis in the result, ascending
    window_pos: Tuple[int, ...]        # their axes in the result (offset_dims / update_window_dims)
    batch_pos: Tuple[int, ...]         # the result axes of the index's batch dims, in order
    operand_batching: Tuple[int, ...]  # operand_batching_dims
    index_batching: Tuple[int, ...]    # start_indices_batching_dims / scatter_indices_batching_dims
    result_shape: Tuple[int, ...]
    clip: bool                         # clamp window starts; else out-of-range windows get index < 0
    index_dtype: str                   # "int32" / "int64"


@functools.partial(jax.jit, static_argnums=1)
def _linear_index(idx: jax.Array, w: _Windows) -> jax.Array:
    """The flattened operand's index of every result element, row-major over ``w.result_shape``.

    For index vector G (``idx[G, :]``) the window start is
        start[d] = idx[G, k]   for d = start_map[k]          (clip: clamped to [0, shape[d] - sizes[d]])
                 = G[b]        for d = operand_batching[i], b = index_batching[i]
                 = 0           otherwise
    and base(G) = sum_d start[d] * stride[d] (row-major strides of the operand). Element r of the
    result reads / writes  base(G(r)) + sum_k r[window_pos[k]] * stride[window_dims[k]]  with G(r)
    the coordinates of r on ``batch_pos``. Without clip, a window with any start outside
    [0, shape[d] - sizes[d]] gets base = -N (N the operand's size), so all its elements index in
    [-N, 0): out of range, which the rows' check mode fills (gather) or drops (scatter).
    """
    it = jnp.dtype(w.index_dtype)
    n = math.prod(w.operand_shape)
    strides = _contiguous(w.operand_shape)
    bshape = idx.shape[:-1]
    nb = len(bshape)
    # Into [-1, max extent + 1] in the index's own dtype first: a conversion to a narrower type
    # can then not wrap an out-of-range entry into range, and the products below stay small.
    info = jnp.iinfo(idx.dtype)
    lo, hi = max(int(info.min), -1), min(int(info.max), max(w.operand_shape, default=0) + 1)
    if int(info.min) < lo or int(info.max) > hi:
        idx = jnp.clip(idx, lo, hi)
    idx = idx.astype(it)
    base = jnp.zeros(bshape, it)
    ok = jnp.ones(bshape, bool)
    for k, d in enumerate(w.start_map):
        s = idx[..., k]
        top = w.operand_shape[d] - w.sizes[d]
        if w.clip:
            s = jnp.clip(s, 0, top)
        else:
            ok = ok & (s >= 0) & (s <= top)
        base = base + s * strides[d]
    for od, b in zip(w.operand_batching, w.index_batching):
        shp = [1] * nb
        shp[b] = bshape[b]
        base = base + (jnp.arange(bshape[b], dtype=it) * strides[od]).reshape(shp)
    if not w.clip:
        base = jnp.where(ok, base, jnp.asarray(-n, it))
    rank = len(w.result_shape)
    shp = [1] * rank
    for j, pos in enumerate(w.batch_pos):
        shp[pos] = bshape[j]
    lin = base.reshape(shp)
    for d, pos in zip(w.window_dims, w.window_pos):
        if w.sizes[d] > 1:
            shp = [1] * rank
            shp[pos] = w.sizes[d]
            lin = lin + (jnp.arange(w.sizes[d], dtype=it) * strides[d]).reshape(shp)
    return jnp.broadcast_to(lin, w.result_shape).reshape(-1)


def _index_dtype(n: int, fn: str) -> Tuple[str, str]:
    """(JAX, baracuda) index dtype for an operand of n elements: i32 while -n .. n fit."""
    if n <= 2**31 - 1:
        return "int32", "i32"
    if jax.dtypes.canonicalize_dtype(np.int64) != np.int64:
        raise Error("Unsupported", f"baracuda.jax.{fn}: an operand of {n} elements needs 64-bit indices; enable "
                    "jax_enable_x64")
    return "int64", "i64"


def _dnums(dn: Any, cls: Any) -> Any:
    """dimension_numbers with tuple fields (hashable), of the installed JAX's class."""
    return cls(**{f: tuple(int(v) for v in (getattr(dn, f, ()) or ())) for f in cls._fields})


def _mode(mode: Any, default: Any, fn: str) -> Any:
    m = default if mode is None else lax.GatherScatterMode.from_any(mode)
    if m.name not in ("CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"):
        raise Error("Unsupported", f"baracuda.jax.{fn}: mode {m.name} (clip, fill / drop and promise_in_bounds are "
                    "supported)")
    return m


@functools.lru_cache(maxsize=512)
def _gather_shape(oshape: Tuple[int, ...], odt: Any, ishape: Tuple[int, ...], idt: Any, dn: Any,
                  sizes: Tuple[int, ...], mode: Any) -> Tuple[int, ...]:
    """JAX's own shape rule (its errors, its result shape): abstract evaluation, no device work."""
    out = jax.eval_shape(lambda o, i: lax.gather(o, i, dn, sizes, mode=mode), jax.ShapeDtypeStruct(oshape, odt),
                         jax.ShapeDtypeStruct(ishape, idt))
    return tuple(int(n) for n in out.shape)


def _fill_value(dtype: Any, fill_value: Any, fn: str) -> Any:
    """JAX's fill for out-of-range gather windows: NaN for inexact dtypes, the minimum of signed
    and the maximum of unsigned integers, True for bool; a given value converts to the dtype."""
    dt = np.dtype(dtype)
    inexact = jnp.issubdtype(dt, jnp.inexact)
    if fill_value is None:
        if inexact:
            return float("nan")
        if jnp.issubdtype(dt, jnp.signedinteger):
            return int(jnp.iinfo(dt).min)
        if jnp.issubdtype(dt, jnp.unsignedinteger):
            return int(jnp.iinfo(dt).max)
        if dt == np.bool_:
            return True
        raise Error("Unsupported", f"baracuda.jax.{fn}: no fill value for dtype {dt}")
    v = np.asarray(fill_value)
    if dt == np.bool_:
        return bool(v)
    return float(v) if inexact else int(v)


def gather(operand: Any, start_indices: Any, dimension_numbers: Any, slice_sizes: Sequence[int], *,
           unique_indices: bool = False, indices_are_sorted: bool = False, mode: Any = None,
           fill_value: Any = None) -> jax.Array:
    """``jax.lax.gather``, eagerly, through baracuda's ``gather`` row.

    XLA's gather: ``start_indices`` is [B..., K] (the index vector last); for every batch position
    G the window of extent ``slice_sizes`` starting at ``start[start_index_map[k]] = idx[G, k]``
    (and ``start[operand_batching_dims[i]] = G[start_indices_batching_dims[i]]``) is read; the
    result has the batch dims of the index and, at ``offset_dims``, the window dims that are not
    in ``collapsed_slice_dims`` / ``operand_batching_dims``, in order.

    Modes (JAX's ``GatherScatterMode``; the default, None, is promise_in_bounds as in JAX):
      clip               every window start clamped to [0, operand.shape[d] - slice_sizes[d]]:
                         the whole window moves inside the operand (per window, not per element).
      fill               a window with any start outside that range is entirely ``fill_value``
                         (default NaN for inexact dtypes, the dtype's minimum for signed and
                         maximum for unsigned integers, True for bool), even where it overlaps.
      promise_in_bounds  the indices are in range; out-of-range windows are clamped (what XLA
                         does, and so what jax.lax.gather returns for them).

    Mapping: the result, flattened row-major, is ``take(operand.ravel(), lin)`` with one linear
    index per result element (see ``_linear_index``): the elements form of the ``gather`` row on
    the 1-D operand, bounds = check with the fill value (fill) or in-range indices (clip).
    ``unique_indices`` and ``indices_are_sorted`` are hints; both are ignored.

    Cost: the index array is as large as the result (4 bytes per element; 8 past 2^31 operand
    elements, which needs jax_enable_x64), built by one jitted JAX kernel (compiled once per
    shape / dimension_numbers / mode); then one gather launch: roughly 2-3x the bytes of a
    bespoke windowed gather. The operand is read in place (zero copy).
    """
    fn = "gather"
    operand = _concrete(operand, "operand", fn)
    idx = _concrete(start_indices, "start_indices", fn)
    dn = _dnums(dimension_numbers, lax.GatherDimensionNumbers)
    sizes = tuple(int(s) for s in slice_sizes)
    m = _mode(mode, lax.GatherScatterMode.PROMISE_IN_BOUNDS, fn)
    out_shape = _gather_shape(tuple(operand.shape), np.dtype(operand.dtype), tuple(idx.shape), np.dtype(idx.dtype), dn,
                              sizes, m)
    dt = _bname(operand.dtype, fn)
    count = math.prod(out_shape)
    if count == 0:
        return jnp.zeros(out_shape, operand.dtype)
    fill = m == lax.GatherScatterMode.FILL_OR_DROP
    fv = _fill_value(operand.dtype, fill_value, fn) if fill else None
    n = int(operand.size)
    jit_dt, idx_dt = _index_dtype(n, fn)
    obd = tuple(getattr(dn, "operand_batching_dims", ()))
    ibd = tuple(getattr(dn, "start_indices_batching_dims", ()))
    rank = operand.ndim
    offset = tuple(dn.offset_dims)
    w = _Windows(operand_shape=tuple(int(s) for s in operand.shape), start_map=tuple(dn.start_index_map), sizes=sizes,
                 window_dims=tuple(d for d in range(rank) if d not in dn.collapsed_slice_dims and d not in obd),
                 window_pos=offset, batch_pos=tuple(d for d in range(len(out_shape)) if d not in offset),
                 operand_batching=obd, index_batching=ibd, result_shape=out_shape, clip=not fill, index_dtype=jit_dt)
    lin = _linear_index(idx, w)
    out = _empty(out_shape, dt)
    _launch("gather", {"input": _alias(operand).reshape(-1), "index": lin, "out": out.reshape(-1)}, dtype=dt,
            index_dtype=idx_dt, form="elements", rank=1, input_shape=[n], index_shape=[count], dim=0, fill_value=fv)
    return jax.dlpack.from_dlpack(out)


_LAX_SCATTER = {"none": "scatter", "sum": "scatter_add", "prod": "scatter_mul", "amin": "scatter_min",
                "amax": "scatter_max"}


@functools.lru_cache(maxsize=512)
def _scatter_check(name: str, oshape: Tuple[int, ...], odt: Any, ishape: Tuple[int, ...], idt: Any,
                   ushape: Tuple[int, ...], udt: Any, dn: Any, mode: Any) -> None:
    """JAX's own shape / dtype rules for lax.<name> (abstract evaluation, no device work)."""
    f = getattr(lax, name)
    jax.eval_shape(lambda o, i, u: f(o, i, u, dn, mode=mode), jax.ShapeDtypeStruct(oshape, odt),
                   jax.ShapeDtypeStruct(ishape, idt), jax.ShapeDtypeStruct(ushape, udt))


def _scatter(reduce: str, operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: Any,
             mode: Any) -> jax.Array:
    fn = _LAX_SCATTER[reduce]
    operand = _concrete(operand, "operand", fn)
    idx = _concrete(scatter_indices, "scatter_indices", fn)
    updates = _concrete(updates, "updates", fn)
    dn = _dnums(dimension_numbers, lax.ScatterDimensionNumbers)
    m = _mode(mode, lax.GatherScatterMode.FILL_OR_DROP, fn)
    _scatter_check(fn, tuple(operand.shape), np.dtype(operand.dtype), tuple(idx.shape), np.dtype(idx.dtype),
                   tuple(updates.shape), np.dtype(updates.dtype), dn, m)
    dt = _bname(operand.dtype, fn)
    if updates.dtype != operand.dtype:
        updates = updates.astype(operand.dtype)
    n, count = int(operand.size), int(updates.size)
    if count == 0 or n == 0:
        return operand  # nothing lands (JAX arrays are immutable: the operand is the result)
    jit_dt, idx_dt = _index_dtype(n, fn)
    obd = tuple(getattr(dn, "operand_batching_dims", ()))
    ibd = tuple(getattr(dn, "scatter_indices_batching_dims", ()))
    rank = operand.ndim
    uwd = tuple(dn.update_window_dims)
    window_dims = tuple(d for d in range(rank) if d not in dn.inserted_window_dims and d not in obd)
    sizes = [1] * rank
    for d, pos in zip(window_dims, uwd):
        sizes[d] = int(updates.shape[pos])
    ushape = tuple(int(s) for s in updates.shape)
    w = _Windows(operand_shape=tuple(int(s) for s in operand.shape), start_map=tuple(dn.scatter_dims_to_operand_dims),
                 sizes=tuple(sizes), window_dims=window_dims, window_pos=uwd,
                 batch_pos=tuple(d for d in range(len(ushape)) if d not in uwd), operand_batching=obd,
                 index_batching=ibd, result_shape=ushape, clip=m == lax.GatherScatterMode.CLIP, index_dtype=jit_dt)
    lin = _linear_index(idx, w)
    out = _empty(operand.shape, dt)
    _launch("scatter", {"self": _alias(operand).reshape(-1), "index": lin, "src": _alias(updates).reshape(-1),
                        "out": out.reshape(-1)},
            dtype=dt, index_dtype=idx_dt, form="elements", rank=1, self_shape=[n], index_shape=[count], dim=0,
            reduce=reduce)
    return jax.dlpack.from_dlpack(out)


_SCATTER_DOC = """``jax.lax.{name}``, eagerly, through baracuda's ``scatter`` row (reduce = {reduce}).

    XLA's scatter: ``scatter_indices`` is [B..., K] (the index vector last); the update dims not in
    ``update_window_dims`` are the batch dims B; update element u lands on the operand at
    start + window offset, with ``start[scatter_dims_to_operand_dims[k]] = idx[G(u), k]`` (and
    ``start[operand_batching_dims[i]] = G(u)[scatter_indices_batching_dims[i]]``) and the window
    offset from u's coordinates on ``update_window_dims``, mapped in order onto the operand dims
    not in ``inserted_window_dims`` / ``operand_batching_dims``. The result is
        out = operand, then out[t] = {combine} for every update landing on t.{order}

    Modes (JAX's ``GatherScatterMode``; the default, None, is fill / drop as in JAX):
      clip               every window start clamped to [0, operand.shape[d] - window size[d]]: the
                         whole window moves inside the operand (per window, not per element).
      drop / fill        a window with any start outside that range is dropped entirely, even
                         the elements that would land inside.
      promise_in_bounds  treated as drop (what XLA does with out-of-range windows).

    Mapping: one linear index per update element into the flattened operand (see
    ``_linear_index``; dropped windows get indices < 0); the elements form of the ``scatter`` row
    on the 1-D operand with reduce = {reduce}, include_self = true, bounds = check (out-of-range
    terms dropped). ``indices_are_sorted`` and ``unique_indices`` are hints; both are ignored.
    {det}

    Cost: an index array as large as the updates (4 bytes per element; 8 past 2^31 operand
    elements, which needs jax_enable_x64) built by one jitted JAX kernel (compiled once per
    shape / dimension_numbers / mode), a copy of the operand into the result, then the scatter
    launch. Operand and updates are read in place (zero copy).
    """


def _lax_scatter(name: str, reduce: str) -> Callable[..., jax.Array]:
    """jax.lax.<name> with JAX's signature on the scatter row's reduce (docstring set below)."""

    def f(operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: Any, *,
          indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None) -> jax.Array:
        return _scatter(reduce, operand, scatter_indices, updates, dimension_numbers, mode)

    f.__name__ = f.__qualname__ = name
    return f


scatter = _lax_scatter("scatter", "none")
scatter_add = _lax_scatter("scatter_add", "sum")
scatter_mul = _lax_scatter("scatter_mul", "prod")
scatter_min = _lax_scatter("scatter_min", "amin")
scatter_max = _lax_scatter("scatter_max", "amax")


_ATOMIC = ("Floating-point terms combine by atomics in arrival order: the result may differ run to "
           "run in the last bits (as XLA's GPU scatter).")
for _f, _reduce, _combine, _order, _det in (
        (scatter, "none", "update", " Duplicate targets: one of the updates wins, unspecified which (JAX's rule).",
         "Bit-exact data movement."),
        (scatter_add, "sum", "out[t] + update", "", _ATOMIC + " Integer sums wrap in the dtype."),
        (scatter_mul, "prod", "out[t] * update", "", _ATOMIC + " Integer products wrap in the dtype."),
        (scatter_min, "amin", "min(out[t], update)", "", "Exact and order-free; NaN propagates (as lax.min)."),
        (scatter_max, "amax", "max(out[t], update)", "", "Exact and order-free; NaN propagates (as lax.max)."),
):
    _f.__doc__ = _SCATTER_DOC.format(name=_f.__name__, reduce=_reduce, combine=_combine, order=_order, det=_det)
del _f, _reduce, _combine, _order, _det


# ---------------------------------------------------------------- lax.dynamic_slice / dynamic_update_slice

def _starts(shape: Tuple[int, ...], start_indices: Any, sizes: Tuple[int, ...], allow_negative_indices: Any,
            fn: str) -> List[int]:
    """JAX's start rule: a negative start counts from the end (per dim, when allowed; unsigned
    starts never), then XLA clamps it so the window fits: clip(start, 0, shape[d] - sizes[d])."""
    if isinstance(start_indices, _Tracer) or (isinstance(start_indices, (list, tuple)) and
                                              any(isinstance(s, _Tracer) for s in start_indices)):
        raise Error("Unsupported", f"baracuda.jax.{fn}: start_indices are traced; use jax.lax.{fn} inside traced code")
    if hasattr(start_indices, "ndim") and not isinstance(start_indices, (list, tuple)):
        arr = np.asarray(start_indices)  # one device -> host read
        if arr.ndim != 1:
            raise ValueError(f"Slice indices must be a 1D sequence, got {arr.shape}")
        starts = [(int(v), arr.dtype) for v in arr.tolist()]
    else:
        host = jax.device_get(tuple(start_indices))  # device scalars: one read
        starts = []
        for v in host:
            a = np.asarray(v)
            if a.ndim != 0:
                raise TypeError(f"{fn}: start_indices must be scalars, got shape {a.shape}")
            starts.append((int(a), a.dtype))
    if len(starts) != len(shape):
        raise ValueError(f"Length of slice indices must match number of operand dimensions ({len(starts)} vs "
                         f"{tuple(shape)})")
    allow = [allow_negative_indices] * len(shape) if isinstance(allow_negative_indices, bool) \
        else [bool(a) for a in allow_negative_indices]
    out = []
    for d, ((s, sdt), n, size, neg) in enumerate(zip(starts, shape, sizes, allow)):
        if not jnp.issubdtype(sdt, jnp.integer):
            raise TypeError(f"{fn}: start_indices must be integers, got {sdt} at dimension {d}")
        if s < 0 and not jnp.issubdtype(sdt, jnp.unsignedinteger):
            if neg:
                s += n
        out.append(min(max(s, 0), n - size))
    return out


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: Any = True) -> jax.Array:
    """``jax.lax.dynamic_slice``, eagerly, through baracuda's ``copy`` row.

    ``out = operand[s0 : s0 + slice_sizes[0], s1 : ...]`` with each start first counted from the
    end when negative (``allow_negative_indices``, JAX's default) and then clamped so the window
    fits: ``s_d = clip(s_d, 0, operand.shape[d] - slice_sizes[d])`` (XLA's DynamicSlice rule; a
    start past the end moves the window back instead of shortening it).

    Mapping: the window is an offset, strided view of the operand's buffer (a zero-copy torch /
    CuPy alias of the JAX array: DLPack of a JAX slice would copy); the ``copy`` row copies it
    into the new result. Cost: the starts are read on the host (one device-to-host read when they
    are device arrays), then one copy launch moving the window's bytes once.
    """
    fn = "dynamic_slice"
    operand = _concrete(operand, "operand", fn)
    shape = tuple(int(n) for n in operand.shape)
    sizes = tuple(int(n) for n in slice_sizes)
    if len(sizes) != len(shape):
        raise TypeError(f"dynamic_slice slice_sizes must have the same length as operand dimensions, got "
                        f"{len(sizes)} and {len(shape)}")
    if any(s < 0 or s > n for s, n in zip(sizes, shape)):
        raise TypeError(f"dynamic_slice slice_sizes must be non-negative and at most the operand shape, got "
                        f"slice_sizes {sizes} for operand shape {shape}")
    starts = _starts(shape, start_indices, sizes, allow_negative_indices, fn)
    dt = _bname(operand.dtype, fn)
    if math.prod(sizes) == 0:
        return jnp.zeros(sizes, operand.dtype)
    src = _alias(operand)[tuple(slice(s, s + n) for s, n in zip(starts, sizes))]
    out = _empty(sizes, dt)
    _launch("copy", {"src": src, "dst": out}, dtype=dt, out_dtype=dt, in_rank=len(sizes), in_shape=list(sizes) or None,
            out_rank=len(sizes), out_shape=list(sizes) or None)
    return jax.dlpack.from_dlpack(out)


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: Any = True) -> jax.Array:
    """``jax.lax.dynamic_update_slice``, eagerly, through baracuda's ``copy`` row.

    ``out = operand`` with ``out[s0 : s0 + update.shape[0], ...] = update``; the starts follow
    ``dynamic_slice``'s rule (negative from the end when allowed, then clamped to
    [0, operand.shape[d] - update.shape[d]] so the whole update lands).

    Mapping: JAX arrays are immutable, so two ``copy`` launches on one stream: the operand into a
    new result, then the update into the result's window (an offset, strided view of it). Cost:
    the starts are read on the host (one device-to-host read when they are device arrays); the
    operand's bytes move once and the update's once (an in-place update, as XLA does under jit
    with a donated operand, would move only the update).
    """
    fn = "dynamic_update_slice"
    operand = _concrete(operand, "operand", fn)
    update = _concrete(update, "update", fn)
    shape = tuple(int(n) for n in operand.shape)
    sizes = tuple(int(n) for n in update.shape)
    if len(sizes) != len(shape):
        raise TypeError(f"dynamic_update_slice update must have the same rank as operand, got {update.shape} and "
                        f"{operand.shape}")
    if update.dtype != operand.dtype:
        raise TypeError(f"dynamic_update_slice update dtype must match operand dtype, got {update.dtype} and "
                        f"{operand.dtype}")
    if any(s > n for s, n in zip(sizes, shape)):
        raise TypeError(f"dynamic_update_slice update shape must be smaller than operand shape, got update shape "
                        f"{update.shape} for operand shape {operand.shape}")
    starts = _starts(shape, start_indices, sizes, allow_negative_indices, fn)
    dt = _bname(operand.dtype, fn)
    if math.prod(shape) == 0:
        return operand
    rank = len(shape)
    out = _empty(shape, dt)
    _launch("copy", {"src": _alias(operand), "dst": out}, dtype=dt, out_dtype=dt, in_rank=rank,
            in_shape=list(shape) or None, out_rank=rank, out_shape=list(shape) or None)
    if math.prod(sizes) > 0:
        window = out[tuple(slice(s, s + n) for s, n in zip(starts, sizes))]
        _launch("copy", {"src": _alias(update), "dst": window}, dtype=dt, out_dtype=dt, in_rank=rank,
                in_shape=list(sizes) or None, out_rank=rank, out_shape=list(sizes) or None)
    return jax.dlpack.from_dlpack(out)
