#!/usr/bin/env python3
"""Times PyTorch's counterpart of every elementwise record of baracuda_bench (--ew-json) on the
same GPU in the same run, and writes docs/perf/elementwise.{json,md} (performance.md section 5).

  python3 bench/torch_elementwise_side_by_side.py --ours ew.json --out-json elementwise.json \
      --out-md elementwise.md --commit abc1234 --date 2026-11-22

Forward: the torch.* / F.* call on tensors of the same shapes, strides and values range.
Backward: torch.autograd.grad of that call with a random grad_output (what training pays).
"""
import json
import statistics

import torch
import torch.nn.functional as F

from torch_side_by_side import load_run, median_us  # shared by every family

DT = {"bf16": torch.bfloat16, "f32": torch.float32, "f16": torch.float16, "f64": torch.float64, "i32": torch.int32}
S = torch.special

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
    "frexp": lambda x: torch.frexp(x)[0], "frexp2": torch.frexp, "polygamma": lambda x: torch.polygamma(1, x), "log_ndtr": S.log_ndtr, "entr": S.entr, "relu": torch.relu, "relu6": F.relu6,
    "leaky_relu": F.leaky_relu, "rrelu": lambda x: F.rrelu(x, training=False), "elu": F.elu, "selu": F.selu, "celu": F.celu,
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu, "mish": F.mish,
    "logsigmoid": F.logsigmoid, "hardsigmoid": F.hardsigmoid, "hardswish": F.hardswish, "hardtanh": F.hardtanh,
    "hardshrink": F.hardshrink, "softshrink": F.softshrink, "tanhshrink": F.tanhshrink, "softplus": F.softplus,
    "softsign": F.softsign, "threshold": lambda x: F.threshold(x, 0.5, 0.0),
}
BINARY = {
    "zeta": S.zeta, "igamma": torch.igamma, "igammac": torch.igammac, "xlogy": torch.xlogy, "xlog1py": S.xlog1py, "prelu": lambda a, w: torch.where(a > 0, a, w * a),
    "glu": lambda a, b: a * torch.sigmoid(b), "swiglu": lambda a, b: F.silu(a) * b, "geglu": lambda a, b: F.gelu(a) * b,
    "reglu": lambda a, b: F.relu(a) * b, "add": torch.add, "sub": torch.sub, "rsub": torch.rsub, "mul": torch.mul,
    "div": torch.div, "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"), "remainder": torch.remainder, "fmod": torch.fmod,
    "pow": torch.pow, "float_power": torch.float_power, "atan2": torch.atan2, "hypot": torch.hypot,
    "copysign": torch.copysign, "ldexp": torch.ldexp, "logaddexp": torch.logaddexp, "logaddexp2": torch.logaddexp2,
    "maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin,
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


def make(shape, stride, dt, boolean=False):
    if boolean:
        return torch.rand(shape, device="cuda") > 0.5
    if dt == torch.int32:
        return torch.randint(-30, 31, shape, device="cuda", dtype=dt)
    if stride:  # the transposed layout of the benchmark: strides (1, rows)
        t = torch.empty(list(reversed(shape)), device="cuda", dtype=dt).uniform_(0.25, 2.0)
        return t.t()
    return torch.empty(shape, device="cuda", dtype=dt).uniform_(0.25, 2.0)


def operands(r):
    dt = DT[r["dtype"]]
    op, v, shape = r["op"], r["variant"], r["shape"]
    ar = 1 if op in UNARY else (2 if op in BINARY else 3)
    if v in ("contiguous", "latency [4096, 4096]"):
        shapes, strided = [shape] * ar, [False] * ar
    elif v == "row-broadcast [n]":
        shapes, strided = [shape, [shape[1]]], [False, False]
    elif v == "column-broadcast [m,1]":
        shapes, strided = [shape, [shape[0], 1]], [False, False]
    elif v == "strided (transposed a)":
        shapes, strided = [shape, shape], [True, False]
    elif v == "strided (transposed)":
        shapes, strided = [shape], [True]
    elif v == "row-broadcast other":
        shapes, strided = [shape, shape, [shape[1]]], [False, False, False]
    elif v == "halves of [m, 2h]":
        m, h = shape
        x = make([m, 2 * h], False, dt)
        return list(x.chunk(2, dim=-1))
    else:
        raise ValueError(v)
    out = []
    for k in range(ar):
        boolean = (op == "where" and k == 0) or (op == "masked_fill" and k == 1)
        out.append(make(shapes[k], strided[k], dt, boolean))
    return out


def torch_fn(op):
    return UNARY.get(op) or BINARY.get(op) or TERNARY.get(op)


