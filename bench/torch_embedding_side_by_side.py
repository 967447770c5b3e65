#!/usr/bin/env python3
"""Times PyTorch's counterpart of every embedding / embedding_bag record of baracuda_bench
(--emb-json) on the same GPU, in the same run, and writes docs/perf/embedding.{json,md}.

PyTorch side (ids drawn from the same distributions, int64):
  embedding fwd:      F.embedding(ids, weight)
  embedding bwd:      torch.ops.aten.embedding_dense_backward(grad, ids, V, -1, False)
                      (what autograd runs for a dense weight gradient)
  embedding_bag fwd:  F.embedding_bag(ids, weight, offsets, mode="sum")
  embedding_bag bwd:  torch.ops.aten._embedding_bag_dense_backward on the forward's offset2bag /
                      bag_size (what autograd runs)
Both of our backward forms (sort = deterministic, scatter = atomic) are compared with the same
PyTorch time.
"""
import json

import torch
import torch.nn.functional as F

from torch_side_by_side import DTYPES, eager_compile_record, eager_compile_rows, eager_compile_table, load_run, median_us, write_md


def make_ids(dist, n, V):
    g = torch.Generator(device="cuda").manual_seed(11)
    if dist == "equal":
        return torch.full((n,), 7, device="cuda", dtype=torch.int64)
    if dist == "uniform":
        return torch.randint(0, V, (n,), device="cuda", generator=g)
    k = torch.arange(1, V + 1, device="cuda", dtype=torch.float64)
    p = k.pow(-1.1)
    return torch.multinomial((p / p.sum()).float(), n, replacement=True, generator=g)


def time_case(r):
    dt = DTYPES[r["dtype"]]
    V, D, N, B = r["V"], r["D"], r["N"], r["B"]
    ids = make_ids(r["dist"], N, V)
    w = torch.empty(V, D, device="cuda", dtype=dt).uniform_(-1, 1)
    bwd = r["direction"].startswith("bwd")
    if r["op"] == "embedding":
        if not bwd:
            return median_us(lambda: F.embedding(ids, w), warm=3, reps=20)
        g = torch.empty(N, D, device="cuda", dtype=dt).uniform_(-1, 1)
        return median_us(lambda: torch.ops.aten.embedding_dense_backward(g, ids, V, -1, False), warm=3, reps=20)
    offsets = torch.arange(0, N, N // B, device="cuda", dtype=torch.int64)
    if not bwd:
        return median_us(lambda: F.embedding_bag(ids, w, offsets, mode="sum"), warm=3, reps=20)
    out, offset2bag, bag_size, max_idx = torch.ops.aten._embedding_bag(w, ids, offsets, False, 0)
    g = torch.empty_like(out).uniform_(-1, 1)
    return median_us(lambda: torch.ops.aten._embedding_bag_dense_backward(
        g, ids, offset2bag, bag_size, max_idx, V, False, 0, None, -1), warm=3, reps=20)


def main():
    args, ours, device = load_run()
    out, cache = [], {}
    for r in ours["records"]:
        key = (r["op"], r["dist"], r["dtype"], "bwd" if r["direction"].startswith("bwd") else "fwd")
        if key not in cache:
            cache[key] = time_case(r)
            torch.cuda.empty_cache()
        variant = f"{r['dist']} N={r['N']}" + (f" bags={r['B']}" if r["op"] == "embedding_bag" else "")
        rec = eager_compile_record(r["op"], r, variant, cache[key], None, device, args)
        rec["direction"] = r["direction"]
        rec["random_row_read_tbps"] = r.get("row_read_tbps")  # N random table rows read, same run
        out.append(rec)
        print(rec)
    json.dump(out, open(args.out_json, "w"), indent=1)
    lines = [
        f"# embedding / embedding_bag: baracuda vs PyTorch {torch.__version__} on {device}",
        "",
        f"Date {args.date}, commit {args.commit}. Ceiling = device-to-device copy measured in the same run: "
        f"{ours['copy_tbps']:.3f} TB/s (bytes read + written). Shapes are the table [V, D]. Bytes are the ideal an "
        "implementation must move: forward = gathered rows read + output written + ids; backward = every dweight "
        "row written + dout read + ids. bwd_sort is our deterministic backward (CUB radix sort), bwd_scatter the "
        "atomic one; both are compared with PyTorch's one dense backward. Random-row read ceiling (same run, "
        "bench_ceilings.cu: the case's N rows of its table read at random places): "
        + ", ".join(sorted({f"{r['D'] * (2 if r['dtype'] != 'f32' else 4)} B rows {r['row_read_tbps']:.3f} TB/s"
                            for r in ours["records"] if r.get("row_read_tbps")})) + ".",
        "",
        *eager_compile_table("table [V, D]"),
    ]
    lines += eager_compile_rows(out)
    write_md(args.out_md, lines, out, "PyTorch eager")


if __name__ == "__main__":
    main()
