#!/usr/bin/env python3
"""PyTorch beside every timed record of baracuda_bench, on the same GPU in the same run.

  baracuda_bench --batch bench/problems/perf --mode P --json bench.json
  python3 bench/torch_side_by_side.py --ours bench.json --out-dir docs/perf --commit abc1234 --date 2026-11-27

Each record carries its op (a row of the op table), the problem line's fields and case options,
and every operand's dtype, shape and strides. TORCH below maps each op to the PyTorch call a
framework would make for the same problem: tensors of the same dtypes, shapes and strides, the
inputs drawn from the same ranges (index operands from the same distributions). Backward rows are
what a training step pays: torch.autograd.grad of the forward call (or the aten backward kernel
autograd runs), with a random grad_output. Composites (rope, causal conv1d, fused GEMM
epilogues) are written as a framework without the fused kernel writes them; --compile adds
torch.compile of those composites.

Writes <out-dir>/<family>.json (one record per row: ours, PyTorch, speedup, achieved rate and
fraction of the ceiling measured in the same run) and <family>.md (the table and its summary:
median and worst speedup, rows slower than PyTorch beyond the ±3 % tie band, median and worst
fraction of the ceiling).
"""
import argparse
import json
import os
import re
import statistics

try:  # --md-only rewrites the tables from the JSON without PyTorch
    import torch
    import torch.nn.functional as F
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

    class _Absent:  # attribute access for the call tables below; nothing is called without PyTorch
        def __getattr__(self, name):
            return None
    torch = F = _Absent()

DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64, "i32": torch.int32,
      "i64": torch.int64, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool,
      "f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}
S = torch.special if HAVE_TORCH else torch
TIE = 0.03  # a row within ±3 % of PyTorch is a tie

# ---------------------------------------------------------------- elementwise: op -> torch call
UNARY = {
    "abs": torch.abs, "neg": torch.neg, "sign": torch.sign, "square": torch.square, "ceil": torch.ceil, "floor": torch.floor,
    "round": torch.round, "trunc": torch.trunc, "frac": torch.frac, "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1,
    "log": torch.log, "log2": torch.log2, "log10": torch.log10, "log1p": torch.log1p, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "asin": torch.asin,
    "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh, "asinh": torch.asinh,
    "acosh": torch.acosh, "atanh": torch.atanh, "sinc": torch.sinc, "deg2rad": torch.deg2rad, "rad2deg": torch.rad2deg,
    "nan_to_num": torch.nan_to_num, "logit": torch.logit, "isfinite": torch.isfinite, "isinf": torch.isinf,
    "isnan": torch.isnan, "isposinf": torch.isposinf, "isneginf": torch.isneginf, "signbit": torch.signbit,
    "bitwise_not": torch.bitwise_not, "logical_not": torch.logical_not, "clamp": lambda x: torch.clamp(x, -0.5, 1.25),
    "erf": torch.erf, "erfc": torch.erfc, "erfinv": torch.erfinv, "lgamma": torch.lgamma, "sigmoid": torch.sigmoid,
    "ndtr": S.ndtr, "digamma": torch.digamma, "erfcx": S.erfcx, "ndtri": S.ndtri, "i0": torch.i0, "i1": S.i1, "i0e": S.i0e, "i1e": S.i1e,
    "frexp": lambda x: torch.frexp(x)[0], "polygamma": lambda x: torch.polygamma(1, x), "log_ndtr": S.log_ndtr, "entr": S.entr,
    "relu": torch.relu, "relu6": F.relu6, "leaky_relu": F.leaky_relu, "rrelu": lambda x: F.rrelu(x, training=False), "elu": F.elu,
    "selu": F.selu, "celu": F.celu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
    "mish": F.mish, "logsigmoid": F.logsigmoid, "hardsigmoid": F.hardsigmoid, "hardswish": F.hardswish, "hardtanh": F.hardtanh,
    "hardshrink": F.hardshrink, "softshrink": F.softshrink, "tanhshrink": F.tanhshrink, "softplus": F.softplus,
    "softsign": F.softsign, "threshold": lambda x: F.threshold(x, 0.5, 0.0),
}
BINARY = {
    "zeta": S.zeta, "igamma": torch.igamma, "igammac": torch.igammac, "xlogy": torch.xlogy, "xlog1py": S.xlog1py,
    "prelu": lambda a, w: torch.where(a > 0, a, w * a), "glu": lambda a, b: a * torch.sigmoid(b),
    "swiglu": lambda a, b: F.silu(a) * b, "geglu": lambda a, b: F.gelu(a) * b, "reglu": lambda a, b: F.relu(a) * b,
    "add": torch.add, "sub": torch.sub, "rsub": torch.rsub, "mul": torch.mul, "div": torch.div,
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"), "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "remainder": torch.remainder, "fmod": torch.fmod, "pow": torch.pow, "float_power": torch.float_power, "atan2": torch.atan2,
    "hypot": torch.hypot, "copysign": torch.copysign, "ldexp": torch.ldexp, "logaddexp": torch.logaddexp,
    "logaddexp2": torch.logaddexp2, "maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin,
    "nextafter": torch.nextafter, "heaviside": torch.heaviside, "gcd": torch.gcd, "lcm": torch.lcm,
    "lerp_scalar": lambda a, b: torch.lerp(a, b, 0.3), "masked_fill": lambda x, m: x.masked_fill(m, 0.0),
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge, "isclose": torch.isclose,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "bitwise_left_shift": torch.bitwise_left_shift, "bitwise_right_shift": torch.bitwise_right_shift,
}
TERNARY = {
    "where": torch.where, "clamp_tensor": torch.clamp, "addcmul": torch.addcmul, "addcdiv": torch.addcdiv,
    "lerp": torch.lerp, "fma": lambda a, b, c: torch.addcmul(c, a, b),
}
NO_GRAD = {"igamma": {0}, "igammac": {0}}  # PyTorch has no derivative in a (operand 0), nor do we


def ew_fn(op):
    return UNARY.get(op) or BINARY.get(op) or TERNARY.get(op)


# ---------------------------------------------------------------- records -> tensors


def fields_of(problem):
    """'a=bf16[8,8] transpose_b=true' -> {'a': 'bf16[8,8]', 'transpose_b': 'true'}"""
    return dict(t.split("=", 1) for t in problem.split() if "=" in t)


def option(rec, name, default=None):
    m = re.search(r"--" + name + r"=(\S+)", rec["options"])
    return m.group(1) if m else default


def fill(t, lo=-2.0, hi=2.0):
    if t.dtype == torch.bool:
        return t.copy_(torch.rand(t.shape, device="cuda") > 0.5)
    if not t.is_floating_point():
        return t.copy_(torch.randint(-64, 65, t.shape, device="cuda"))  # the harness's integer range
    return t.uniform_(lo, hi)


def tensor(o, lo=-2.0, hi=2.0):
    """An operand of the record: its dtype, shape and strides (a view into fresh storage)."""
    shape, strides = o["shape"], o["strides"]
    if any(s < 0 for s in strides):
        raise ValueError("negative strides")
    t = torch.empty_strided(shape, strides, dtype=DT[o["dtype"]], device="cuda")
    if 0 in strides and t.numel() > 0:  # a broadcast view: fill its storage through a dense view
        fill(torch.as_strided(t, [d if s else 1 for d, s in zip(shape, strides)], strides), lo, hi)
        return t
    return fill(t, lo, hi)


class Rec:
    def __init__(self, r):
        self.r, self.f = r, fields_of(r["problem"])
        self.ops = {o["name"]: o for o in r["operands"]}

    def t(self, name, lo=-2.0, hi=2.0):
        return tensor(self.ops[name], lo, hi)

    def has(self, name):
        return name in self.ops

    def i(self, key, default=0):
        return int(self.f.get(key, default))

    def b(self, key):
        return self.f.get(key, "false") == "true"


def grad_call(fn, leaves):
    """torch.autograd.grad of fn(*leaves) for the leaves that require grad, random grad_output."""
    y = fn(*leaves)
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    gs = [torch.empty_like(v).uniform_(-1, 1) for v in ys]
    need = [x for x in leaves if isinstance(x, torch.Tensor) and x.requires_grad]
    return lambda: torch.autograd.grad(ys, need, gs, retain_graph=True)


