#!/usr/bin/env python3
"""Bitwise comparison of baracuda's elementwise forward results with PyTorch's on the same GPU.

  ./build/bench/baracuda_bench --family ew-parity --parity-dir /tmp/parity
  python3 bench/torch_elementwise_parity.py --dir /tmp/parity --out-json parity.json \
      --out-md parity.md --commit abc1234 --date 2026-11-23

For every case of DIR/cases.json (written by bench/bench_ew_parity.cpp: every bf16 / f16 bit
pattern, 65536 f32, f64 and i32 values, scalar operands on either side, casts) it runs the PyTorch
call on the same inputs (Python numbers where ours had Scalar operands, as a user writes them)
and counts the elements whose bits differ (NaN against NaN counts as equal; +0 against -0 does
not), with the largest distance in units in the last place. A case PyTorch rejects is listed
as such. Composite rows (PyTorch has no fused kernel: swiglu, geglu, reglu, fma, prelu on a
full weight) compare against the composite a user would write, so they may differ by roundings
of the intermediate.
"""
import argparse
import faulthandler
import json
import mmap
import os
import sys
import time

import torch
import torch.nn.functional as F

from torch_side_by_side import UNARY, BINARY, TERNARY  # the op -> torch call table

DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64, "i32": torch.int32,
      "i64": torch.int64, "bool": torch.bool, "f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2,
      "i8": torch.int8, "u8": torch.uint8, "i16": torch.int16}
INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


# Ops whose call needs the case's parameters (p = the four descriptor parameters; None = NaN).
WITH_PARAMS = {
    "clamp": lambda p, x: torch.clamp(x, p[0], p[1]),
    "threshold": lambda p, x: F.threshold(x, p[0], p[1]),
    "hardshrink": lambda p, x: F.hardshrink(x, p[0]),
    "softshrink": lambda p, x: F.softshrink(x, p[0]),
    "hardtanh": lambda p, x: F.hardtanh(x, p[0], p[1]),
    "leaky_relu": lambda p, x: F.leaky_relu(x, p[0]),
    "rrelu": lambda p, x: F.rrelu(x, p[0], p[1], training=False),
    "elu": lambda p, x: F.elu(x, p[0]),
    "celu": lambda p, x: F.celu(x, p[0]),
    "softplus": lambda p, x: F.softplus(x, p[0], p[1]),
    "nan_to_num": lambda p, x: torch.nan_to_num(x, p[0], p[1], p[2]),
    "logit": lambda p, x: torch.logit(x, p[0]),
    "round": lambda p, x: torch.round(x, decimals=int(p[0] or 0)),
    "polygamma": lambda p, x: torch.polygamma(int(p[0]), x),
    "add": lambda p, a, b: torch.add(a, b, alpha=p[0]),
    "sub": lambda p, a, b: torch.sub(a, b, alpha=p[0]),
    "rsub": lambda p, a, b: torch.rsub(a, b, alpha=p[0]),
    "lerp_scalar": lambda p, a, b: torch.lerp(a, b, p[0]),
    "masked_fill": lambda p, x, m: x.masked_fill(m, p[0]),
    "addcmul": lambda p, a, b, c: torch.addcmul(a, b, c, value=p[0]),
    "addcdiv": lambda p, a, b, c: torch.addcdiv(a, b, c, value=p[0]),
    "isclose": lambda p, a, b: torch.isclose(a, b, rtol=p[0], atol=p[1], equal_nan=bool(p[2])),
    "glu": lambda p, a, b: F.glu(torch.cat([a, b], dim=-1), dim=-1),
}
COMPOSITE = {"swiglu", "geglu", "geglu_tanh", "reglu", "fma", "prelu"}
INT_PARAM_OPS = {"add", "sub", "rsub", "addcmul", "addcdiv", "masked_fill", "clamp"}


def torch_call(case):
    op = case["op"]
    if op == "to":
        return None
    p = case["params"]
    if op in WITH_PARAMS:
        if case["dtype"] == "i32" and op in INT_PARAM_OPS:  # integer data: integer parameters
            p = [int(v) if v is not None and v == int(v) else v for v in p]
        fn = WITH_PARAMS[op]
        return lambda *xs: fn(p, *xs)
    return UNARY.get(op) or BINARY.get(op) or TERNARY.get(op)


