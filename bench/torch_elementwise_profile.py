#!/usr/bin/env python3
"""Runs PyTorch's counterpart of chosen benchmark rows once each, for Nsight Compute:

  ncu --profile-from-start off --csv --page details ... \
      python3 bench/torch_elementwise_profile.py --rows rows.json

rows.json: a JSON array of rows of docs/perf/<family>.json (op, direction, problem, options,
operands). Each row's call (after one warm-up) runs alone between cudaProfilerStart and
cudaProfilerStop, preceded by torch.cuda._sleep's spin kernel, which marks where the row's
kernels begin in ncu's output (ncu_issue_table.py splits on it).
"""
import argparse
import json

import torch

from torch_side_by_side import TORCH, Rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", required=True)
    rows = json.load(open(ap.parse_args().rows))
    for r in rows:
        fn = TORCH[r["op"]](Rec(r), r["direction"] == "bwd")
        fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        torch.cuda._sleep(1000)
        fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print("row", r["op"], r["problem"], r["options"], flush=True)
        del fn
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
