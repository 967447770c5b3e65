import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def ci_problems():
    """(op, problem) of bench/problems/ci: every row of the op table, as the C++ suites run it."""
    out = []
    for f in sorted((ROOT / "bench" / "problems" / "ci").glob("*.txt")):
        for line in f.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            op, _, problem = line.partition(" ")
            problem = " ".join(t for t in problem.split() if not t.startswith("--"))  # case options: the harness's
            out.append((op, problem))
    return out


def has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


gpu = pytest.mark.skipif(not has_gpu(), reason="no GPU (or no PyTorch): the device tier runs in scripts/device-check.sh")