NO_GRAD = {"igamma": {0}, "igammac": {0}}  # PyTorch has no derivative in a (operand 0), nor do we


def call_of(r):
    """PyTorch's counterpart of record r as a callable (None where PyTorch has none). Backward:
    torch.autograd.grad of the forward call with a random grad_output."""
    op = r["op"]
    if op.startswith("to_"):
        target = {"to_f32": torch.float32, "to_bf16": torch.bfloat16, "to_f8e4m3": torch.float8_e4m3fn}[op]
        x = make(r["shape"], False, DT[r["dtype"]])
        return lambda: x.to(target)
    fn = torch_fn(op)
    if fn is None:
        return None
    xs = operands(r)
    if r["direction"] == "fwd":
        if r["variant"] == "strided (transposed)":  # same work as ours: a contiguous result
            y = torch.empty(r["shape"], device="cuda", dtype=xs[0].dtype)
            return lambda: torch.exp(xs[0], out=y)
        return lambda: fn(*xs)
    leaves = [x.detach().requires_grad_(x.is_floating_point() and k not in NO_GRAD.get(op, set())) for k, x in enumerate(xs)]
    y = fn(*leaves)
    g = torch.empty_like(y).uniform_(-1, 1)
    need = [x for x in leaves if x.requires_grad]
    return lambda: torch.autograd.grad(y, need, g, retain_graph=True)


def torch_us(r):
    call = call_of(r)
    return None if call is None else median_us(call, warm=3, reps=15)


def main():
    a, recs, dev = load_run()
    out = []
    for r in recs:
        try:
            t = torch_us(r)
        except Exception as e:  # an op PyTorch lacks in this form
            print("torch failed:", r["op"], r["dtype"], r["variant"], str(e)[:120])
            t = None
        rec = {
            "op": r["op"], "direction": r["direction"], "dtype": r["dtype"], "shape": r["shape"], "variant": r["variant"],
            "ours_us": r["ours_us"], "torch_us": t,
            **({"ours_graph_us": r["graph_us"]} if r.get("graph_us") else {}), "speedup_vs_torch": (t / r["ours_us"]) if t else None, "bound": "memory",
            # achieved 0: every gradient is grad_out (passed on, no pass at all), as in PyTorch
            "achieved": r["achieved"] or None, "unit": "TB/s", "ceiling": r["ceiling"],
            "fraction_of_ceiling": (r["achieved"] / r["ceiling"]) if r["achieved"] else None,
            "sku": r["sku"], "device": dev, "commit": a.commit, "date": a.date,
        }
        out.append(rec)
        torch.cuda.empty_cache()
    with open(a.out_json, "w") as f:
        json.dump(out, f, indent=1)
    lines = [f"# Elementwise family on {dev} ({a.date}, commit {a.commit})", "",
             f"Copy ceiling measured in the same run: {out[0]['ceiling']:.3f} TB/s. Bytes = each operand read once + each result "
             "written once (backward: grad_out and the operands its derivative reads, the gradients written; a gradient that is "
             "grad_out itself is passed on, as PyTorch's autograd does, and a backward with only those runs nothing: "
             "'no pass'). PyTorch 2.11 eager, same shapes "
             "and value ranges; backward = torch.autograd.grad of the same call.", "",
             "| op | dir | dtype | shape | variant | ours µs | torch µs | speedup | TB/s | % of copy |",
             "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in out:
        tu = f"{r['torch_us']:.1f}" if r["torch_us"] else "n/a"
        sp = f"{r['speedup_vs_torch']:.2f}x" if r["speedup_vs_torch"] else "n/a"
        bw = (f"{r['achieved']:.3f} | {100 * r['fraction_of_ceiling']:.1f}" if r["achieved"] else "no pass | no pass")
        lines.append(f"| {r['op']} | {r['direction']} | {r['dtype']} | {r['shape']} | {r['variant']} | {r['ours_us']:.1f} | {tu} | {sp} | "
                     f"{bw} |")
    sp = [r["speedup_vs_torch"] for r in out if r["speedup_vs_torch"]]
    fr = [r["fraction_of_ceiling"] for r in out if r["variant"] == "contiguous" and r["fraction_of_ceiling"]]
    contig = f" Contiguous cases: median {100 * statistics.median(fr):.1f}% of copy, minimum {100 * min(fr):.1f}%." if fr else ""
    lines += ["", f"Median speedup vs PyTorch: {statistics.median(sp):.2f}x over {len(sp)} cases; "
              f"{sum(1 for s in sp if s < 1.0)} cases slower than PyTorch.{contig}"]
    with open(a.out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[-1:]))


if __name__ == "__main__":
    main()