def leaf(t, grad=True):
    return t.detach().requires_grad_(grad and t.is_floating_point())


# ---------------------------------------------------------------- per op


def torch_pad(R, bwd, wrap=None):
    rank = R.i("rank")
    lo = [int(v) for v in R.f["pad_low"].split(",")]
    hi = [int(v) for v in R.f["pad_high"].split(",")]
    pads = []
    for a in reversed(range(rank)):
        pads += [lo[a], hi[a]]
    while len(pads) > 2 and pads[-2:] == [0, 0]:
        pads = pads[:-2]
    mode = R.f.get("mode", "constant")
    value = float(R.f.get("value", 0))
    fn = (lambda x: F.pad(x, pads, mode="constant", value=value)) if mode == "constant" else (lambda x: F.pad(x, pads, mode=mode))
    if not bwd:
        x = R.t("x")
        return lambda: fn(x)
    shape = [int(v) for v in R.f["in_shape"].split(",")]
    x = leaf(torch.empty(shape, device="cuda", dtype=DT[R.f["dtype"]]).uniform_(-2, 2))
    return grad_call(fn, [x])


def torch_copy(R, bwd, wrap=None):
    x, y = R.t("src"), R.t("dst")
    return lambda: y.copy_(x)


def torch_cat(R, bwd, wrap=None):
    n = len([k for k in R.ops if k.startswith("inputs[")])
    xs = [R.t(f"inputs[{k}]") for k in range(n)]
    y = R.t("out")
    dim = R.i("dim")
    if R.b("stack"):
        return lambda: torch.stack(xs, dim, out=y)
    return lambda: torch.cat(xs, dim, out=y)


def torch_fill(R, bwd, wrap=None):
    y = R.t("out")
    kind, f = R.f.get("kind", "full"), lambda k, d: float(R.f.get(k, d))
    n = y.shape[0] if y.dim() else 1
    if kind == "full":
        v = R.f.get("value", "0")
        v = (v == "true") if v in ("true", "false") else float(v)
        return lambda: y.fill_(v)
    if kind == "arange":
        start, step = f("start", 0), f("step", 1)
        return lambda: torch.arange(start, start + (n - 0.5) * step, step, out=y)
    if kind == "linspace":
        return lambda: torch.linspace(f("start", 0), f("end", 0), n, out=y)
    if kind == "logspace":
        return lambda: torch.logspace(f("start", 0), f("end", 0), n, f("base", 10), out=y)
    return lambda: torch.eye(y.shape[0], y.shape[1], out=y)


def torch_flip_roll(R, bwd, wrap=None):
    x, y = R.t("input"), R.t("out")
    ints = lambda k: [int(v) for v in R.f[k].split(",")] if R.f.get(k) else []
    if R.r["op"] == "flip":  # (no out= form: PyTorch allocates the result from its cache)
        return lambda: torch.flip(x, ints("dims"))
    dims = ints("dims")
    return lambda: torch.roll(x, ints("shifts"), dims) if dims else torch.roll(x, ints("shifts")[0])


def draw_index(dist, shape, n, along, dtype):
    """Index entries as harness/ref_gather_scatter.cpp draws them: uniform over [0, n), "perm"
    (perm[k mod n] of one permutation, k the coordinate `along`), "same" (7)."""
    g = torch.Generator(device="cuda").manual_seed(13)
    if dist == "same":
        return torch.full(shape, min(7, n - 1), device="cuda", dtype=dtype)
    if dist == "perm":
        perm = torch.randperm(n, device="cuda", generator=g)
        k = torch.arange(shape[along], device="cuda") % n
        view = [1] * len(shape)
        view[along] = shape[along]
        return perm[k].reshape(view).expand(shape).to(dtype).contiguous()
    return torch.randint(0, n, shape, device="cuda", generator=g, dtype=dtype)


def torch_gather_scatter(R, bwd, wrap=None):
    """torch.gather / index_select, scatter / scatter_add / scatter_reduce / index_add / index_copy / index_fill
    on the record's operands (in place when the record binds out to self: index_add_ ...)."""
    op, rank = R.r["op"], R.i("rank")
    dim = R.i("dim")
    dim = dim + rank if dim < 0 else dim
    slices = R.f.get("form") == "slices"
    ishape = R.ops["index"]["shape"]
    idt = DT[R.f.get("index_dtype", "i64")]
    data_shape = [int(v) for v in R.f["input_shape" if op == "gather" else "self_shape"].split(",")]
    idx = draw_index(option(R.r, "data", "uniform"), ishape, data_shape[dim], 0 if slices else dim, idt)
    if op == "gather":
        x = R.t("input")
        return (lambda: torch.index_select(x, dim, idx)) if slices else (lambda: torch.gather(x, dim, idx))
    self = R.t("self")
    src = R.t("src") if R.has("src") else None
    value = float(R.f.get("value", "0"))
    reduce = R.f.get("reduce", "none")
    inplace = "--inplace" in R.r["options"] or "--alias=out:self" in R.r["options"]
    include_self = R.f.get("include_self", "true") == "true"
    if slices:
        if reduce == "none":
            fn = (lambda: self.index_fill_(dim, idx, value)) if src is None else (lambda: self.index_copy_(dim, idx, src))
            return fn if inplace else ((lambda: self.index_fill(dim, idx, value)) if src is None else (lambda: self.index_copy(dim, idx, src)))
        if reduce == "sum":
            alpha = float(R.f.get("alpha", "1"))
            return (lambda: self.index_add_(dim, idx, src, alpha=alpha)) if inplace else (lambda: self.index_add(dim, idx, src, alpha=alpha))
        return (lambda: self.index_reduce_(dim, idx, src, reduce, include_self=include_self)) if inplace else \
            (lambda: self.index_reduce(dim, idx, src, reduce, include_self=include_self))
    if reduce == "none":
        if src is None:
            return (lambda: self.scatter_(dim, idx, value)) if inplace else (lambda: torch.scatter(self, dim, idx, value))
        return (lambda: self.scatter_(dim, idx, src)) if inplace else (lambda: torch.scatter(self, dim, idx, src))
    if reduce == "sum" and include_self:
        return (lambda: self.scatter_add_(dim, idx, src)) if inplace else (lambda: torch.scatter_add(self, dim, idx, src))
    return (lambda: self.scatter_reduce_(dim, idx, src, reduce, include_self=include_self)) if inplace else \
        (lambda: torch.scatter_reduce(self, dim, idx, src, reduce, include_self=include_self))


def torch_nonzero(R, bwd, wrap=None):
    """torch.nonzero (its count synchronizes: ours is the fixed-bound form), masked_select, masked_scatter."""
    op = R.f.get("op", "nonzero")
    x = R.t("input")
    if op == "nonzero":
        return lambda: torch.nonzero(x)
    m = R.t("mask").bool()
    if op == "masked_select":
        return lambda: torch.masked_select(x, m)
    src = R.t("source")
    return lambda: x.masked_scatter(m, src)


def torch_triangle(R, bwd, wrap=None):
    x, y = R.t("input"), R.t("out")
    k = R.i("diagonal")
    if R.b("upper"):
        return lambda: torch.triu(x, k, out=y)
    return lambda: torch.tril(x, k, out=y)


def torch_unfold_backward(R, bwd, wrap=None):
    """aten::unfold_backward (what autograd runs for Tensor.unfold)."""
    g = R.t("grad_out")
    shape = list(R.t("grad_input").shape)
    dim, size, step = R.i("dim"), R.i("size", 1), R.i("step", 1)
    return lambda: torch.ops.aten.unfold_backward(g, shape, dim, size, step)


def torch_elementwise(R, bwd, wrap=None):
    op = R.f["op"]
    if op == "to":
        x = R.t("in[0]", 0.25, 2.0)
        target = DT[R.f["out_dtype"]]
        return lambda: x.to(target)
    fn = ew_fn(op)
    if fn is None:
        return None
    n = len([k for k in R.ops if k.startswith("in[")])
    xs = [R.t(f"in[{k}]", 0.25, 2.0) for k in range(n)]
    if not bwd:
        if n == 1 and xs[0].dim() == 2 and xs[0].stride()[0] == 1:  # a transposed x: ours writes a contiguous result
            y = torch.empty(R.ops["out"]["shape"], device="cuda", dtype=xs[0].dtype)
            return (lambda: torch.exp(xs[0], out=y)) if op == "exp" else (lambda: y.copy_(fn(xs[0])))
        return lambda: fn(*xs)
    leaves = [leaf(x, k not in NO_GRAD.get(op, set())) for k, x in enumerate(xs)]
    return grad_call(fn, leaves)