def load_inputs(case, buf, device):
    args = []
    for inp in case["inputs"]:
        if "scalar" in inp:
            v = inp["scalar"]
            args.append(bool(v) if inp.get("bool") else (int(v) if inp.get("int") else float(v)))
            continue
        dt = DT[inp["dtype"]]
        es = torch.empty(0, dtype=dt).element_size()
        raw = torch.frombuffer(buf, dtype=torch.uint8, count=case["n"] * es, offset=inp["offset"])
        t = raw.view(dt) if dt != torch.bool else raw.to(torch.bool)
        args.append(t.to(device))
    return args


def as_zero_dim(x):
    if isinstance(x, bool):
        return torch.tensor(x)  # noqa: the bool first: bool is an int
    if isinstance(x, int):
        return torch.tensor(x, dtype=torch.int64)
    if isinstance(x, float):
        return torch.tensor(x, dtype=torch.float64)
    return x


def ours_output(case, buf):
    dt = DT[case["out"]["dtype"]]
    es = torch.empty(0, dtype=dt).element_size()
    raw = torch.frombuffer(buf, dtype=torch.uint8, count=case["n"] * es, offset=case["out"]["offset"])
    return raw.view(dt) if dt != torch.bool else raw.to(torch.bool)


def ordered(bits, nbits):
    """Sign-magnitude float bits -> integers ordered like the values (int64)."""
    b = bits.to(torch.int64)
    if nbits < 64:
        b = b & ((1 << nbits) - 1)
    mag = b & ((1 << (nbits - 1)) - 1)
    return torch.where(((b >> (nbits - 1)) & 1) == 1, -mag, mag)


def compare(ours, theirs, skip=None):
    """(mismatching elements, max ulp distance or None, signed-zero-only mismatches, mask). On theirs'
    device. Elements where `skip` is set are not compared."""
    ours, theirs = ours.to(theirs.device).contiguous(), theirs.contiguous()
    keep = ~skip if skip is not None else torch.ones_like(theirs, dtype=torch.bool)
    if ours.dtype == torch.bool or not ours.dtype.is_floating_point:
        diff = (ours != theirs) & keep
        return int(diff.sum()), None, 0, diff
    iv = INT_VIEW[ours.element_size()]
    ob, tb = ours.view(iv), theirs.view(iv)
    both_nan = torch.isnan(ours.float()) & torch.isnan(theirs.float())
    diff = (ob != tb) & ~both_nan & keep
    n = int(diff.sum())
    if n == 0:
        return 0, 0, 0, diff
    nbits = 8 * ours.element_size()
    dist = (ordered(ob, nbits).double() - ordered(tb, nbits).double()).abs()  # no int64 wrap across signs
    nan_any = torch.isnan(ours.float()) | torch.isnan(theirs.float())
    finite_diff = diff & ~nan_any
    max_ulp = int(dist[finite_diff].max()) if bool(finite_diff.any()) else None
    zeros = int((diff & (ours.float() == 0) & (theirs.float() == 0)).sum())
    return n, max_ulp, zeros, diff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out-json", required=True)
    ap.add_argument("--out-md", required=True)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--date", default="unknown")
    ap.add_argument("--device", default="cuda", help="cpu: check the script's plumbing without a GPU (not PyTorch's CUDA numerics)")
    ap.add_argument("--only", default="", help="compare only cases whose 'op dtype form' contains this")
    a = ap.parse_args()
    trace = os.environ.get("BARACUDA_PARITY_TRACE") is not None  # each case to stderr before it runs
    cases = json.load(open(f"{a.dir}/cases.json"))
    if a.only:
        cases = [c for c in cases if a.only in f"{c['op']} {c['dtype']} {c['form']}"]
    f = open(f"{a.dir}/data.bin", "rb")
    buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    out = []
    t0 = time.time()
    try:
        for i, c in enumerate(cases):
            if i % 500 == 0:
                print(f"case {i} of {len(cases)}, {time.time() - t0:.0f} s", flush=True)
                if i:
                    finish(out, a, len(cases), True, quiet=True)  # a later hang still leaves the table so far
            if trace:
                print(f"{i} {c['op']} {c['dtype']} {c['form']} {c['inputs']}", file=sys.stderr, flush=True)
            faulthandler.dump_traceback_later(60, exit=False)  # a case stuck in PyTorch prints where
            t1 = time.time()
            compare_case(c, buf, a, out)
            if time.time() - t1 > 10:
                print(f"slow case {i}: {c['op']} {c['dtype']} {c['form']}: {time.time() - t1:.1f} s", flush=True)
        faulthandler.cancel_dump_traceback_later()
    except KeyboardInterrupt:  # `timeout -s INT`: keep what was compared
        print(f"interrupted after {len(out)} of {len(cases)} cases", flush=True)
    partial = len(out) < len(cases)
    finish(out, a, len(cases), partial)


