#!/usr/bin/env python3
"""Times PyTorch's counterpart of every RoPE record of baracuda_bench (--rope-json) on the same GPU,
in the same run, and writes docs/perf/rope.{json,md} in the shape of performance.md section 5.

The PyTorch side is the usual composite with cos/sin precomputed (their cost is not counted):
  half pairing : HF transformers  q * cos + rotate_half(q) * sin  (cos/sin [S, D] in q's dtype),
                 partial rotary as HF does it (rotate q[..., :R], concatenate q[..., R:])
  interleaved  : Meta's reference  view_as_complex(q.float().reshape(..., -1, 2)) * freqs_cis
backward = torch.autograd.grad of the composite for q and k. torch.compile of the same composite
(forward and backward) is timed too where it compiles: it fuses the work into one kernel.
"""
import json

import torch

from torch_side_by_side import (DTYPES, eager_compile_record, eager_compile_rows, eager_compile_table, load_run,
                                median_us, write_md)  # shared by every family


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_half(x, cos, sin, r):
    if r == x.shape[-1]:
        return x * cos + rotate_half(x) * sin
    xr, xp = x[..., :r], x[..., r:]
    return torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)


def apply_interleaved(x, freqs_cis):
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs_cis).flatten(-2).type_as(x)


def make_fn(r):
    dt = DTYPES[r["dtype"]]
    S, Hq, Hk, D, R = r["S"], r["Hq"], r["Hk"], r["D"], r["R"]
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, R, 2, device="cuda", dtype=torch.float32) / R))
    freqs = torch.outer(torch.arange(S, device="cuda", dtype=torch.float32), inv_freq)  # [S, R/2]
    q = torch.empty(1, S, Hq, D, device="cuda", dtype=dt).uniform_(-2, 2)
    k = torch.empty(1, S, Hk, D, device="cuda", dtype=dt).uniform_(-2, 2) if Hk else None
    if r["pairing"] == "interleaved":
        fc = torch.polar(torch.ones_like(freqs), freqs)[None, :, None, :]
        fn = lambda a: apply_interleaved(a, fc)
    else:
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos().to(dt)[None, :, None, :]
        sin = emb.sin().to(dt)[None, :, None, :]
        fn = lambda a: apply_half(a, cos, sin, R)
    return fn, q, k


def time_case(r, compiled):
    fn, q, k = make_fn(r)
    if compiled:
        fn = torch.compile(fn, dynamic=False)
    ins = [q] + ([k] if k is not None else [])
    if r["direction"] == "fwd":
        with torch.no_grad():
            return median_us(lambda: [fn(a) for a in ins], warm=3, reps=30)
    ins = [a.detach().requires_grad_(True) for a in ins]
    outs = [fn(a) for a in ins]
    grads = [torch.empty_like(o).uniform_(-1, 1) for o in outs]
    return median_us(lambda: torch.autograd.grad(outs, ins, grads, retain_graph=True), warm=3, reps=30)


def main():
    args, ours, device = load_run()
    out = []
    for r in ours["records"]:
        t_eager = time_case(r, False)
        try:
            t_comp = time_case(r, True)
        except Exception as e:  # noqa: BLE001 - report and keep the eager number
            print(f"torch.compile failed for {r['case']} {r['direction']}: {e}")
            t_comp = None
        variant = (f"{r['case']} k=[{r['S']},{r['Hk']},{r['D']}] R={r['R']} {r['pairing']}"
                   + (" cache" if r["cache"] else "") + (" in-place" if r["in_place"] else ""))
        out.append(eager_compile_record("rope", r, variant, t_eager, t_comp, device, args))
        print(out[-1])
    json.dump(out, open(args.out_json, "w"), indent=1)
    lines = [
        f"# rope: baracuda vs PyTorch {torch.__version__} on {device}",
        "",
        f"Date {args.date}, commit {args.commit}. Ceiling = device-to-device copy measured in the same run: "
        f"{ours['copy_tbps']:.3f} TB/s (bytes read + written). Host overhead of run(): "
        f"{ours['host_overhead_us']:.2f} us/call. Layout [B=1, S, H, D]; q shape listed, k as in the variant. "
        "PyTorch: the eager composite with precomputed cos/sin, and torch.compile of it.",
        "",
        *eager_compile_table("q shape"),
    ]
    lines += eager_compile_rows(out)
    write_md(args.out_md, lines, out, "PyTorch eager")


if __name__ == "__main__":
    main()
