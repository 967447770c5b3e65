#!/usr/bin/env python3
"""Times PyTorch's counterpart of every causal conv1d record of baracuda_bench (--conv1d-json) on the
same GPU, in the same run, and writes docs/perf/causal_conv1d.{json,md} (performance.md section 5).
The decode-step records (direction "update") are timed against Mamba's reference update.

PyTorch side, as a framework without a fused kernel writes it:
  F.silu(F.conv1d(x_bcl, w[:, None, :], bias, padding=W-1, groups=C)[..., :L])
with x_bcl = x for the channel-first layout and x.transpose(1, 2) for channel-last (the output is
transposed back, a view). backward = torch.autograd.grad for x, w and bias (cuDNN's depthwise
conv backward under it). torch.compile of the same function is timed too where it compiles.
"""
import json

import torch
import torch.nn.functional as F

from torch_side_by_side import (DTYPES, eager_compile_record, eager_compile_rows, eager_compile_table, load_run,
                                median_us, write_md)  # shared by every family


def make(r):
    dt = DTYPES[r["dtype"]]
    B, L, C, W = r["B"], r["L"], r["C"], r["W"]
    shape = (B, C, L) if r["layout"] == "bcl" else (B, L, C)
    x = torch.empty(shape, device="cuda", dtype=dt).uniform_(-2, 2)
    w = torch.empty(C, W, device="cuda", dtype=dt).uniform_(-0.5, 0.5)
    b = torch.empty(C, device="cuda", dtype=dt).uniform_(-0.5, 0.5)
    chan_last = r["layout"] == "blc"

    def fn(x, w, b):
        xc = x.transpose(1, 2) if chan_last else x
        y = F.silu(F.conv1d(xc, w[:, None, :], b, padding=W - 1, groups=C)[..., :L])
        return y.transpose(1, 2) if chan_last else y

    return fn, x, w, b


def make_update(r):
    """The decode step as a framework writes it without a fused kernel (Mamba's reference update):
    append the token to the state, run the conv over the window, keep the last W-1 inputs."""
    dt = DTYPES[r["dtype"]]
    B, n, C, W = r["B"], r["L"], r["C"], r["W"]
    x = torch.empty(B, C, n, device="cuda", dtype=dt).uniform_(-2, 2)
    state = torch.empty(B, C, W - 1, device="cuda", dtype=dt).uniform_(-2, 2)
    w = torch.empty(C, W, device="cuda", dtype=dt).uniform_(-0.5, 0.5)
    b = torch.empty(C, device="cuda", dtype=dt).uniform_(-0.5, 0.5)

    def fn(x, state, w, b):
        full = torch.cat([state, x], dim=-1)
        state.copy_(full[..., -(W - 1):])
        return F.silu(F.conv1d(full, w[:, None, :], b, groups=C)[..., -n:])

    return fn, x, state, w, b


def time_case(r, compiled):
    if r["direction"] == "update":
        fn, x, state, w, b = make_update(r)
        if compiled:
            fn = torch.compile(fn, dynamic=False)
        with torch.no_grad():
            return median_us(lambda: fn(x, state, w, b), warm=3, reps=50)
    fn, x, w, b = make(r)
    if compiled:
        fn = torch.compile(fn, dynamic=False)
    if r["direction"] == "fwd":
        with torch.no_grad():
            return median_us(lambda: fn(x, w, b), warm=3, reps=20)
    ins = [t.detach().requires_grad_(True) for t in (x, w, b)]
    y = fn(*ins)
    g = torch.empty_like(y).uniform_(-1, 1)
    return median_us(lambda: torch.autograd.grad(y, ins, g, retain_graph=True), warm=3, reps=20)


def main():
    args, ours, device = load_run([("--compile", "bf16")])  # dtypes to time torch.compile on ("none": skip)
    out = []
    for r in ours["records"]:
        t_eager = time_case(r, False)
        t_comp = None
        if r["dtype"] in args.compile.split(","):
            try:
                t_comp = time_case(r, True)
            except Exception as e:  # noqa: BLE001 - report and keep the eager number
                print(f"torch.compile failed for {r['case']} {r['direction']}: {e}")
        variant = f"decode n={r['L']} W={r['W']} silu bias" if r["direction"] == "update" else f"{r['layout']} W={r['W']} silu bias"
        out.append(eager_compile_record("causal_conv1d", r, variant, t_eager, t_comp, device, args))
        print(out[-1])
    json.dump(out, open(args.out_json, "w"), indent=1)
    lines = [
        f"# causal_conv1d: baracuda vs PyTorch {torch.__version__} on {device}",
        "",
        f"Date {args.date}, commit {args.commit}. Ceiling = device-to-device copy measured in the same run: "
        f"{ours['copy_tbps']:.3f} TB/s (bytes read + written). Shapes are [B, L, C]; bytes: forward x + y, "
        "backward x + dy + dx, update (decode step, shapes [B, n, C]) x + y + the state read and written. "
        "Our backward is the deterministic one (fixed-order partial sums, no atomics). "
        "PyTorch: F.conv1d(groups=C, padding=W-1) + slice + SiLU; update: cat(state, x), state copy, "
        "F.conv1d(groups=C) + slice + SiLU; eager and torch.compile. Times are CUDA events around one call, "
        "so a step of a few microseconds includes launch gaps on both sides.",
        "",
        *eager_compile_table("[B, L, C]"),
    ]
    lines += eager_compile_rows(out)
    graph = [r for r in ours["records"] if r.get("graph_us")]
    if graph:  # performance.md 2.3: device time under graph replay, host overhead of run() apart
        lines += ["", "Device time under CUDA graph replay (10 calls per graph, per call; no host checks or launches) "
                  "beside the eager time above; their difference is run()'s host and launch overhead. Same-size copy: "
                  "a device-to-device cudaMemcpyAsync moving the same bytes, timed eager as ours (one call between "
                  "two events), so it pays the same per-call launch latency; 'eager of it' is its time / ours.", "",
                  "| dir | dtype | [B, L, C] | layout | eager us | graph us | host + launch us | graph TB/s | graph of copy "
                  "| same-size copy us | eager of it |",
                  "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in graph:
            tb = r["bytes"] / (r["graph_us"] * 1e-6) / 1e12
            cp = (f"{r['copy_us']:.1f} | {100 * r['copy_us'] / r['ours_us']:.1f}%" if r.get("copy_us") else "n/a | n/a")
            lines.append(f"| {r['direction']} | {r['dtype']} | {r['shape']} | {r['layout']} | {r['ours_us']:.1f} | "
                         f"{r['graph_us']:.1f} | {r['ours_us'] - r['graph_us']:.1f} | {tb:.2f} | "
                         f"{100 * tb / ours['copy_tbps']:.1f}% | {cp} |")
        for o, r in zip(out, ours["records"]):
            for k in ("graph_us", "copy_us"):
                if r.get(k):
                    o[k] = round(r[k], 2)
        json.dump(out, open(args.out_json, "w"), indent=1)
    write_md(args.out_md, lines, out, "PyTorch eager")


if __name__ == "__main__":
    main()