def torch_frexp(R, bwd, wrap=None):
    x = R.t("in")
    return lambda: torch.frexp(x)


def torch_reduce(R, bwd, wrap=None):
    x = R.t("x")
    ins = [int(v) for v in R.f["in_shape"].split(",")]
    outs = [int(v) for v in R.f["out_shape"].split(",")]
    lead = len(ins) - len(outs)
    dims = list(range(lead)) + [lead + i for i, d in enumerate(outs) if d == 1 and ins[lead + i] != 1]
    op = R.f["op"]
    odt = DT[R.f["out_dtype"]]

    def red(x):
        y = {"sum": lambda: x.sum(dims, dtype=odt), "prod": lambda: x.prod(dims[0], dtype=odt),
             "max": lambda: x.amax(dims), "min": lambda: x.amin(dims)}[op]()
        return y.reshape(outs)
    return lambda: red(x)


def torch_reduce_op(R, bwd, wrap=None):
    """The reduce row: the torch function of the same name over the same dims; backward: autograd's
    kernel for it (the forward run once outside the timing)."""
    x = R.t("x") if R.has("x") else R.t("dx")
    rank = int(R.f["rank"])
    nd = int(R.f.get("num_dims", "0"))
    dims = [int(v) % max(rank, 1) for v in R.f["dims"].split(",")[:nd]] if nd else list(range(rank))
    keep = R.f.get("keepdim", "false") == "true"
    op = R.f["op"]
    odt = DT[R.f["out_dtype"]] if R.f.get("out_dtype", "none") != "none" else None
    p = float(R.f.get("p", "2"))
    corr = float(R.f.get("correction", "1"))
    one = dims[0] if len(dims) == 1 else None
    calls = {
        "sum": lambda: torch.sum(x, dims, keepdim=keep, dtype=odt), "nansum": lambda: torch.nansum(x, dims, keepdim=keep, dtype=odt),
        "mean": lambda: torch.mean(x, dims, keepdim=keep, dtype=odt), "nanmean": lambda: torch.nanmean(x, dims, keepdim=keep, dtype=odt),
        "prod": lambda: torch.prod(x.flatten() if one is None else x, 0 if one is None else one, keepdim=keep, dtype=odt),
        "amax": lambda: torch.amax(x, dims, keepdim=keep), "amin": lambda: torch.amin(x, dims, keepdim=keep),
        "all": lambda: torch.all(x, dims, keepdim=keep), "any": lambda: torch.any(x, dims, keepdim=keep),
        "count_nonzero": lambda: torch.count_nonzero(x, dims), "logsumexp": lambda: torch.logsumexp(x, dims, keepdim=keep),
        "norm": lambda: torch.linalg.vector_norm(x, p, dims, keepdim=keep, dtype=odt),
        "var": lambda: torch.var(x, dims, correction=corr, keepdim=keep), "std": lambda: torch.std(x, dims, correction=corr, keepdim=keep),
        "argmax": lambda: torch.argmax(x, one, keepdim=keep), "argmin": lambda: torch.argmin(x, one, keepdim=keep),
        "max": lambda: torch.max(x, one, keepdim=keep), "min": lambda: torch.min(x, one, keepdim=keep),
        "var_mean": lambda: torch.var_mean(x, dims, correction=corr, keepdim=keep),
        "std_mean": lambda: torch.std_mean(x, dims, correction=corr, keepdim=keep),
        "aminmax": lambda: torch.aminmax(x, dim=one, keepdim=keep),
    }
    if bwd:
        x = leaf(x)
        y = calls[op]()
        y = y[0] if isinstance(y, tuple) else y
        g = torch.empty_like(y).uniform_(-1, 1)
        return lambda: torch.autograd.grad(y, x, g, retain_graph=True)
    return calls[op]


def torch_scan(R, bwd, wrap=None):
    """The scan rows: torch.cumsum / cumprod / cummax / cummin / logcumsumexp (reverse: flipped in and
    out, as PyTorch has no reverse form; exclusive has no PyTorch form); backward = autograd's kernel."""
    x = R.t("x" if R.has("x") else "dy")
    dim = int(R.f.get("dim", "0"))
    op = R.f["op"]
    odt = DT[R.f["out_dtype"]] if R.f.get("out_dtype", "none") != "none" else None
    rev = R.f.get("reverse", "false") == "true"
    calls = {
        "cumsum": lambda t: torch.cumsum(t, dim, dtype=odt), "cumprod": lambda t: torch.cumprod(t, dim, dtype=odt),
        "cummax": lambda t: torch.cummax(t, dim), "cummin": lambda t: torch.cummin(t, dim),
        "logcumsumexp": lambda t: torch.logcumsumexp(t, dim),
    }
    f = calls[op]
    if bwd:
        if op == "cumsum":  # autograd's cumsum backward: the reversed cumsum of dy (flip, cumsum, flip)
            return lambda: torch.ops.aten.flip(torch.cumsum(torch.ops.aten.flip(x, [dim]), dim), [dim])
        xl = leaf(R.t("x") if R.has("x") else x)
        y = f(xl)
        y = y[0] if isinstance(y, tuple) else y
        g = torch.empty_like(y).uniform_(-1, 1)
        return lambda: torch.autograd.grad(y, xl, g, retain_graph=True)
    if rev:
        return lambda: torch.flip(f(torch.flip(x, [dim])), [dim])
    return lambda: f(x)


def softmax_keep(R, shape, dim):
    """The bool keep-mask of a masked softmax row (None: none): the mask operand where it is bool, and
    the causal limit k <= q + diagonal over the query axis (dim - 1), as one broadcast tensor."""
    keep = None
    if R.f.get("mask_dtype", "none") == "bool":
        keep = torch.rand(shape, device="cuda") > 0.25
    if R.b("causal"):
        d = dim % len(shape)
        lq, lk = shape[d - 1], shape[d]
        tril = torch.ones(lq, lk, device="cuda", dtype=torch.bool).tril(int(R.f.get("diagonal", "0")))
        tril = tril.view([lq, lk] + [1] * (len(shape) - 1 - d))
        keep = tril if keep is None else keep & tril
    return keep


def torch_softmax(R, bwd, wrap=lambda f: f):
    """The softmax rows: torch.softmax / log_softmax / F.softmin (dtype= for the half-to-float forms);
    backward = the aten kernel autograd runs (_softmax_backward_data / _log_softmax_backward_data; softmin:
    it and the neg autograd adds), called directly so torch.compile can time it too. Masks as their
    composition: x.masked_fill(~keep, -inf) (bool / causal) or x + mask (additive) first; the backward's
    masked_fill(~keep, 0) after (masked_fill's gradient)."""
    dim = int(R.f.get("dim", "-1"))
    op = R.f["op"]
    odt = DT[R.f["out_dtype"]] if R.f.get("out_dtype", "none") != "none" else None
    shape = [int(v) for v in R.f["shape"].split(",")] if R.f.get("shape") else []
    keep = softmax_keep(R, shape, dim)
    additive = R.f.get("mask_dtype", "none") not in ("none", "bool")
    if not bwd:
        x = R.t("x")
        add = R.t("mask") if additive else None
        base = {"softmax": lambda t: torch.softmax(t, dim, dtype=odt), "log_softmax": lambda t: torch.log_softmax(t, dim, dtype=odt),
                "softmin": lambda t: F.softmin(t, dim, dtype=odt)}[op]
        if keep is None and add is None:
            g = wrap(base)
            return lambda: g(x)

        def fwd(t, keep, add):
            if add is not None:
                t = t + add
            if keep is not None:
                t = t.masked_fill(~keep, float("inf") if op == "softmin" else float("-inf"))
            return base(t)
        g = wrap(fwd)
        return lambda: g(x, keep, add)
    y, dy = R.t("y", 0.0, 1.0), R.t("dy")
    in_dt = DT[R.f["dtype"]]
    if op == "log_softmax":
        def f(y, dy, keep):
            r = torch.ops.aten._log_softmax_backward_data(dy, y, dim, in_dt)
            return r if keep is None else r.masked_fill(~keep, 0)
    elif op == "softmax":
        def f(y, dy, keep):
            r = torch.ops.aten._softmax_backward_data(dy, y, dim, in_dt)
            return r if keep is None else r.masked_fill(~keep, 0)
    else:
        def f(y, dy, keep):
            r = torch.ops.aten._softmax_backward_data(dy, y, dim, in_dt).neg()
            return r if keep is None else r.masked_fill(~keep, 0)
    g = wrap(f)
    return lambda: g(y, dy, keep)