def long_loop_guard(c, xs):
    """Elements PyTorch cannot finish: its zeta walks the -q terms of a negative non-integer q one
    by one (with an integer x), up to 2^52 steps in f64, which hangs the GPU. Ours sums them in
    closed form past q < -1024, so those elements differ by design. Returns (inputs with a
    harmless q there, mask of the elements not to compare) or (xs, None)."""
    if c["op"] != "zeta" or not torch.is_tensor(xs[1]):
        return xs, None
    x, q = xs
    xf = x if torch.is_tensor(x) else torch.tensor(x, dtype=torch.float64, device=q.device)
    qd, xd = q.double(), xf.double()
    skip = (qd < -1024) & (qd != torch.floor(qd)) & (xd == torch.floor(xd))
    skip = skip.expand(q.shape) if skip.dim() else skip
    if not bool(skip.any()):
        return xs, None
    return [x, torch.where(skip, torch.full_like(q, 1.5), q)], skip


def compare_case(c, buf, a, out):
    rec = {"op": c["op"], "form": c["form"], "dtype": c["dtype"], "out_dtype": c["out"]["dtype"], "n": c["n"],
           "scalars": [i["scalar"] for i in c["inputs"] if "scalar" in i], "composite": c["op"] in COMPOSITE}
    xs = load_inputs(c, buf, a.device)
    xs, skip = long_loop_guard(c, xs)
    if skip is not None:
        rec["not_compared"] = int(skip.sum())
    fn = (lambda x: x.to(DT[c["out"]["dtype"]])) if c["op"] == "to" else torch_call(c)
    if fn is None:
        rec["status"] = "no PyTorch counterpart in the table"
        out.append(rec)
        return
    try:  # only PyTorch's call: a failure of our loader or comparison must not hide here
        y = fn(*xs)
    except Exception as e:  # PyTorch takes no Python number in this position
        if not any(isinstance(x, (bool, int, float)) for x in xs):
            rec["status"] = "torch rejects: " + str(e).split("\n")[0][:100]
            out.append(rec)
            return
        # The form a user writes instead: a 0-dim CPU tensor (f64 / i64 / bool, as PyTorch wraps
        # a Python number), which the CUDA kernels read through the same cpu-scalar path.
        # Ops that want every operand on the GPU get it there; ops that want one dtype get the
        # tensors' own (rounded to it, as torch.tensor(v, dtype=x.dtype) is).
        tdt = next(x.dtype for x in xs if torch.is_tensor(x))
        tries = [("0-dim tensor", lambda x: as_zero_dim(x)),
                 ("0-dim cuda tensor", lambda x: as_zero_dim(x).to(a.device)),
                 ("0-dim cuda tensor of the data's dtype", lambda x: as_zero_dim(x).to(a.device, tdt))]
        y = None
        for how, conv in tries:
            try:
                xs2 = [conv(x) if isinstance(x, (bool, int, float)) else x for x in xs]
                y = fn(*xs2)
                xs, rec["scalar_as"] = xs2, how
                break
            except Exception as e2:
                err = str(e2).split("\n")[0][:100]
        if y is None:
            rec["status"] = "torch rejects: " + err
            out.append(rec)
            return
    if isinstance(y, tuple):  # frexp: the mantissa
        y = y[0]
    ours = ours_output(c, buf)
    if y.dtype != ours.dtype:
        rec["status"] = f"dtype differs: torch {str(y.dtype).replace('torch.', '')}"
        out.append(rec)
        return
    n, ulp, zeros, diff = compare(ours, y.reshape(-1), skip)
    rec.update({"status": "ok", "mismatches": n, "max_ulp": ulp, "signed_zero_only": zeros})
    if n:
        ex = []
        idx = diff.nonzero().reshape(-1)[:2].tolist()
        if ulp:  # and the element of the largest distance
            dist = (ordered(ours.to(y.device).contiguous().view(INT_VIEW[ours.element_size()]), 8 * ours.element_size()).double() -
                    ordered(y.reshape(-1).contiguous().view(INT_VIEW[ours.element_size()]), 8 * ours.element_size()).double()).abs()
            dist[~diff | torch.isnan(y.reshape(-1).double()) | torch.isnan(ours.to(y.device).double())] = -1
            idx.append(int(dist.argmax()))
        for i in idx:
            ins = [(x if not torch.is_tensor(x) else (x.item() if x.dim() == 0 else x[i].item())) for x in xs]
            ex.append({"inputs": [repr(v) for v in ins], "ours": repr(ours[i].item()), "torch": repr(y.reshape(-1)[i].item())})
        rec["examples"] = ex
    out.append(rec)


