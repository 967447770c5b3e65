#!/usr/bin/env python3
"""Instruction-issue table of elementwise rows, ours beside PyTorch, from Nsight Compute runs
(raw page, CSV) of baracuda_bench (BARACUDA_BENCH_PROFILE=1, one process per op and dtype:
ours_<op>_<dtype>.csv) and of torch_elementwise_profile.py (torch.csv, each row's kernels after a
spin_kernel marker), for the rows of rows.json (the order torch_elementwise_profile.py ran them).

  python3 bench/ncu_issue_table.py --rows rows.json --dir ncu/ --out-json issue.json --out-md issue.md

Per row and side: kernel time (sum over the row's kernels), warp instructions executed, issue
slots busy (smsp__issue_active, % of peak over active cycles, time-weighted), warps active
(% of peak), threads per warp instruction (divergence), the busiest pipe, DRAM throughput.
A row whose issue slots are busy >= 80 % is bound by its instruction count: its time can only
drop with fewer instructions per element.
"""
import argparse
import csv
import json
import os

PIPES = {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "fma",
         "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active": "alu",
         "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active": "xu",
         "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active": "fp64",
         "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active": "lsu"}


def num(v):
    try:
        return float(v.replace(",", ""))
    except (ValueError, AttributeError):
        return None


def kernels(path):
    """[(name, {metric: value})] in launch order; times in us."""
    if not os.path.exists(path):
        return []
    lines = [l for l in open(path) if l.startswith('"')]
    rd = list(csv.reader(lines))
    if len(rd) < 3:
        return []
    head, units = rd[0], rd[1]
    out = []
    for row in rd[2:]:
        m = {h: num(v) for h, v in zip(head, row)}
        for h, u in zip(head, units):
            if h == "gpu__time_duration.sum" and m.get(h) is not None:
                m[h] *= {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(u, 1e-3)
        out.append((row[head.index("Kernel Name")], m))
    return out


def combine(ks):
    """One row's kernels as one: times and instructions summed, percentages time-weighted."""
    if not ks:
        return None
    t = sum(m["gpu__time_duration.sum"] for _, m in ks)
    agg = {"us": t, "kernels": len(ks), "inst": sum(m.get("sm__inst_executed.sum") or 0 for _, m in ks)}

    def tw(key):
        vals = [(m["gpu__time_duration.sum"], m.get(key)) for _, m in ks if m.get(key) is not None]
        return sum(a * b for a, b in vals) / sum(a for a, _ in vals) if vals else None
    agg["issue"] = tw("smsp__issue_active.avg.pct_of_peak_sustained_active")
    agg["warps"] = tw("sm__warps_active.avg.pct_of_peak_sustained_active")
    agg["threads_per_inst"] = tw("smsp__thread_inst_executed_per_inst_executed.ratio")
    agg["dram"] = tw("dram__throughput.avg.pct_of_peak_sustained_elapsed")
    agg["regs"] = max((m.get("launch__registers_per_thread") or 0) for _, m in ks)
    pipes = {name: tw(k) for k, name in PIPES.items()}
    pipes = {k: v for k, v in pipes.items() if v is not None}
    agg["pipe"], agg["pipe_pct"] = max(pipes.items(), key=lambda kv: kv[1]) if pipes else (None, None)
    return agg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out-json", required=True)
    ap.add_argument("--out-md", required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--date", default="")
    ap.add_argument("--device", default="NVIDIA H200")
    a = ap.parse_args()
    rows = json.load(open(a.rows))
    # PyTorch: split on the marker
    groups, cur = [], None
    for name, m in kernels(os.path.join(a.dir, "torch.csv")):
        if "spin_kernel" in name:
            cur = []
            groups.append(cur)
        elif cur is not None:
            cur.append((name, m))
    out = []
    for i, r in enumerate(rows):
        mine = [(n, m) for n, m in kernels(os.path.join(a.dir, f"ours_{r['op']}_{r['dtype']}.csv"))
                if ("Bwd<" in n) == (r["direction"] == "bwd")]
        rec = {k: r[k] for k in ("op", "direction", "dtype", "shape", "variant")}
        rec["ours"] = combine(mine)
        rec["torch"] = combine(groups[i]) if i < len(groups) else None
        rec.update(device=a.device, commit=a.commit, date=a.date)
        out.append(rec)
    json.dump(out, open(a.out_json, "w"), indent=1)
    n_el = lambda r: r["shape"][0] if len(r["shape"]) == 1 else r["shape"][0] * r["shape"][1]
    lines = ["| op | dir | dtype | ours us | torch us | ours inst / elem | torch | ours issue busy % | torch | "
             "ours threads / inst | busiest pipe (ours) % | ours regs |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    f = lambda v, d=1: "n/a" if v is None else f"{v:.{d}f}"
    for r in out:
        o, t = r["ours"] or {}, r["torch"] or {}
        e = n_el(r) / 32.0  # instructions per element: warp instructions x 32 / elements
        lines.append(f"| {r['op']} | {r['direction']} | {r['dtype']} | {f(o.get('us'))} | {f(t.get('us'))} | "
                     f"{f(o.get('inst', 0) / e if o else None, 2)} | {f(t.get('inst', 0) / e if t else None, 2)} | "
                     f"{f(o.get('issue'))} | {f(t.get('issue'))} | {f(o.get('threads_per_inst'))} | "
                     f"{o.get('pipe') or 'n/a'} {f(o.get('pipe_pct'))} | {f(o.get('regs'), 0)} |")
    open(a.out_md, "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