def torch_norm(R, bwd, wrap=None):
    """The norm rows: F.layer_norm / F.rms_norm over the trailing norm_dims axes (the residual: x + residual
    first, as the unfused pre-norm block); backward = aten.native_layer_norm_backward (dx, dweight, dbias), for
    rms_norm torch.autograd.grad of F.rms_norm (no compile figure for it)."""
    rank, k = R.i("rank"), R.i("norm_dims", 1)
    shape = [int(v) for v in R.f["shape"].split(",")]
    ns = shape[rank - k:]
    layer = R.f["op"] == "layer_norm"
    eps = float(R.f["eps"]) if R.f.get("eps", "none") != "none" else (1e-5 if layer else None)
    w = R.t("weight") if R.has("weight") else None
    b = R.t("bias") if R.has("bias") else None
    if not bwd:
        x = R.t("x")
        r = R.t("residual") if R.has("residual") else None
        def f(x, r):
            h = x + r if r is not None else x
            y = F.layer_norm(h, ns, w, b, eps) if layer else F.rms_norm(h, ns, w, eps)
            return (y, h) if r is not None else y
        g = wrap(f) if wrap else f
        return lambda: g(x, r)
    x, dy = R.t("x"), R.t("dy")
    if layer:
        mean, rstd = R.t("mean"), R.t("rstd", 0.5, 1.5)
        mask = [True, w is not None, b is not None]
        def fb(dy, x, mean, rstd):
            return torch.ops.aten.native_layer_norm_backward(dy, x, ns, mean, rstd, w, b, mask)
        g = wrap(fb) if wrap else fb
        return lambda: g(dy, x, mean, rstd)
    if wrap:  # rms_norm's backward is timed through autograd: no compiled form
        return None
    xl = leaf(x)
    wl = leaf(w) if w is not None else None
    y = F.rms_norm(xl, ns, wl, eps)
    need = [t for t in (xl, wl) if t is not None]
    return lambda: torch.autograd.grad(y, need, dy, retain_graph=True)


def torch_channel_norm(R, bwd, wrap=None):
    """The channel_norm rows: F.batch_norm / F.group_norm / F.instance_norm with the same options (running
    stats updated in place); backward = the aten kernel autograd runs (native_batch_norm_backward,
    native_group_norm_backward), instance_norm through torch.autograd.grad (no compile figure)."""
    op = R.f["op"]
    shape = [int(v) for v in R.f["shape"].split(",")]
    N, C = shape[0], shape[1]
    HxW = 1
    for v in shape[2:]:
        HxW *= v
    G = R.i("groups", 1)
    eps, mom = float(R.f.get("eps", "1e-05")), float(R.f.get("momentum", "0.1"))
    training = R.f.get("training", "true") == "true"
    w = R.t("weight") if R.has("weight") else None
    b = R.t("bias") if R.has("bias") else None
    pdt = DT[R.f["param_dtype"]] if R.f.get("param_dtype", "none") != "none" else DT[R.f["dtype"]]
    running = R.b("running_stats")
    rm = torch.zeros(C, device="cuda", dtype=pdt) if running else None
    rv = torch.ones(C, device="cuda", dtype=pdt) if running else None
    x = R.t("x")
    if op == "batch_norm":
        fwd = lambda x: F.batch_norm(x, rm, rv, w, b, training, mom, eps)
    elif op == "group_norm":
        fwd = lambda x: F.group_norm(x, G, w, b, eps)
    else:
        fwd = lambda x: F.instance_norm(x, rm, rv, w, b, training, mom, eps)
    if not bwd:
        g = wrap(fwd) if wrap else fwd
        return lambda: g(x)
    dy = R.t("dy")
    mean, rstd = R.t("mean"), R.t("rstd", 0.5, 1.5)
    mask = [True, w is not None, R.has("dbias")]
    if op == "batch_norm":
        def fb(dy, x, mean, rstd):
            return torch.ops.aten.native_batch_norm_backward(dy, x, w, rm, rv, mean, rstd, training, eps, mask)
    elif op == "group_norm":  # (native_group_norm's mean / rstd are x's dtype)
        mean, rstd = mean.to(x.dtype), rstd.to(x.dtype)
        def fb(dy, x, mean, rstd):
            return torch.ops.aten.native_group_norm_backward(dy, x, mean, rstd, w, N, C, HxW, G, mask)
    else:
        if wrap:
            return None
        xl = leaf(x)
        y = F.instance_norm(xl, None, None, w, b, True, mom, eps)
        return lambda: torch.autograd.grad(y, [xl], dy, retain_graph=True)
    g = wrap(fb) if wrap else fb
    return lambda: g(dy, x, mean, rstd)


def torch_cross_entropy(R, bwd, wrap=None):
    """The loss rows: F.cross_entropy / F.nll_loss with the same weight, ignore_index, reduction and
    label_smoothing on class indices drawn in [0, C) (z_loss: + z * logsumexp(x, 1)^2 per sample);
    backward = torch.autograd.grad of it (nll_loss_backward + log_softmax's backward), no compile figure."""
    shape = [int(v) for v in R.f["shape"].split(",")]
    cax = 0 if len(shape) == 1 else 1
    C = shape[cax]
    nll = R.f.get("op", "cross_entropy") == "nll_loss"
    red = R.f.get("reduction", "mean")
    ls = float(R.f.get("label_smoothing", 0))
    z = float(R.f.get("z_loss", 0))
    ign = R.i("ignore_index", -100)
    x = R.t("input") if R.has("input") else R.t("dinput")
    w = R.t("weight", 0.25, 2.0) if R.has("weight") else None
    if R.f.get("target_kind", "index") == "probability":
        tgt = torch.rand(shape, device=x.device, dtype=x.dtype)
    else:
        tshape = shape[:cax] + shape[cax + 1:]
        tgt = torch.randint(0, C, tshape, device=x.device, dtype=torch.int64)
    def f(x):
        if nll:
            return F.nll_loss(x, tgt, weight=w, ignore_index=ign, reduction=red)
        l = F.cross_entropy(x, tgt, weight=w, ignore_index=ign, reduction=red, label_smoothing=ls)
        if z > 0:
            zz = z * torch.logsumexp(x.float(), cax) ** 2
            l = l + (zz if red == "none" else zz.sum() if red == "sum" else zz.mean())
        return l
    if not bwd:
        g = wrap(f) if wrap else f
        return lambda: g(x)
    if wrap:
        return None
    xl = leaf(x)
    y = f(xl)
    dl = torch.empty_like(y).uniform_(-1, 1)
    return lambda: torch.autograd.grad(y, [xl], dl, retain_graph=True)


def torch_normalize(R, bwd, wrap=None):
    """F.normalize(x, p, dim, eps) / torch._weight_norm(v, g, dim); backward = torch.autograd.grad of it."""
    dim, p, eps = R.i("dim", 1), float(R.f.get("p", 2.0)), float(R.f.get("eps", 1e-12))
    x = R.t("input") if R.has("input") else R.t("dinput")
    wn = R.f.get("op", "normalize") == "weight_norm"
    g = (R.t("g", 0.5, 2.0)) if wn else None
    f = (lambda a, b: torch._weight_norm(a, b, dim)) if wn else (lambda a: F.normalize(a, p, dim, eps))
    if not bwd:
        h = wrap(f) if wrap else f
        return (lambda: h(x, g)) if wn else (lambda: h(x))
    if wrap:
        return None
    leaves = [leaf(x)] + ([leaf(g)] if wn else [])
    return grad_call(f, leaves)


