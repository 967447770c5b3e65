#!/usr/bin/env python3
"""Times PyTorch's counterpart of every baracuda_bench record on the same GPU, in the same run,
and writes the side-by-side results in the shape of performance.md section 5.

  python3 bench/torch_side_by_side.py --ours bench.json --out-json pad.json --out-md pad.md \
      --commit abc1234 --date 2026-11-21

pad records: forward is F.pad(x, pads, mode); backward is the autograd backward of it
(torch.autograd.grad(y, x, dy)), which is what a training step pays.
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32, "f16": torch.float16, "f64": torch.float64}


def median_us(fn, warm=5, reps=50):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)


def torch_pad_us(rec):
    mode = rec["op"].split("_", 1)[1]
    dt = DTYPES[rec["dtype"]]
    x = torch.empty(rec["shape"], device="cuda", dtype=dt).uniform_(-2, 2)
    pads = list(rec["pads"])
    if rec["direction"] == "fwd":
        return median_us(lambda: F.pad(x, pads, mode=mode))
    xr = x.detach().requires_grad_(True)
    y = F.pad(xr, pads, mode=mode)
    dy = torch.empty_like(y).uniform_(-1, 1)
    return median_us(lambda: torch.autograd.grad(y, xr, dy, retain_graph=True))


def load_run(extra_args=()):
    """The arguments every side-by-side script takes, our raw benchmark JSON, and the GPU's name.
    extra_args: (flag, default) pairs a family adds."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--out-json", required=True)
    ap.add_argument("--out-md", required=True)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--date", default="unknown")
    for flag, default in extra_args:
        ap.add_argument(flag, default=default)
    args = ap.parse_args()
    return args, json.load(open(args.ours)), torch.cuda.get_device_name(0)


def eager_compile_record(op, r, variant, t_eager, t_comp, device, args):
    """One side-by-side record of a memory-bound family timed against PyTorch eager and (when
    t_comp is not None) torch.compile."""
    return {
        "op": op, "direction": r["direction"], "dtype": r["dtype"], "shape": r["shape"], "variant": variant,
        "ours_us": round(r["ours_us"], 2), "torch_us": round(t_eager, 2),
        "torch_compile_us": round(t_comp, 2) if t_comp else None,
        "speedup_vs_torch": round(t_eager / r["ours_us"], 3),
        "speedup_vs_torch_compile": round(t_comp / r["ours_us"], 3) if t_comp else None,
        "bound": "memory", "achieved": round(r["achieved"], 3), "unit": "TB/s", "ceiling": round(r["ceiling"], 3),
        "fraction_of_ceiling": round(r["achieved"] / r["ceiling"], 3), "device": device,
        "commit": args.commit, "date": args.date, "sku": r["sku"], "verified": r["verified"],
    }


def eager_compile_table(shape_label):
    """Header of the table eager_compile_rows fills."""
    return [f"| dir | dtype | {shape_label} | variant | ours us | torch us | compile us | vs eager | vs compile | TB/s | of copy |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]


def eager_compile_rows(out):
    rows = []
    for o in out:
        comp = f"{o['torch_compile_us']:.1f}" if o["torch_compile_us"] else "n/a"
        vsc = f"{o['speedup_vs_torch_compile']:.2f}x" if o["speedup_vs_torch_compile"] else "n/a"
        rows.append(f"| {o['direction']} | {o['dtype']} | {o['shape']} | {o['variant']} | {o['ours_us']:.1f} | "
                    f"{o['torch_us']:.1f} | {comp} | {o['speedup_vs_torch']:.2f}x | {vsc} | "
                    f"{o['achieved']:.2f} | {100 * o['fraction_of_ceiling']:.1f}% |")
    return rows


def write_md(path, lines, out, label="PyTorch"):
    """Appends the min/median/max speedup line to a family's table, writes it and prints it."""
    sp = sorted(o["speedup_vs_torch"] for o in out)
    if sp:
        lines += ["", f"Speedup vs {label}: min {sp[0]:.2f}x, median {statistics.median(sp):.2f}x, max {sp[-1]:.2f}x."]
    open(path, "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    args, ours, device = load_run([("--family", "pad")])
    out = []
    for r in ours["records"]:
        if not r["op"].startswith(args.family):
            continue
        t_us = torch_pad_us(r)
        out.append({
            "op": r["op"], "direction": r["direction"], "dtype": r["dtype"], "shape": r["shape"],
            "variant": r["variant"], "ours_us": round(r["ours_us"], 2), "torch_us": round(t_us, 2),
            "speedup_vs_torch": round(t_us / r["ours_us"], 3), "bound": "memory",
            "achieved": round(r["achieved"], 3), "unit": "TB/s", "ceiling": round(r["ceiling"], 3),
            "fraction_of_ceiling": round(r["achieved"] / r["ceiling"], 3), "device": device,
            "commit": args.commit, "date": args.date, "sku": r["sku"], "verified": r["verified"],
        })
    json.dump(out, open(args.out_json, "w"), indent=1)
    lines = [
        f"# {args.family}: baracuda vs PyTorch {torch.__version__} on {device}",
        "",
        f"Date {args.date}, commit {args.commit}. Ceiling = device-to-device copy measured in the same run: "
        f"{ours['copy_tbps']:.3f} TB/s (bytes read + written). Host overhead of run(): "
        f"{ours['host_overhead_us']:.2f} us/call. Times are CUDA-event medians of 50 runs after warm-up.",
        "",
        "| op | dir | dtype | shape | variant | ours us | torch us | speedup | TB/s | of copy |",
        "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for o in out:
        lines.append(f"| {o['op']} | {o['direction']} | {o['dtype']} | {o['shape']} | {o['variant']} | "
                     f"{o['ours_us']:.1f} | {o['torch_us']:.1f} | {o['speedup_vs_torch']:.2f}x | "
                     f"{o['achieved']:.2f} | {100 * o['fraction_of_ceiling']:.1f}% |")
    write_md(args.out_md, lines, out)


if __name__ == "__main__":
    main()