def finish(out, a, total, partial, quiet=False):
    dev = torch.cuda.get_device_name() if a.device == "cuda" else a.device
    for r in out:
        r.update({"device": dev, "commit": a.commit, "date": a.date})
    with open(a.out_json, "w") as fo:
        json.dump(out, fo, indent=1)

    compared = [r for r in out if r.get("status") == "ok"]
    exact = [r for r in compared if r["mismatches"] == 0]
    elems = sum(r["n"] for r in compared)
    bad = sum(r["mismatches"] for r in compared)
    lines = [f"# Elementwise forward: bitwise parity with PyTorch on {dev} ({a.date}, commit {a.commit})", "",
             (f"**Partial run: {len(out)} of {total} cases.** " if partial else "") +
             f"{len(compared)} cases compared ({len(out) - len(compared)} not comparable, listed at the end); "
             f"{len(exact)} bitwise identical; {bad} of {elems} elements differ ({100.0 * bad / max(elems, 1):.4f} %). "
             "Inputs: every bf16 / f16 bit pattern, 65536 f32, f64 and i32 values; binary ops also with a Python scalar on either "
             "side (where PyTorch takes no Python number there, as a 0-dim tensor: on the CPU, else on the GPU, else of the data's dtype, as named in the form column). NaN against NaN counts as "
             "equal, +0 against -0 does not. zeta: elements with q < -1024 non-integer and x an integer are not compared "
             "(PyTorch walks -q terms one by one, which does not finish; ours sums them in closed form). "
             "Examples: the first two differing elements and the one of the largest distance.", "",
             "## Cases with differences", "",
             "| op | dtype | form | scalars | differing | max ulp | ±0 only | example (inputs -> ours / torch) |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | --- |"]
    for r in sorted((r for r in compared if r["mismatches"]), key=lambda r: (r["op"], r["dtype"], r["form"])):
        e = r["examples"][0]
        tag = " (composite)" if r["composite"] else ""
        lines.append(f"| {r['op']}{tag} | {r['dtype']} | {r['form']}{' (' + r['scalar_as'] + ')' if r.get('scalar_as') else ''} | {r['scalars'] or ''} | {r['mismatches']} | "
                     f"{r['max_ulp'] if r['max_ulp'] is not None else 'NaN'} | {r['signed_zero_only']} | "
                     f"{', '.join(e['inputs'])} -> {e['ours']} / {e['torch']} |")
    per_op = {}
    for r in compared:
        per_op.setdefault(r["op"], []).append(r)
    ok_ops = sorted(op for op, rs in per_op.items() if all(r["mismatches"] == 0 for r in rs))
    lines += ["", f"## Ops bitwise identical in every compared case ({len(ok_ops)})", "", ", ".join(ok_ops), "",
              "## Not comparable", "", "| op | dtype | form | scalars | why |", "| --- | --- | --- | --- | --- |"]
    for r in out:
        if r.get("status") != "ok":
            lines.append(f"| {r['op']} | {r['dtype']} | {r['form']} | {r['scalars'] or ''} | {r['status']} |")
    with open(a.out_md, "w") as fo:
        fo.write("\n".join(lines) + "\n")
    if not quiet:
        print("\n".join(lines[:3]))


if __name__ == "__main__":
    main()