def torch_fused_linear_cross_entropy(R, bwd, wrap=None):
    """The unfused path: F.linear into [tokens, classes] logits, F.cross_entropy of them (same ignore_index,
    class weights, label smoothing, reduction; z_loss: + z * logsumexp^2), torch.autograd.grad of the loss for
    input, weight and bias; the backward row (our dloss scaling of the formed gradients) has no PyTorch twin."""
    if bwd or wrap:
        return None
    x, w = leaf(R.t("input", -1, 1)), leaf(R.t("weight", -0.5, 0.5))
    b = leaf(R.t("bias", -1, 1)) if R.has("bias") else None
    cw = R.t("ce_weight", 0.25, 2.0) if R.has("ce_weight") else None
    ign, red = R.i("ignore_index", -100), R.f.get("reduction", "mean")
    ls, z = float(R.f.get("label_smoothing", 0)), float(R.f.get("z_loss", 0))
    tgt = torch.randint(0, w.shape[0], (x.shape[0],), device=x.device, dtype=torch.int64)
    tgt[::8] = ign
    leaves = [x, w] + ([b] if b is not None else [])

    def step():
        logits = F.linear(x, w, b)
        loss = F.cross_entropy(logits, tgt, weight=cw, ignore_index=ign, reduction=red, label_smoothing=ls)
        if z > 0:
            zz = z * torch.logsumexp(logits.float(), 1) ** 2
            loss = loss + (zz.sum() if red == "sum" else zz.mean())
        return torch.autograd.grad(loss, leaves)
    return step


def peak_mib(call):
    """PyTorch's allocator peak above what was allocated before one call (its outputs included), MiB."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = call()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak / 2**20


# rows whose memory is part of the bar: PyTorch's peak beside ours (workspace + outputs)
PEAK_OPS = {"fused_linear_cross_entropy"}


def torch_pointwise_loss(R, bwd, wrap=None):
    """The element-wise losses: the F.*_loss of the same op, options and reduction on inputs of the op's
    domain; backward = torch.autograd.grad of it for every operand we differentiate."""
    op = R.f["op"]
    red = R.f.get("reduction", "mean")
    x = R.t("input", 0.02, 0.98) if op == "binary_cross_entropy" else R.t("input")
    y = R.t("target", 0.0, 1.0)
    if op in ("soft_margin", "hinge_embedding", "margin_ranking"):
        y = torch.where(y > 0.5, 1.0, -1.0).to(y.dtype)
    x2 = R.t("input2") if R.has("input2") else None
    var = R.t("var", 0.1, 2.0) if R.has("var") else None
    w = R.t("weight", 0.25, 2.0) if R.has("weight") else None
    pw = R.t("pos_weight", 0.5, 3.0) if R.has("pos_weight") else None
    fl = lambda k, d: float(R.f.get(k, d))
    def f(x, y, x2, var):
        if op == "mse": return F.mse_loss(x, y, reduction=red)
        if op == "l1": return F.l1_loss(x, y, reduction=red)
        if op == "smooth_l1": return F.smooth_l1_loss(x, y, reduction=red, beta=fl("beta", 1.0))
        if op == "huber": return F.huber_loss(x, y, reduction=red, delta=fl("delta", 1.0))
        if op == "binary_cross_entropy": return F.binary_cross_entropy(x, y, weight=w, reduction=red)
        if op == "binary_cross_entropy_with_logits":
            return F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=pw, reduction=red)
        if op == "kl_div": return F.kl_div(x, y, reduction=red, log_target=R.b("log_target"))
        if op == "poisson_nll":
            return F.poisson_nll_loss(x, y, log_input=R.f.get("log_input", "true") == "true", full=R.b("full"),
                                      eps=fl("eps", 1e-8), reduction=red)
        if op == "gaussian_nll": return F.gaussian_nll_loss(x, y, var, full=R.b("full"), eps=fl("eps", 1e-6), reduction=red)
        if op == "soft_margin": return F.soft_margin_loss(x, y, reduction=red)
        if op == "hinge_embedding": return F.hinge_embedding_loss(x, y, margin=fl("margin", 1.0), reduction=red)
        if op == "margin_ranking": return F.margin_ranking_loss(x, x2, y, margin=fl("margin", 0.0), reduction=red)
        raise KeyError(op)
    if not bwd:
        g = wrap(f) if wrap else f
        return lambda: g(x, y, x2, var)
    if wrap:
        return None
    xl = leaf(x)
    yl = leaf(y, R.has("dtarget"))
    x2l = leaf(x2) if x2 is not None else None
    vl = leaf(var) if var is not None else None
    out = f(xl, yl, x2l, vl)
    need = [t for t in (xl, yl, x2l, vl) if t is not None and t.requires_grad]
    dl = torch.empty_like(out).uniform_(-1, 1)
    return lambda: torch.autograd.grad(out, need, dl, retain_graph=True)


def torch_gemm(R, bwd, wrap=None):
    a, b = R.t("a", -1, 1), R.t("b", -1, 1)
    bias = R.t("bias", -1, 1) if R.has("bias") and R.b("has_bias") else None
    act = R.f.get("activation", "none")
    gact = R.f.get("grad_activation", "none")
    if R.b("transpose_b"):
        core = lambda: F.linear(a, b, bias)
    else:
        core = (lambda: torch.addmm(bias, a, b)) if bias is not None and a.dim() == 2 else (lambda: torch.matmul(a, b) + (bias if bias is not None else 0))
        if bias is None:
            core = lambda: torch.matmul(a, b)
    if gact != "none":  # dH = (dY W) * act'(Z), dbias = sum over rows
        z = R.t("aux", -1, 1)
        approx = "tanh" if gact == "gelu_tanh" else "none"

        def dgelu_bgrad():
            g = torch.ops.aten.gelu_backward(core(), z, approximate=approx)
            return g, g.sum(0) if R.b("has_bias_grad") else g
        return dgelu_bgrad
    if act == "gelu_tanh":
        return lambda: F.gelu(core(), approximate="tanh")
    if act == "gelu_erf":
        return lambda: F.gelu(core())
    if act == "relu":
        return lambda: F.relu(core())
    return core


def torch_bilinear(R, bwd, wrap=None):
    x1, x2, w = R.t("x1", -1, 1), R.t("x2", -1, 1), R.t("weight", -1, 1)
    b = R.t("bias", -1, 1) if R.has("bias") and R.b("has_bias") else None
    if not bwd:
        return lambda: F.bilinear(x1, x2, w, b)
    leaves = [leaf(x1), leaf(x2), leaf(w)] + ([leaf(b)] if b is not None else [])
    return grad_call(lambda *t: F.bilinear(t[0], t[1], t[2], t[3] if len(t) > 3 else None), leaves)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def torch_rope(R, bwd, wrap=lambda f: f):
    """HF transformers' composite (half pairing; partial rotary as HF does it) with cos / sin
    precomputed in q's dtype, or Meta's complex multiply (interleaved); q and k."""
    dt = DT[R.f["dtype"]]
    Sq, D = R.i("seq"), R.i("head_dim")
    Rd = R.i("rotary_dim", D) or D
    base = float(R.f.get("base", 10000.0))
    inv = 1.0 / (base ** (torch.arange(0, Rd, 2, device="cuda", dtype=torch.float32) / Rd))
    freqs = torch.outer(torch.arange(Sq, device="cuda", dtype=torch.float32), inv)
    bhsd = R.f.get("layout", "bshd") == "bhsd"
    expand = (lambda t: t[None, None, :, :]) if bhsd else (lambda t: t[None, :, None, :])
    if R.f.get("pairing", "half") == "interleaved":
        fc = expand(torch.polar(torch.ones_like(freqs), freqs))

        def fn(x):
            xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(xc * fc).flatten(-2).type_as(x)
    else:
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = expand(emb.cos().to(dt)), expand(emb.sin().to(dt))

        def fn(x):
            if Rd == D:
                return x * cos + rotate_half(x) * sin
            xr, xp = x[..., :Rd], x[..., Rd:]
            return torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)
    fn = wrap(fn)
    names = ("dq_out", "dk_out") if bwd else ("q", "k")
    ins = [R.t(n) for n in names if R.has(n)]
    if bwd:
        return grad_call(lambda *t: tuple(fn(x) for x in t), [leaf(x) for x in ins])
    return lambda: [fn(x) for x in ins]


def torch_conv1d(R, bwd, wrap=lambda f: f):
    """F.conv1d(groups=C, padding=W-1) + slice + SiLU, channel-last transposed in and out."""
    W, L, C = R.i("width"), R.i("seq"), R.i("channels")
    chan_last = R.f.get("layout", "bcl") == "blc"
    silu = R.f.get("activation", "none") == "silu"
    x = R.t("x")
    w = R.t("weight", -0.5, 0.5)
    b = R.t("bias", -0.5, 0.5) if R.b("has_bias") else None

    def fn(x, w, b=None):
        xc = x.transpose(1, 2) if chan_last else x
        y = F.conv1d(xc, w[:, None, :], b, padding=W - 1, groups=C)[..., :L]
        y = F.silu(y) if silu else y
        return y.transpose(1, 2) if chan_last else y
    fn = wrap(fn)
    if not bwd:
        return lambda: fn(x, w, b)
    return grad_call(fn, [leaf(x), leaf(w)] + ([leaf(b)] if b is not None else []))


def torch_conv1d_update(R, bwd, wrap=lambda f: f):
    """Mamba's reference decode step: cat(state, x), conv over the window, state <- last W-1."""
    W, C = R.i("width"), R.i("channels")
    n = R.i("seq", 1)
    B = R.i("batch")
    dt = DT[R.f["dtype"]]
    x = torch.empty(B, C, n, device="cuda", dtype=dt).uniform_(-2, 2)
    state = torch.empty(B, C, W - 1, device="cuda", dtype=dt).uniform_(-2, 2)
    w = R.t("weight", -0.5, 0.5)
    b = R.t("bias", -0.5, 0.5) if R.b("has_bias") else None
    silu = R.f.get("activation", "none") == "silu"

    def fn(x, state, w, b):
        full = torch.cat([state, x], dim=-1)
        state.copy_(full[..., -(W - 1):])
        y = F.conv1d(full, w[:, None, :], b, groups=C)[..., -n:]
        return F.silu(y) if silu else y
    fn = wrap(fn)
    return lambda: fn(x, state, w, b)


def draw_ids(dist, n, V):
    g = torch.Generator(device="cuda").manual_seed(11)
    if dist == "same":
        return torch.full((n,), min(7, V - 1), device="cuda", dtype=torch.int64)
    if dist.startswith("zipf"):
        s = float(dist[4:] or 1.1)
        p = torch.arange(1, V + 1, device="cuda", dtype=torch.float64).pow(-s)
        return torch.multinomial((p / p.sum()).float(), n, replacement=True, generator=g)
    return torch.randint(0, V, (n,), device="cuda", generator=g)


def torch_embedding(R, bwd, wrap=None):
    V, D, N = R.i("num_embeddings"), R.i("embedding_dim"), R.i("num_indices")
    dt = DT[R.f.get("dtype", "f32")]
    ids = draw_ids(option(R.r, "data", "uniform"), N, V)
    if not bwd:
        w = torch.empty(V, D, device="cuda", dtype=dt).uniform_(-1, 1)
        return lambda: F.embedding(ids, w)
    g = torch.empty(N, D, device="cuda", dtype=dt).uniform_(-1, 1)
    return lambda: torch.ops.aten.embedding_dense_backward(g, ids, V, -1, R.b("scale_grad_by_freq"))


def torch_embedding_bag(R, bwd, wrap=None):
    V, D, N, B = R.i("num_embeddings"), R.i("embedding_dim"), R.i("num_indices"), R.i("num_bags")
    dt = DT[R.f.get("dtype", "f32")]
    mode = {"sum": 0, "mean": 1, "max": 2}[R.f.get("mode", "mean")]
    ids = draw_ids(option(R.r, "data", "uniform"), N, V)
    offsets = torch.arange(B, device="cuda", dtype=torch.int64) * N // B
    w = torch.empty(V, D, device="cuda", dtype=dt).uniform_(-1, 1)
    if not bwd:
        return lambda: F.embedding_bag(ids, w, offsets, mode=R.f.get("mode", "mean"))
    out, offset2bag, bag_size, max_idx = torch.ops.aten._embedding_bag(w, ids, offsets, False, mode)
    g = torch.empty_like(out).uniform_(-1, 1)
    return lambda: torch.ops.aten._embedding_bag_dense_backward(g, ids, offset2bag, bag_size, max_idx, V, False, mode, None, -1)



def torch_row_loss(R, bwd, wrap=None):
    """F.multilabel_soft_margin_loss / F.cosine_embedding_loss / F.triplet_margin_loss with the same options and
    reduction; backward = torch.autograd.grad of it for every row input."""
    op, red = R.f.get("op", "multilabel_soft_margin"), R.f.get("reduction", "mean")
    if op == "multilabel_soft_margin":
        x = R.t("input")
        y = torch.randint(0, 2, x.shape, device="cuda").to(x.dtype)
        w = R.t("weight", 0.25, 2.0) if R.has("weight") else None
        f, xs = (lambda a: F.multilabel_soft_margin_loss(a, y, weight=w, reduction=red)), [x]
    elif op == "cosine_embedding":
        x1, x2 = R.t("input1"), R.t("input2")
        y = torch.randint(0, 2, x1.shape[:-1], device="cuda").to(x1.dtype) * 2 - 1
        m = float(R.f.get("margin", 0))
        f, xs = (lambda a, b: F.cosine_embedding_loss(a, b, y, margin=m, reduction=red)), [x1, x2]
    else:
        m, p, eps = float(R.f.get("margin", 1)), float(R.f.get("p", 2)), float(R.f.get("eps", 1e-6))
        sw = R.b("swap")
        f = lambda a, b, c: F.triplet_margin_loss(a, b, c, margin=m, p=p, eps=eps, swap=sw, reduction=red)
        xs = [R.t("anchor"), R.t("positive"), R.t("negative")]
    if not bwd:
        h = wrap(f) if wrap else f
        return lambda: h(*xs)
    if wrap:
        return None
    return grad_call(f, [leaf(x) for x in xs])


def torch_local_response_norm(R, bwd, wrap=None):
    """F.local_response_norm with the same size, alpha, beta, k (PyTorch's composite: pow, pad, avg_pool, mul, add,
    pow, div); backward = torch.autograd.grad of it."""
    size, a, b, k = R.i("size", 5), float(R.f.get("alpha", 1e-4)), float(R.f.get("beta", 0.75)), float(R.f.get("k", 1.0))
    x = R.t("input") if R.has("input") else R.t("dinput")
    f = lambda v: F.local_response_norm(v, size, a, b, k)
    if not bwd:
        h = wrap(f) if wrap else f
        return lambda: h(x)
    if wrap:
        return None
    return grad_call(f, [leaf(x)])


def torch_ctc_loss(R, bwd, wrap=None):
    """F.ctc_loss on log_softmax outputs with int64 CUDA targets (PyTorch's native CUDA kernel), every input length T,
    target lengths min(S, T / 2) (our --data=full); backward = torch.autograd.grad for log_probs (ctc_loss_backward)."""
    T, N, C, S = R.i("T"), R.i("N", 1), R.i("C"), R.i("max_target_length")
    dt = DT[R.f.get("dtype", "f32")]
    lp = torch.randn(T, N, C, device="cuda", dtype=torch.float32).log_softmax(-1).to(dt)
    blank, red, zi = R.i("blank", 0), R.f.get("reduction", "mean"), R.b("zero_infinity")
    tg = torch.randint(1, C, (N, S), device="cuda", dtype=torch.int64)
    il = torch.full((N,), T, device="cuda", dtype=torch.int64)
    tl = torch.full((N,), min(S, T // 2), device="cuda", dtype=torch.int64)
    f = lambda v: F.ctc_loss(v, tg, il, tl, blank=blank, reduction=red, zero_infinity=zi)
    if not bwd:
        h = wrap(f) if wrap else f
        return lambda: h(lp)
    if wrap:
        return None
    return grad_call(f, [leaf(lp)])


TORCH = {
    "pad": torch_pad, "pad_backward": torch_pad, "copy": torch_copy, "cat": torch_cat, "fill": torch_fill, "flip": torch_flip_roll, "roll": torch_flip_roll,
    "gather": torch_gather_scatter, "scatter": torch_gather_scatter, "nonzero": torch_nonzero, "triangle": torch_triangle,
    "unfold_backward": torch_unfold_backward,
    "elementwise": torch_elementwise, "elementwise_backward": torch_elementwise, "frexp": torch_frexp,
    "reduce_to_shape": torch_reduce, "reduce": torch_reduce_op, "reduce_backward": torch_reduce_op, "scan": torch_scan, "scan_backward": torch_scan, "gemm": torch_gemm, "bilinear": torch_bilinear, "bilinear_backward": torch_bilinear,
    "rope": torch_rope, "rope_backward": torch_rope, "causal_conv1d": torch_conv1d, "causal_conv1d_backward": torch_conv1d,
    "causal_conv1d_update": torch_conv1d_update, "embedding": torch_embedding, "embedding_backward": torch_embedding,
    "embedding_bag": torch_embedding_bag, "embedding_bag_backward": torch_embedding_bag,
    "softmax": torch_softmax, "softmax_backward": torch_softmax, "norm": torch_norm, "norm_backward": torch_norm,
    "channel_norm": torch_channel_norm, "channel_norm_backward": torch_channel_norm,
    "cross_entropy": torch_cross_entropy, "cross_entropy_backward": torch_cross_entropy,
    "pointwise_loss": torch_pointwise_loss, "pointwise_loss_backward": torch_pointwise_loss,
    "normalize": torch_normalize, "normalize_backward": torch_normalize,
    "fused_linear_cross_entropy": torch_fused_linear_cross_entropy,
    "fused_linear_cross_entropy_backward": torch_fused_linear_cross_entropy,
    "row_loss": torch_row_loss, "row_loss_backward": torch_row_loss, "ctc_loss": torch_ctc_loss, "ctc_loss_backward": torch_ctc_loss,
    "local_response_norm": torch_local_response_norm, "local_response_norm_backward": torch_local_response_norm,
}
# What each family's table says PyTorch ran.
TORCH_SIDE = {
    "pad": "F.pad; backward = torch.autograd.grad of it.",
    "copy": "Tensor.copy_ into a preallocated result of the same layout; cat: torch.cat / torch.stack(inputs, dim, out=) "
            "into a preallocated result; fill: Tensor.fill_, torch.arange / linspace / logspace / eye(..., out=); flip / roll: torch.flip / torch.roll (no out= form: a fresh result).",
    "elementwise": "the torch.* / F.* call (composites where PyTorch has no kernel: swiglu, geglu, reglu, glu, prelu, fma); "
                   "backward = torch.autograd.grad of it (a gradient that is grad_out itself is passed on by autograd; ours "
                   "binds it to grad_out, --alias, and a row with nothing else to write runs no pass: 'no pass').",
    "reduce": "reduce_to_shape: Tensor.sum / amax over the reduced dims; reduce: the torch function of the same name "
              "(torch.sum, mean, amax, argmax, logsumexp, linalg.vector_norm, var, std ...) over the same dims; scans: "
              "torch.cumsum / cumprod / cummax / cummin / logcumsumexp (reverse: flipped in and out), their backward "
              "autograd's (cumsum: flip + cumsum + flip).",
    "gemm": "F.linear (transpose_b) or torch.matmul; epilogues as F.gelu(F.linear(x, w, b)); dgelu + bias-grad as "
            "aten.gelu_backward(dY @ W, Z) and .sum(0); bilinear: F.bilinear and torch.autograd.grad of it.",
    "rope": "HF transformers' composite (q * cos + rotate_half(q) * sin, cos / sin precomputed in q's dtype; partial rotary "
            "as HF does it) or Meta's complex multiply (interleaved), on q and k; backward = torch.autograd.grad of it.",
    "conv1d": "F.conv1d(groups=C, padding=W-1) + slice + SiLU (channel-last: transposed in and out); backward = "
              "torch.autograd.grad for x, w and bias; update: Mamba's reference step (cat, conv, state copy).",
    "softmax": "torch.softmax / log_softmax / F.softmin over the same dim (dtype= for the half-to-float forms); backward = "
               "aten._softmax_backward_data / _log_softmax_backward_data (softmin: and its neg), the kernels autograd runs; "
               "torch.compile of the same calls.",
    "norm": "F.layer_norm / F.rms_norm over the same trailing axes (the fused residual: x + residual first, returning "
            "both, as the unfused pre-norm block); backward = aten.native_layer_norm_backward (dx, dweight, dbias) for "
            "layer_norm, torch.autograd.grad of F.rms_norm for rms_norm (no torch.compile figure); torch.compile of the "
            "forward and of the layer_norm backward call.",
    "channel_norm": "F.batch_norm / F.group_norm / F.instance_norm with the same options (running stats updated in "
                    "place); backward = aten.native_batch_norm_backward / native_group_norm_backward (the kernels autograd "
                    "runs; instance_norm: torch.autograd.grad, no compile figure); torch.compile of the same calls.",
    "loss": "F.cross_entropy / F.nll_loss with the same weight, ignore_index, reduction and label_smoothing (z_loss: plus "
            "z * logsumexp(x)^2 per sample); backward = torch.autograd.grad of it (nll_loss_backward and "
            "_log_softmax_backward_data); the element-wise losses: the F.*_loss of the same op, options and reduction, "
            "backward = torch.autograd.grad of it for every operand we differentiate; torch.compile of the forwards. "
            "fused_linear_cross_entropy: F.linear + F.cross_entropy and torch.autograd.grad for input, weight (and "
            "bias) — the unfused path it replaces; peak MiB: PyTorch's allocator peak over the call (outputs "
            "included) beside ours (workspace + outputs). Row losses: F.multilabel_soft_margin_loss / "
            "F.cosine_embedding_loss / F.triplet_margin_loss, backward torch.autograd.grad; ctc_loss: F.ctc_loss on int64 CUDA "
            "targets (the native kernel; cuDNN's needs CPU int32 targets), backward torch.autograd.grad for log_probs.",
    "local_response_norm": "F.local_response_norm with the same size, alpha, beta, k (PyTorch's composite of pow, pad, "
                           "avg_pool, mul, add, pow, div); backward = torch.autograd.grad of it; torch.compile of the forward.",
    "normalize": "F.normalize with the same p, dim and eps / torch._weight_norm (PyTorch's fused weight-norm kernel for "
                 "dim 0 and the last dim); backward = torch.autograd.grad of it; torch.compile of the forwards.",
    "embedding": "F.embedding / F.embedding_bag on int64 ids of the same distribution; backward = the aten dense backward "
                 "autograd runs (embedding_dense_backward, _embedding_bag_dense_backward); both of our backward forms "
                 "(sort: deterministic, scatter: atomic) beside the same PyTorch kernel.",
}


def median_us(fn, warm=3, reps=15):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)


COMPOSITES = {"rope", "rope_backward", "causal_conv1d", "causal_conv1d_backward", "causal_conv1d_update", "softmax",
              "softmax_backward", "norm", "norm_backward", "channel_norm", "channel_norm_backward", "cross_entropy", "cross_entropy_backward",
              "pointwise_loss", "pointwise_loss_backward", "normalize", "normalize_backward", "row_loss", "row_loss_backward",
              "local_response_norm", "local_response_norm_backward"}
# backward rows whose PyTorch call is the backward kernel itself (no autograd.grad): timed under
# torch.compile too
DIRECT_BACKWARD = {"softmax_backward", "norm_backward", "channel_norm_backward"}


def torch_times(r, compile_ops):
    """(eager us, torch.compile us or None) of PyTorch's counterpart of record r; compile_ops: the
    composite ops also timed under torch.compile."""
    builder = TORCH.get(r["op"])
    if builder is None:
        return None, None
    bwd = r["direction"] == "bwd"
    call = builder(Rec(r), bwd)
    if call is None:
        return None, None
    reps = 7 if r.get("ours_us", 0) > 20000 else 15
    eager = median_us(call, reps=reps)
    if r["op"] in PEAK_OPS:
        r["torch_peak_mib"] = peak_mib(call)
    del call
    comp = None
    # forward rows only: timed through autograd.grad, the compiled composite's backward measured
    # the eager time (2026-11-27), so backward rows carry no compile figure until that is fixed
    if r["op"] in COMPOSITES and r["op"] in compile_ops and (not bwd or r["op"] in DIRECT_BACKWARD):
        try:
            compiled = builder(Rec(r), bwd, wrap=lambda f: torch.compile(f, dynamic=False))
            comp = median_us(compiled, reps=reps) if compiled is not None else None
        except Exception as e:  # noqa: BLE001 - report and keep the eager number
            print("torch.compile failed:", r["op"], str(e)[:200])
    return eager, comp


def ours_peak_mib(r):
    """Our memory for a call: the workspace plus every output and in-out operand."""
    size = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "i32": 4, "i64": 8}
    out = 0
    for o in r["operands"]:
        if o["role"] != "in":
            n = 1
            for d in o["shape"]:
                n *= d
            out += n * size.get(o["dtype"], 4)
    return (r.get("workspace_bytes", 0) + out) / 2**20


def fmt(v, spec):
    return format(v, spec) if v is not None else "n/a"


def family_md(fam, rows, ours, args, device, torch_version):
    comp = any(o.get("torch_compile_us") for o in rows)
    graph = any(o.get("graph_us") for o in rows)
    lines = [f"# {fam}: baracuda vs PyTorch {torch_version} on {device}", "",
             f"Date {args.date}, commit {args.commit}; `baracuda_bench --batch bench/problems/perf/{fam}.txt --mode P` "
             f"beside `bench/torch_side_by_side.py` in the same run. Ceilings measured in the same run: device-to-device "
             f"copy {ours['copy_tbps']:.3f} TB/s (bytes read + written) for memory-bound rows, a bf16 8192³ GEMM "
             f"{ours['gemm_tflops']:.1f} TFLOP/s for compute-bound rows. Times: CUDA-event medians around one call "
             "after warm-up (ours: run() with its host checks). PyTorch: " + TORCH_SIDE.get(fam, "") +
             " Each row's repro line is in the JSON." + (" compile µs: torch.compile of the same composite." if comp else "")
             + (" graph µs: ours per call under CUDA graph replay (device time, no host checks or launch); host µs: run()'s "
                "host time per call (checks and launches, back-to-back calls), most of the gap between the two on short rows."
                if graph else ""), "",
             "| op | problem | options | ours µs | " + ("graph µs | host µs | " if graph else "") + "torch µs | "
             + ("compile µs | " if comp else "") + "speedup | achieved | of ceiling | sku |",
             "| --- | --- | --- | ---: | " + ("---: | ---: | " if graph else "") + "---: | " + ("---: | " if comp else "")
             + "---: | ---: | ---: | --- |"]
    for o in rows:
        ach = "no pass" if o["bytes"] == 0 and o["flops"] == 0 else f"{o['achieved']:.3f} {o['unit']}"
        frac = "no pass" if o["fraction_of_ceiling"] is None else f"{100 * o['fraction_of_ceiling']:.1f}%"
        sku = o["sku"].replace("|", "\\|")  # a composite's skus are '|'-joined
        lines.append(f"| {o['op']} | `{o['problem']}` | {o['options'] or ''} | {o['ours_us']:.1f} | "
                     + (f"{fmt(o.get('graph_us'), '.1f')} | {fmt(o.get('host_us'), '.1f')} | " if graph else "")
                     + f"{fmt(o['torch_us'], '.1f')} | "
                     + (f"{fmt(o.get('torch_compile_us'), '.1f')} | " if comp else "")
                     + f"{fmt(o['speedup_vs_torch'], '.2f')}x | {ach} | {frac} | {sku} |")
    sp = [o["speedup_vs_torch"] for o in rows if o["speedup_vs_torch"]]
    fr = [o["fraction_of_ceiling"] for o in rows if o["fraction_of_ceiling"]]
    if sp:
        slow = [o for o in rows if o["speedup_vs_torch"] and o["speedup_vs_torch"] < 1 - TIE]
        lines += ["", f"{len(rows)} rows. Speedup vs PyTorch: median {statistics.median(sp):.2f}x, min {min(sp):.2f}x, "
                  f"max {max(sp):.2f}x; {len(slow)} rows slower than PyTorch beyond the ±3 % tie band."]
        if fr:
            lines[-1] += f" Fraction of the ceiling: median {100 * statistics.median(fr):.1f}%, min {100 * min(fr):.1f}%."
        sc = [o["torch_compile_us"] / o["ours_us"] for o in rows if o.get("torch_compile_us")]
        if sc:
            lines[-1] += (f" Against torch.compile: median {statistics.median(sc):.2f}x, min {min(sc):.2f}x over {len(sc)} rows"
                          f" ({sum(1 for x in sc if x < 1 - TIE)} slower beyond the tie band).")
        for o in slow:
            lines.append(f"- slower: {o['op']} `{o['problem']}` {o['options']}: {o['speedup_vs_torch']:.2f}x")
    for o in rows:
        if o.get("torch_peak_mib"):
            lines.append(f"- peak memory: {o['op']} `{o['problem']}`: ours {o['peak_mib']:.0f} MiB (workspace + outputs), "
                         f"PyTorch {o['torch_peak_mib']:.0f} MiB: {o['peak_mib'] / o['torch_peak_mib']:.3f} of it")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True, help="baracuda_bench --json output")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--date", default="unknown")
    ap.add_argument("--compile", default="", help="ops whose composite is also timed under torch.compile (comma list)")
    ap.add_argument("--md-only", action="store_true", help="rewrite <out-dir>/<family>.md from its JSON (no GPU, no PyTorch)")
    args = ap.parse_args()
    ours = json.load(open(args.ours))
    if args.md_only:
        for f in sorted(os.listdir(args.out_dir)):
            fam = f[:-5]
            rows = json.load(open(os.path.join(args.out_dir, f))) if f.endswith(".json") else None
            if not rows or not isinstance(rows, list) or "problem" not in rows[0]:
                continue
            args.commit, args.date = rows[0]["commit"], rows[0]["date"]
            md = family_md(fam, rows, ours, args, rows[0]["device"], rows[0].get("torch_version", "?"))
            open(os.path.join(args.out_dir, fam + ".md"), "w").write(md)
        return
    device = torch.cuda.get_device_name(0)
    compile_ops = set(filter(None, args.compile.split(",")))
    fams = {}
    for r in ours["records"]:
        if r["status"] not in ("PERF", "PASSED") or r["ours_us"] <= 0:
            print("skipped (not timed):", r["op"], r["problem"], r["status"], r["reason"][:120])
            continue
        try:
            t, tc = torch_times(r, compile_ops)
        except Exception as e:  # an op PyTorch lacks in this form
            print("torch failed:", r["op"], r["problem"], str(e)[:200])
            t, tc = None, None
        torch.cuda.empty_cache()
        frac = r["fraction_of_ceiling"] if (r["bytes"] or r["flops"]) else None
        o = {"op": r["op"], "direction": r["direction"], "problem": r["problem"], "options": r["options"], "sku": r["sku"],
             "ours_us": round(r["ours_us"], 2), "torch_us": round(t, 2) if t else None,
             "torch_compile_us": round(tc, 2) if tc else None,
             "speedup_vs_torch": round(t / r["ours_us"], 3) if t else None,
             "bound": r["bound"], "bytes": r["bytes"], "flops": r["flops"], "achieved": round(r["achieved"], 4), "unit": r["unit"],
             "ceiling": round(r["ceiling"], 4), "fraction_of_ceiling": round(frac, 4) if frac else None,
             "graph_us": round(r["graph_us"], 2) if r.get("graph_us") else None,
             "host_us": round(r["host_us"], 2) if r.get("host_us") else None, "verified": r["verified"],
             "peak_mib": round(ours_peak_mib(r), 1) if r.get("torch_peak_mib") else None,
             "torch_peak_mib": round(r["torch_peak_mib"], 1) if r.get("torch_peak_mib") else None,
             "operands": r["operands"], "repro": r["repro"], "device": device, "torch_version": torch.__version__,
             "commit": args.commit, "date": args.date}
        fams.setdefault(r["family"], []).append(o)
        print(f"{o['op']:24s} {o['ours_us']:10.1f} us  torch {fmt(o['torch_us'], '10.1f')} us  {fmt(o['speedup_vs_torch'], '.2f')}x  "
              f"{o['problem'][:80]} {o['options']}", flush=True)
    os.makedirs(args.out_dir, exist_ok=True)
    for fam, rows in fams.items():
        json.dump(rows, open(os.path.join(args.out_dir, fam + ".json"), "w"), indent=1)
        md = family_md(fam, rows, ours, args, device, torch.__version__)
        open(os.path.join(args.out_dir, fam + ".md"), "w").write(md)
        print(md.splitlines()[-1] if md else "")


if __name__ == "__main__":
    main()
