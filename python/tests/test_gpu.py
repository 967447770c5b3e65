"""The package on the GPU: every op of the table runs through Python (the CI problems, inputs
from PyTorch), results against PyTorch, autograd + gradcheck, torch.compile, CUDA graphs, JAX,
and the call overhead beside PyTorch's."""
import time

import math

import pytest

from conftest import ci_problems, gpu

pytestmark = gpu

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import baracuda  # noqa: E402
import baracuda.torch as bt  # noqa: E402


def _fill(spec, gen):
    dt = bt.torch_dtype(spec["dtype"])
    shape = spec["shape"]
    if spec["strides"] is not None:
        t = torch.empty_strided(shape, spec["strides"], dtype=dt, device="cuda")
    else:
        t = torch.empty(shape, dtype=dt, device="cuda")
    if dt.is_floating_point:
        t.copy_(torch.empty(shape, dtype=torch.float32, device="cuda").uniform_(-1, 1, generator=gen).to(dt))
    elif dt == torch.bool:
        t.copy_(torch.randint(0, 2, shape, device="cuda", generator=gen).bool())
    else:
        t.zero_()  # indices / offsets 0: valid for every op that reads them
    return t


@pytest.mark.parametrize("op,problem", ci_problems())
def test_every_ci_problem_runs_from_python(op, problem):
    """Every row through the low-level API: allocate what the plan reports, run, sync, no error."""
    p = baracuda.select(op, problem)
    gen = torch.Generator(device="cuda").manual_seed(0)
    views = {}
    for spec in p.operands:  # optional ones too: the CI problems ask for every gradient
        views[spec["name"]] = _fill(spec, gen)
    ws = torch.empty(p.workspace_size, dtype=torch.uint8, device="cuda") if p.workspace_size else None
    try:
        p(views, workspace=ws, stream=torch.cuda.current_stream())
    except baracuda.Error as e:
        if "offsets" in e.message or "indices" in e.message:
            pytest.skip(f"zero-filled index operands are not valid for this problem: {e.message}")
        raise
    torch.cuda.synchronize()


def _close(ours, ref, dtype):
    tol = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    torch.testing.assert_close(ours, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_elementwise_against_torch(dtype):
    x = torch.randn(33, 65, device="cuda", dtype=dtype)
    y = torch.randn(65, device="cuda", dtype=dtype)
    _close(bt.elementwise("add", x, y), x + y, dtype)
    _close(bt.elementwise("mul", x, y), x * y, dtype)
    _close(bt.elementwise("silu", x), F.silu(x), dtype)
    _close(bt.elementwise("exp", x), torch.exp(x), dtype)
    xt = x.t()  # any strides
    _close(bt.elementwise("tanh", xt), torch.tanh(xt), dtype)
    _close(bt.elementwise("mul", x, 2.5), x * 2.5, dtype)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_against_torch(mode):
    x = torch.randn(2, 3, 17, 9, device="cuda")
    pad = (2, 3, 1, 4)
    ref = F.pad(x, pad, mode=mode, value=0.5) if mode == "constant" else F.pad(x, pad, mode=mode)
    ours = bt.pad(x, pad, mode=mode, value=0.5 if mode == "constant" else None)
    assert torch.equal(ours, ref)


def test_embedding_and_linear_against_torch():
    w = torch.randn(100, 64, device="cuda")
    idx = torch.randint(0, 100, (7, 9), device="cuda")
    assert torch.equal(bt.embedding(idx, w), F.embedding(idx, w))
    x = torch.randn(5, 11, 64, device="cuda")
    lw = torch.randn(48, 64, device="cuda")
    b = torch.randn(48, device="cuda")
    torch.testing.assert_close(bt.linear(x, lw, b), F.linear(x, lw, b), rtol=1e-4, atol=1e-4)
    offsets = torch.tensor([0, 3, 3, 10], device="cuda")
    flat = torch.randint(0, 100, (12,), device="cuda")
    for mode in ("sum", "mean", "max"):
        torch.testing.assert_close(bt.embedding_bag(flat, w, offsets, mode=mode),
                                   F.embedding_bag(flat, w, offsets, mode=mode), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- autograd

def test_gradcheck_float64():
    x = torch.randn(3, 5, device="cuda", dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, 5, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bt.elementwise("mul", a, b), (x, y))
    assert torch.autograd.gradcheck(lambda a: bt.elementwise("silu", a), (x,))
    assert torch.autograd.gradcheck(lambda a: bt.elementwise("tanh", a), (x,))
    assert torch.autograd.gradcheck(lambda a: bt.pad(a, (1, 2, 2, 1), mode="reflect"), (x,))
    w = torch.randn(10, 4, device="cuda", dtype=torch.float64, requires_grad=True)
    idx = torch.randperm(10, device="cuda")[:6]  # distinct rows: the gradient sums no duplicates
    assert torch.autograd.gradcheck(lambda ww: bt.embedding(idx, ww), (w,))
    lw = torch.randn(4, 5, device="cuda", dtype=torch.float64, requires_grad=True)
    lb = torch.randn(4, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, ww, bb: bt.linear(a, ww, bb), (x, lw, lb))
    cx = torch.randn(2, 4, 9, device="cuda", dtype=torch.float64, requires_grad=True)
    cw = torch.randn(4, 3, device="cuda", dtype=torch.float64, requires_grad=True)
    cb = torch.randn(4, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, ww, bb: bt.causal_conv1d(a, ww, bb, activation="silu"), (cx, cw, cb))


def test_backward_matches_torch_in_a_model():
    torch.manual_seed(0)
    x = torch.randn(8, 32, device="cuda", requires_grad=True)
    w = torch.randn(16, 32, device="cuda", requires_grad=True)
    ours = bt.elementwise("silu", bt.linear(x, w)).sum()
    ours.backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    F.silu(F.linear(x, w)).sum().backward()
    torch.testing.assert_close(gx, x.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(gw, w.grad, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- compile, graphs, JAX

def test_torch_compile_fullgraph():
    def f(x, y):
        return bt.elementwise("silu", bt.pad(x, (1, 1)) * 2) + y

    x = torch.randn(4, 6, device="cuda")
    y = torch.randn(4, 8, device="cuda")
    cf = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(cf(x, y), F.silu(F.pad(x, (1, 1)) * 2) + y, rtol=1e-5, atol=1e-5)


def test_cuda_graph_replay():
    x = torch.randn(64, 64, device="cuda")
    bt.elementwise("exp", x)  # registers and selects outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = bt.elementwise("exp", x)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.exp(x))


def test_jax_round_trip():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX has no GPU backend here")
    import baracuda.jax as bj
    a = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    r = bj.call("elementwise", op="mul", operand=[a, a], in_=[a, a])["out"]
    assert jnp.allclose(r, a * a)
    pad = bj.call("pad", dtype="f32", mode="constant", rank=2, in_shape=[3, 4], pad_low=[1, 0], pad_high=[0, 2], x=a)["y"]
    assert pad.shape == (4, 6) and jnp.allclose(pad[1:, :4], a)


def test_call_overhead_beside_torch(capsys):
    """Python call overhead of a 1-element add, eager (ours vs torch) and under graph replay."""
    a = torch.ones(1, device="cuda")
    b = torch.ones(1, device="cuda")
    p = baracuda.select("elementwise", "op=add operand=f32[1],f32[1]")
    out = torch.empty(1, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream

    def timeit(f, n=2000):
        for _ in range(100):
            f()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / n * 1e6

    ours_plan = timeit(lambda: p._p.run({"in": [a, b], "out": out}, 0, 0, stream, -1))
    bound = p.bind(in_=[a, b], out=out)._b
    ours_bound = timeit(lambda: bound.run(0, 0, stream))
    ours_fn = timeit(lambda: bt.elementwise("add", a, b))
    theirs = timeit(lambda: torch.add(a, b))

    def per_call_in_graph(f, n=100):  # n calls captured once, the graph replayed: per-call GPU time
        f()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n):
                f()
        return timeit(g.replay, 200) / n

    graph_ours = per_call_in_graph(lambda: p._p.run({"in": [a, b], "out": out}, 0, 0, torch.cuda.current_stream().cuda_stream, -1))
    graph_theirs = per_call_in_graph(lambda: torch.add(a, b, out=out))
    with capsys.disabled():
        print(f"\n[overhead] under CUDA-graph replay, per call: ours {graph_ours:.2f} us, torch.add {graph_theirs:.2f} us")
        print(f"[overhead] add on 1 element: plan call {ours_plan:.1f} us, bound plan {ours_bound:.1f} us, "
              f"baracuda.torch.elementwise {ours_fn:.1f} us, torch.add {theirs:.1f} us")
    assert ours_plan < 100 and ours_fn < 500  # sanity; the figures go in the note


# ---------------------------------------------------------------- gradcheck of every differentiable op

# Inputs where each op is smooth (default: (0.2, 0.8), inside every function's domain but these)
DOMAIN = {"acosh": (1.2, 2.0), "polygamma": (0.5, 2.0), "lgamma": (0.5, 2.0), "digamma": (0.5, 2.0)}
# Operands that are not floating data: where's condition, masked_fill's mask
BOOL_OPERAND = {("where", 0), ("masked_fill", 1)}


def _ew_inputs(name, arity, mask):
    lo, hi = DOMAIN.get(name, (0.2, 0.8))
    gen = torch.Generator(device="cuda").manual_seed(hash(name) % 1000)
    xs = []
    for i in range(arity):
        if (name, i) in BOOL_OPERAND:
            xs.append(torch.rand(3, 4, device="cuda", generator=gen) > 0.5)
        else:
            t = torch.empty(3, 4, dtype=torch.float64, device="cuda").uniform_(lo, hi, generator=gen)
            xs.append(t.requires_grad_(bool(mask >> i & 1)))
    return xs


@pytest.mark.parametrize("name,arity,mask", [e for e in baracuda._C.elementwise_ops() if e[2]],
                         ids=[e[0] for e in baracuda._C.elementwise_ops() if e[2]])
def test_gradcheck_every_elementwise_op(name, arity, mask):
    xs = _ew_inputs(name, arity, mask)
    kw = {"out_dtype": torch.float64} if name == "to" else {}
    diff = [i for i, x in enumerate(xs) if x.requires_grad]

    def f(*d):
        args = list(xs)
        for i, t in zip(diff, d):
            args[i] = t
        return bt.elementwise(name, *args, **kw)

    assert torch.autograd.gradcheck(f, [xs[i] for i in diff])


def test_gradcheck_rope_bilinear_embedding_bag():
    q = torch.randn(1, 5, 2, 8, device="cuda", dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 5, 1, 8, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bt.rope(a, b, layout="bshd", batch=1, seq=5, heads_q=2, heads_k=1,
                                                         head_dim=8), (q, k))
    x1 = torch.randn(4, 3, device="cuda", dtype=torch.float64, requires_grad=True)
    x2 = torch.randn(4, 5, device="cuda", dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 3, 5, device="cuda", dtype=torch.float64, requires_grad=True)
    bias = torch.randn(2, device="cuda", dtype=torch.float64, requires_grad=True)
    out = torch.empty(4, 2, dtype=torch.float64, device="meta")
    assert torch.autograd.gradcheck(
        lambda a, b, ww, bb: bt.call("bilinear", x1=a, x2=b, weight=ww, bias=bb, out=out, has_bias=True)["out"],
        (x1, x2, w, bias))
    table = torch.randn(10, 4, device="cuda", dtype=torch.float64, requires_grad=True)
    idx = torch.randperm(10, device="cuda")[:8]
    offsets = torch.tensor([0, 3, 5], device="cuda")
    for mode in ("sum", "mean", "max"):
        assert torch.autograd.gradcheck(lambda t: bt.embedding_bag(idx, t, offsets, mode=mode), (table,))


def test_modules_match_torch():
    torch.manual_seed(0)
    lin = bt.Linear(16, 8, device="cuda")
    ref = torch.nn.Linear(16, 8, device="cuda")
    ref.load_state_dict(lin.state_dict())
    x = torch.randn(4, 16, device="cuda")
    torch.testing.assert_close(lin(x), ref(x), rtol=1e-4, atol=1e-4)
    emb = bt.Embedding(20, 6, padding_idx=0, device="cuda")
    idx = torch.randint(0, 20, (3, 5), device="cuda")
    assert torch.equal(emb(idx), torch.nn.functional.embedding(idx, emb.weight, padding_idx=0))
    conv = bt.CausalConv1d(8, 4, activation="silu", device="cuda")
    y = conv(torch.randn(2, 8, 16, device="cuda"))
    assert y.shape == (2, 8, 16) and torch.isfinite(y).all()


@pytest.mark.parametrize("example", ["plan_api.py", "torch_model.py", "jax_eager.py"])
def test_examples_run(example):
    import os
    import subprocess
    import sys
    from conftest import ROOT
    if example.startswith("jax"):
        pytest.importorskip("jax")
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / example)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


# ---------------------------------------------------------------- reductions (the reduce row)

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_reductions_against_torch(dtype):
    x = torch.randn(33, 257, device="cuda", dtype=dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1.6e-2, atol=1e-2)
    torch.testing.assert_close(bt.sum(x, 1), x.sum(1), **tol)
    torch.testing.assert_close(bt.mean(x, 0, keepdim=True), x.mean(0, keepdim=True), **tol)
    torch.testing.assert_close(bt.logsumexp(x, 1), torch.logsumexp(x, 1), **tol)
    torch.testing.assert_close(bt.vector_norm(x, 3, 1), torch.linalg.vector_norm(x, 3, 1), **tol)
    torch.testing.assert_close(bt.var(x, 1), x.var(1), **tol)
    torch.testing.assert_close(bt.std(x, 0, correction=0), x.std(0, correction=0), **tol)
    assert torch.equal(bt.amax(x, 1), x.amax(1))
    assert torch.equal(bt.argmax(x, 1), x.argmax(1))
    v, i = bt.max(x, 0)
    rv, ri = torch.max(x, 0)
    assert torch.equal(v, rv) and torch.equal(i, ri)
    ints = torch.randint(-5, 5, (40, 50), device="cuda", dtype=torch.int32)
    assert torch.equal(bt.sum(ints, 1), ints.sum(1)) and bt.sum(ints, 1).dtype == torch.int64
    assert torch.equal(bt.argmin(ints, 1), ints.argmin(1))  # ties: the first index
    assert torch.equal(bt.count_nonzero(ints), torch.count_nonzero(ints))
    assert torch.equal(bt.all(ints != 7, 1), (ints != 7).all(1))
    for n in (1 << 24, 1 << 28):  # a long f32 sum is not less accurate than PyTorch's (issue 43: 2^28)
        big = torch.randn(n, device="cuda")
        exact = big.double().sum().item()
        ours, theirs = abs(bt.sum(big).item() - exact), abs(big.sum().item() - exact)
        ulp = 2.0 ** (math.frexp(abs(exact))[1] - 24)  # one f32 ulp of the result: its rounding
        print(f"[accuracy] f32 sum of {n} elements: |error| ours {ours:.3g}, torch {theirs:.3g}, result ulp {ulp:.3g}")
        assert ours <= theirs + ulp
        del big


def test_gradcheck_reductions():
    x = (torch.rand(4, 9, device="cuda", dtype=torch.float64) + 0.5).requires_grad_()
    for f in (lambda a: bt.sum(a, 1), lambda a: bt.mean(a, (0, 1)), lambda a: bt.logsumexp(a, 1),
              lambda a: bt.vector_norm(a, 2, 1), lambda a: bt.vector_norm(a, 3.5, 0), lambda a: bt.var(a, 1),
              lambda a: bt.std(a, 0, correction=0), lambda a: bt.max(a, 1)[0], lambda a: bt.nansum(a, 1),
              lambda a: bt.prod(a, 1), lambda a: bt.amax(a, 1), lambda a: bt.amin(a, 0), lambda a: bt.nanmean(a, 1),
              lambda a: bt.vector_norm(a, float("inf"), 1), lambda a: bt.var_mean(a, 1), lambda a: bt.std_mean(a, 0),
              lambda a: bt.aminmax(a, dim=1), lambda a: bt.mean(a[:, ::2], 1), lambda a: bt.sum(a.t(), 0)):
        assert torch.autograd.gradcheck(f, (x,))


def test_reduction_gradients_at_ties_zeros_and_nan():
    """PyTorch's rules where the derivative is not smooth: amax's tie split, prod with one and two
    zeros, the inf-norm's ties, nanmean's NaN."""
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0], [2.0, 0.0, 3.0, 4.0], [2.0, 0.0, 3.0, 0.0], [1.0, float("nan"), 2.0, -2.0]],
                     device="cuda")
    for ours, theirs in ((lambda a: bt.amax(a[:3], 1), lambda a: torch.amax(a[:3], 1)),
                         (lambda a: bt.prod(a[:3], 1), lambda a: torch.prod(a[:3], 1)),
                         (lambda a: bt.vector_norm(a[:3], float("inf"), 1), lambda a: torch.linalg.vector_norm(a[:3], float("inf"), 1)),
                         (lambda a: bt.nanmean(a, 1), lambda a: torch.nanmean(a, 1)),
                         (lambda a: sum(bt.aminmax(a[:3], dim=1)), lambda a: torch.amin(a[:3], 1) + torch.amax(a[:3], 1))):
        a1, a2 = x.clone().requires_grad_(), x.clone().requires_grad_()
        ours(a1).sum().backward()
        theirs(a2).sum().backward()
        torch.testing.assert_close(a1.grad, a2.grad, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_scans_against_torch(dtype):
    x = torch.randn(33, 300, device="cuda", dtype=dtype)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == torch.float32 else dict(rtol=2e-2, atol=5e-2)
    xf = x.float()  # our 16-bit scans accumulate in f32 and round once (PyTorch's bf16 cumsum drifts further)
    for dim in (0, 1):
        torch.testing.assert_close(bt.cumsum(x, dim), torch.cumsum(xf, dim).to(dtype), **tol)
        torch.testing.assert_close(bt.logcumsumexp(x, dim), torch.logcumsumexp(xf, dim).to(dtype), **tol)
        torch.testing.assert_close(bt.cumsum(x, dim, reverse=True), torch.cumsum(xf.flip(dim), dim).flip(dim).to(dtype), **tol)
        v, i = bt.cummax(x, dim)
        rv, ri = torch.cummax(x, dim)
        assert torch.equal(v, rv) and torch.equal(i, ri)
    ints = torch.randint(-3, 3, (40, 50), device="cuda", dtype=torch.int32)  # ties everywhere
    v, i = bt.cummin(ints, 1)
    rv, ri = torch.cummin(ints, 1)
    assert torch.equal(v, rv) and torch.equal(i, ri)
    assert torch.equal(bt.cumsum(ints, 1), torch.cumsum(ints, 1)) and bt.cumsum(ints, 1).dtype == torch.int64
    for small in (torch.int8, torch.int16):  # narrow integers: sums and scans into int64, extremes in kind
        t = torch.randint(-100, 100, (40, 50), device="cuda", dtype=small)
        assert torch.equal(bt.sum(t, 1), torch.sum(t, 1)) and torch.equal(bt.cumsum(t, 0), torch.cumsum(t, 0))
        assert torch.equal(bt.amax(t, 0), torch.amax(t, 0)) and torch.equal(bt.argmin(t, 1), torch.argmin(t, 1))
        v, i = bt.cummax(t, 1)
        rv, ri = torch.cummax(t, 1)
        assert torch.equal(v, rv) and torch.equal(i, ri)
    p = torch.rand(6, 40, device="cuda") + 0.5
    torch.testing.assert_close(bt.cumprod(p, 1), torch.cumprod(p, 1), rtol=1e-5, atol=1e-6)
    lm, mm = bt.aminmax(x, dim=1)
    rl, rm = torch.aminmax(x, dim=1)
    assert torch.equal(lm, rl) and torch.equal(mm, rm)
    vv, vm = bt.var_mean(x.float(), 1)
    rvv, rvm = torch.var_mean(x.float(), 1)
    torch.testing.assert_close(vv, rvv, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(vm, rvm, rtol=1e-5, atol=1e-5)


def test_gradcheck_scans():
    x = (torch.rand(5, 7, device="cuda", dtype=torch.float64) + 0.5).requires_grad_()
    for f in (lambda a: bt.cumsum(a, 1), lambda a: bt.cumsum(a, 0, reverse=True, exclusive=True),
              lambda a: bt.cumprod(a, 1), lambda a: bt.cumprod(a, 0, exclusive=True), lambda a: bt.logcumsumexp(a, 1),
              lambda a: bt.logcumsumexp(a, 0, reverse=True), lambda a: bt.cummax(a, 1)[0], lambda a: bt.cummin(a, 0)[0]):
        assert torch.autograd.gradcheck(f, (x,))
    z = torch.tensor([[2.0, 0.0, 3.0, 4.0, 0.0, 5.0]], device="cuda", dtype=torch.float64, requires_grad=True)
    zr = z.detach().clone().requires_grad_()
    bt.cumprod(z, 1).sum().backward()
    torch.cumprod(zr, 1).sum().backward()
    torch.testing.assert_close(z.grad, zr.grad)  # zeros: no division


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_softmax_and_norms_against_torch(dtype):
    x = torch.randn(64, 1000, device="cuda", dtype=dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-3)
    for dim in (1, 0):
        torch.testing.assert_close(bt.softmax(x, dim), torch.softmax(x, dim), **tol)
        torch.testing.assert_close(bt.log_softmax(x, dim), torch.log_softmax(x, dim), **tol)
        torch.testing.assert_close(bt.softmin(x, dim), F.softmin(x, dim), **tol)
    if dtype == torch.bfloat16:
        torch.testing.assert_close(bt.softmax(x, 1, dtype=torch.float32), torch.softmax(x, 1, dtype=torch.float32))
    w = torch.randn(1000, device="cuda", dtype=dtype)
    b = torch.randn(1000, device="cuda", dtype=dtype)
    torch.testing.assert_close(bt.layer_norm(x, (1000,), w, b), F.layer_norm(x, (1000,), w, b), **tol)
    torch.testing.assert_close(bt.layer_norm(x, (1000,)), F.layer_norm(x, (1000,)), **tol)
    torch.testing.assert_close(bt.rms_norm(x, (1000,), w), F.rms_norm(x, (1000,), w), **tol)
    ln = bt.LayerNorm(1000, device="cuda", dtype=dtype)
    torch.testing.assert_close(ln(x), torch.nn.LayerNorm(1000, device="cuda", dtype=dtype)(x), **tol)


def test_masked_softmax_against_torch():
    # attention scores [B, H, Lq, Lk]: a key-padding bool mask [B, 1, 1, Lk] (batch 1 all padding),
    # bottom-right causal, an additive float mask; PyTorch's compositions as the reference
    x = torch.randn(2, 3, 5, 70, device="cuda")
    keep = torch.ones(2, 1, 1, 70, device="cuda", dtype=torch.bool)
    keep[0, ..., -7:] = False
    keep[1] = False
    tril = torch.ones(5, 70, device="cuda", dtype=torch.bool).tril(70 - 5)
    both = keep & tril
    ref = torch.softmax(x.masked_fill(~both, float("-inf")), -1)
    got = bt.softmax(x, -1, mask=keep, causal=True, diagonal=70 - 5)
    torch.testing.assert_close(got, ref, equal_nan=True)
    zero = bt.softmax(x, -1, mask=keep, causal=True, diagonal=70 - 5, masked_rows="zero")
    torch.testing.assert_close(zero, torch.nan_to_num(ref, nan=0.0))
    add = torch.randn(2, 1, 5, 70, device="cuda").masked_fill(~tril, float("-inf"))
    torch.testing.assert_close(bt.log_softmax(x, -1, mask=add), torch.log_softmax(x + add, -1))


def test_gradcheck_masked_softmax():
    # (log_softmax's removed entries are -inf: finite differences of them are NaN)
    x = torch.randn(2, 4, 9, device="cuda", dtype=torch.float64, requires_grad=True)
    keep = torch.rand(2, 1, 9, device="cuda") > 0.3
    keep[1] = False
    for f in (lambda a: bt.softmax(a, -1, mask=keep, causal=True, masked_rows="zero"),
              lambda a: bt.softmin(a, -1, mask=keep, diagonal=2, causal=True, masked_rows="zero")):
        assert torch.autograd.gradcheck(f, (x,))


@pytest.mark.parametrize("channels_last", [False, True])
def test_channel_norms_against_torch(channels_last):
    x = torch.randn(4, 8, 5, 6, device="cuda")
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    w, b = torch.randn(8, device="cuda"), torch.randn(8, device="cuda")
    rm, rv = torch.randn(8, device="cuda"), torch.rand(8, device="cuda") + 0.5
    rm2, rv2 = rm.clone(), rv.clone()
    torch.testing.assert_close(bt.batch_norm(x, rm, rv, w, b, True, 0.2), F.batch_norm(x, rm2, rv2, w, b, True, 0.2))
    torch.testing.assert_close(rm, rm2)
    torch.testing.assert_close(rv, rv2)
    torch.testing.assert_close(bt.batch_norm(x, rm, rv, w, b, False), F.batch_norm(x, rm2, rv2, w, b, False))
    torch.testing.assert_close(bt.group_norm(x, 4, w, b), F.group_norm(x, 4, w, b))
    im, iv, im2, iv2 = rm.clone(), rv.clone(), rm.clone(), rv.clone()
    torch.testing.assert_close(bt.instance_norm(x, im, iv, w, b), F.instance_norm(x, im2, iv2, w, b))
    torch.testing.assert_close(im, im2)
    torch.testing.assert_close(iv, iv2)


def test_gradcheck_channel_norms():
    x = torch.randn(3, 4, 5, device="cuda", dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, device="cuda", dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, ww, bb: bt.batch_norm(a, None, None, ww, bb, True), (x, w, b))
    assert torch.autograd.gradcheck(lambda a, ww, bb: bt.group_norm(a, 2, ww, bb), (x, w, b))
    assert torch.autograd.gradcheck(lambda a, ww, bb: bt.instance_norm(a, None, None, ww, bb), (x, w, b))


def test_gradcheck_softmax_and_norms():
    x = torch.randn(6, 9, device="cuda", dtype=torch.float64, requires_grad=True)
    w = torch.randn(9, device="cuda", dtype=torch.float64, requires_grad=True)
    b = torch.randn(9, device="cuda", dtype=torch.float64, requires_grad=True)
    for f in (lambda a: bt.softmax(a, 1), lambda a: bt.log_softmax(a, 0), lambda a: bt.softmin(a, 1)):
        assert torch.autograd.gradcheck(f, (x,))
    assert torch.autograd.gradcheck(lambda a, ww, bb: bt.layer_norm(a, (9,), ww, bb), (x, w, b))
    assert torch.autograd.gradcheck(lambda a, ww: bt.rms_norm(a, (9,), ww, 1e-6), (x, w))



def test_losses_against_torch():
    x = torch.randn(16, 10, device="cuda")
    t = torch.randint(0, 10, (16,), device="cuda")
    t[3] = -100
    w = torch.rand(10, device="cuda") + 0.5
    tol = dict(rtol=1e-5, atol=1e-6)
    for red in ("mean", "sum", "none"):
        torch.testing.assert_close(bt.cross_entropy(x, t, w, reduction=red, label_smoothing=0.1),
                                   F.cross_entropy(x, t, w, reduction=red, label_smoothing=0.1), **tol)
        lp = torch.log_softmax(x, 1)
        torch.testing.assert_close(bt.nll_loss(lp, t, w, reduction=red), F.nll_loss(lp, t, w, reduction=red), **tol)
    p = torch.softmax(torch.randn(16, 10, device="cuda"), 1)
    torch.testing.assert_close(bt.cross_entropy(x, p), F.cross_entropy(x, p), **tol)
    y = torch.randn(16, 10, device="cuda")
    sign = torch.where(torch.rand(16, 10, device="cuda") > 0.5, 1.0, -1.0)
    prob, z01 = torch.rand(16, 10, device="cuda") * 0.9 + 0.05, torch.rand(16, 10, device="cuda")
    pw, var = torch.rand(10, device="cuda") + 0.5, torch.rand(16, device="cuda") + 0.1
    cases = [
        (bt.mse_loss(x, y), F.mse_loss(x, y)), (bt.l1_loss(x, y, "sum"), F.l1_loss(x, y, reduction="sum")),
        (bt.smooth_l1_loss(x, y, beta=0.5), F.smooth_l1_loss(x, y, beta=0.5)),
        (bt.huber_loss(x, y, "none", 0.7), F.huber_loss(x, y, reduction="none", delta=0.7)),
        (bt.binary_cross_entropy(prob, z01, w), F.binary_cross_entropy(prob, z01, w)),
        (bt.binary_cross_entropy_with_logits(x, z01, pos_weight=pw), F.binary_cross_entropy_with_logits(x, z01, pos_weight=pw)),
        (bt.kl_div(torch.log_softmax(x, 1), p, "batchmean"), F.kl_div(torch.log_softmax(x, 1), p, reduction="batchmean")),
        (bt.poisson_nll_loss(x, z01), F.poisson_nll_loss(x, z01)),
        (bt.gaussian_nll_loss(x, y, var), F.gaussian_nll_loss(x, y, var.unsqueeze(-1))),
        (bt.soft_margin_loss(x, sign), F.soft_margin_loss(x, sign)),
        (bt.hinge_embedding_loss(x, sign, 0.5), F.hinge_embedding_loss(x, sign, 0.5)),
        (bt.margin_ranking_loss(x, y, sign, 0.2), F.margin_ranking_loss(x, y, sign, 0.2)),
    ]
    for i, (ours, ref) in enumerate(cases):
        torch.testing.assert_close(ours, ref, **tol, msg=lambda m: f"case {i}: {m}")


def test_gradcheck_losses():
    x = torch.randn(5, 4, device="cuda", dtype=torch.float64, requires_grad=True)
    y = torch.randn(5, 4, device="cuda", dtype=torch.float64, requires_grad=True)
    t = torch.tensor([1, 3, -100, 0, 2], device="cuda")
    var = (torch.rand(5, 4, device="cuda", dtype=torch.float64) + 0.5).requires_grad_()
    assert torch.autograd.gradcheck(lambda a: bt.cross_entropy(a, t, label_smoothing=0.2), (x,))
    assert torch.autograd.gradcheck(lambda a, b: bt.mse_loss(a, b), (x, y))
    assert torch.autograd.gradcheck(lambda a, v: bt.gaussian_nll_loss(a, y.detach(), v), (x, var))
    assert torch.autograd.gradcheck(lambda a: bt.binary_cross_entropy_with_logits(a, torch.sigmoid(y.detach())), (x,))


def test_fused_linear_cross_entropy_against_torch():
    x = torch.randn(64, 32, device="cuda", requires_grad=True)
    w = (0.3 * torch.randn(500, 32, device="cuda")).requires_grad_()
    b = torch.randn(500, device="cuda", requires_grad=True)
    t = torch.randint(0, 500, (64,), device="cuda")
    t[::7] = -100
    loss = bt.fused_linear_cross_entropy(x, w, t, b, label_smoothing=0.1, chunk_tokens=16)
    gx, gw, gb = torch.autograd.grad(3.0 * loss, (x, w, b))
    ref = F.cross_entropy(F.linear(x, w, b), t, label_smoothing=0.1)
    rx, rw, rb = torch.autograd.grad(3.0 * ref, (x, w, b))
    for ours, want in ((loss, ref), (gx, rx), (gw, rw), (gb, rb)):
        torch.testing.assert_close(ours, want, rtol=1e-4, atol=1e-6)
    with torch.no_grad():  # the loss alone (no gradient formed)
        torch.testing.assert_close(bt.fused_linear_cross_entropy(x, w, t, b, label_smoothing=0.1), ref.detach(), rtol=1e-5, atol=1e-6)
    xd = torch.randn(5, 3, device="cuda", dtype=torch.float64, requires_grad=True)
    wd = torch.randn(7, 3, device="cuda", dtype=torch.float64, requires_grad=True)
    bd = torch.randn(7, device="cuda", dtype=torch.float64, requires_grad=True)
    td = torch.tensor([1, 6, -100, 0, 2], device="cuda")
    assert torch.autograd.gradcheck(lambda a, ww, bb: bt.fused_linear_cross_entropy(a, ww, td, bb, reduction="sum", chunk_tokens=2),
                                    (xd, wd, bd))


def test_normalize_and_weight_norm_against_torch():
    x = torch.randn(6, 33, 9, device="cuda")
    for p, dim in ((2.0, 1), (1.0, -1), (3.0, 0), (float("inf"), 1)):
        torch.testing.assert_close(bt.normalize(x, p, dim), F.normalize(x, p, dim), rtol=1e-5, atol=1e-6)
    v = torch.randn(16, 8, 3, 3, device="cuda")
    g = torch.rand(16, 1, 1, 1, device="cuda") + 0.5
    torch.testing.assert_close(bt.weight_norm(v, g, 0), torch._weight_norm(v, g, 0), rtol=1e-5, atol=1e-6)
    v2, g2 = torch.randn(30, 24, device="cuda"), torch.rand(1, 24, device="cuda")
    torch.testing.assert_close(bt.weight_norm(v2, g2, 1), torch._weight_norm(v2, g2, 1), rtol=1e-5, atol=1e-6)
    xd = torch.randn(4, 7, device="cuda", dtype=torch.float64, requires_grad=True)
    for p in (2.0, 3.0, float("inf")):
        assert torch.autograd.gradcheck(lambda a: bt.normalize(a, p, 1), (xd,))
    vd = torch.randn(5, 6, device="cuda", dtype=torch.float64, requires_grad=True)
    gd = torch.randn(5, 1, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bt.weight_norm(a, b, 0), (vd, gd))


def test_row_losses_against_torch():
    x, y = torch.randn(16, 10, device="cuda"), (torch.rand(16, 10, device="cuda") > 0.5).float()
    w = torch.rand(10, device="cuda") + 0.5
    tol = dict(rtol=1e-5, atol=1e-6)
    for red in ("mean", "sum", "none"):
        torch.testing.assert_close(bt.multilabel_soft_margin_loss(x, y, w, red), F.multilabel_soft_margin_loss(x, y, w, reduction=red), **tol)
    a, b, c = (torch.randn(12, 33, device="cuda") for _ in range(3))
    t = torch.tensor([1, -1] * 6, device="cuda")
    torch.testing.assert_close(bt.cosine_embedding_loss(a, b, t, 0.1), F.cosine_embedding_loss(a, b, t, 0.1), **tol)
    for p, swap in ((2.0, False), (1.0, True), (3.0, False)):
        torch.testing.assert_close(bt.triplet_margin_loss(a, b, c, 1.0, p, swap=swap), F.triplet_margin_loss(a, b, c, 1.0, p, swap=swap), **tol)
    ad, bd, cd = (torch.randn(4, 5, device="cuda", dtype=torch.float64, requires_grad=True) for _ in range(3))
    assert torch.autograd.gradcheck(lambda u, v, z: bt.triplet_margin_loss(u, v, z, margin=3.0), (ad, bd, cd))
    assert torch.autograd.gradcheck(lambda u, v: bt.cosine_embedding_loss(u, v, torch.tensor([1, -1, 1, -1], device="cuda"), -0.9), (ad, bd))
    assert torch.autograd.gradcheck(lambda u: bt.multilabel_soft_margin_loss(u, (ad.detach() > 0).double()), (ad,))


def test_local_response_norm_against_torch():
    x = torch.randn(3, 10, 5, 7, device="cuda")
    for size, a, b, k in ((5, 1e-4, 0.75, 1.0), (2, 0.1, 1.0, 2.0), (13, 0.5, 0.5, 0.5)):
        torch.testing.assert_close(bt.local_response_norm(x, size, a, b, k), F.local_response_norm(x, size, a, b, k), rtol=1e-5, atol=1e-6)
    xc = x.to(memory_format=torch.channels_last)
    torch.testing.assert_close(bt.local_response_norm(xc, 3, 0.3), F.local_response_norm(x, 3, 0.3), rtol=1e-5, atol=1e-6)
    xd = torch.randn(2, 6, 4, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: bt.local_response_norm(v, 3, 0.5, 0.75, 1.0), (xd,))


def test_ctc_loss_against_torch():
    T, N, C, S = 30, 4, 8, 6
    logits = torch.randn(T, N, C, device="cuda", dtype=torch.float64, requires_grad=True)
    tg = torch.randint(1, C, (N, S), device="cuda")
    il = torch.tensor([30, 25, 20, 12], device="cuda")
    tl = torch.tensor([6, 4, 0, 5], device="cuda")
    for red in ("mean", "sum", "none"):
        lp = logits.log_softmax(-1)
        want = F.ctc_loss(lp, tg, il, tl, reduction=red)
        got = bt.ctc_loss(lp, tg, il, tl, reduction=red)
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)
        gw = torch.autograd.grad(want.sum(), logits, retain_graph=True)[0]
        gg = torch.autograd.grad(got.sum(), logits)[0]
        torch.testing.assert_close(gg, gw, rtol=1e-9, atol=1e-9)
    # concatenated targets, i32, lengths as lists, f32
    lp = logits.detach().float().log_softmax(-1)
    cat = torch.cat([tg[n, : int(tl[n])] for n in range(N)]).int()
    torch.testing.assert_close(bt.ctc_loss(lp, cat, [30, 25, 20, 12], [6, 4, 0, 5], reduction="none"),
                               F.ctc_loss(lp, cat, [30, 25, 20, 12], [6, 4, 0, 5], reduction="none"), rtol=1e-5, atol=1e-5)
    # zero_infinity: a target too long for its input
    tl2 = torch.tensor([6, 4, 0, 5], device="cuda")
    il2 = torch.tensor([30, 25, 20, 3], device="cuda")
    torch.testing.assert_close(bt.ctc_loss(lp, tg, il2, tl2, reduction="none", zero_infinity=True),
                               F.ctc_loss(lp, tg, il2, tl2, reduction="none", zero_infinity=True), rtol=1e-5, atol=1e-5)


def test_cat_and_stack_against_torch():
    a = torch.randn(4, 5, 6, device="cuda")
    b = torch.randn(6, 3, 4, device="cuda").permute(2, 1, 0)   # [4, 3, 6], transposed
    c = torch.randn(4, 8, 6, device="cuda")[:, ::2]            # [4, 4, 6], strided
    for dim, xs in ((1, [a, b, c]), (-2, [a, b, c]), (0, [a, a]), (2, [a, a[..., :0], a])):
        torch.testing.assert_close(bt.cat(xs, dim), torch.cat(xs, dim), rtol=0, atol=0)
    for dtype in (torch.bfloat16, torch.int64, torch.bool, torch.uint8):
        xs = [torch.randint(0, 2, (7, n), device="cuda").to(dtype) for n in (3, 16, 1)]
        torch.testing.assert_close(bt.cat(xs, 1), torch.cat(xs, 1), rtol=0, atol=0)
    many = [torch.randn(i % 5, 3, device="cuda") for i in range(200)]  # two launches
    torch.testing.assert_close(bt.cat(many), torch.cat(many), rtol=0, atol=0)
    for dim in (0, 1, 2, -1, -3):
        xs = [torch.randn(3, 5, device="cuda") for _ in range(4)]
        torch.testing.assert_close(bt.stack(xs, dim), torch.stack(xs, dim), rtol=0, atol=0)
    # autograd: the gradient split into views
    xs = [torch.randn(2, n, dtype=torch.float64, device="cuda", requires_grad=True) for n in (3, 1, 4)]
    assert torch.autograd.gradcheck(lambda *v: bt.cat(list(v), 1), tuple(xs))
    assert torch.autograd.gradcheck(lambda u, v: bt.stack([u, v], 1), (xs[0], xs[0].detach().clone().requires_grad_()))
    with pytest.raises(baracuda.Error, match=r"inputs\[1\]"):
        bt.cat([a, torch.randn(3, 5, 6, device="cuda")], 1)


def test_cat_type_promotion_and_unfold_backward():
    # torch.cat's result_type: one launch for the result-dtype inputs, a cast for the others
    a = torch.randn(4, 5, device="cuda")
    b = torch.randn(4, 3, device="cuda").to(torch.bfloat16)
    c = torch.randint(-9, 9, (4, 2), device="cuda", dtype=torch.int32)
    d = torch.randint(0, 2, (4, 1), device="cuda").bool()
    for xs in ([a, b, c, d], [b, c], [c, d], [b, b.half()], [c, c.to(torch.uint8), c.to(torch.int8)]):
        want = torch.cat(xs, 1)
        got = bt.cat(xs, 1)
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    xs = [torch.randn(3, 4, device="cuda"), torch.randn(3, 4, device="cuda").double()[:, ::1].t().contiguous().t()]
    torch.testing.assert_close(bt.stack(xs, 1), torch.stack(xs, 1), rtol=0, atol=0)
    with pytest.raises(baracuda.Error, match="does not promote"):
        bt.cat([a.to(torch.float8_e4m3fn), a.to(torch.float8_e5m2)])
    # gradients reach each input in its own dtype
    u = torch.randn(2, 3, dtype=torch.float64, device="cuda", requires_grad=True)
    v = torch.randn(2, 2, dtype=torch.float32, device="cuda", requires_grad=True)
    out = bt.cat([u, v], 1)
    assert out.dtype == torch.float64
    out.backward(torch.arange(10, dtype=torch.float64, device="cuda").reshape(2, 5))
    assert v.grad.dtype == torch.float32 and u.grad.dtype == torch.float64
    torch.testing.assert_close(v.grad, torch.tensor([[3.0, 4.0], [8.0, 9.0]], device="cuda"))

    # Tensor.unfold: the view is PyTorch's; the gradient sums the windows back (unfold_backward)
    for shape, dim, size, step in (((37,), 0, 5, 2), ((3, 20, 4), 1, 6, 3), ((2, 3, 50), -1, 7, 10), ((4, 9), 0, 4, 1),
                                   ((5, 6), 1, 0, 2)):
        for dt in (torch.float32, torch.bfloat16, torch.float64):
            x = torch.randn(shape, device="cuda", dtype=dt, requires_grad=True)
            y = bt.unfold(x, dim, size, step)
            ref = x.detach().clone().requires_grad_()
            want = ref.unfold(dim, size, step)
            torch.testing.assert_close(y, want, rtol=0, atol=0)
            g = torch.randn(want.shape, device="cuda", dtype=dt)
            y.backward(g)
            want.backward(g)
            tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 2e-2}[dt]  # PyTorch sums 16-bit windows in bf16
            torch.testing.assert_close(x.grad, ref.grad, rtol=tol, atol=tol)
    x = torch.randn(3, 11, 2, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: bt.unfold(t, 1, 4, 3), (x,))
    assert torch.autograd.gradcheck(lambda t: bt.unfold(t.t(), 0, 3, 1), (torch.randn(4, 9, dtype=torch.float64, device="cuda",
                                                                                        requires_grad=True),))


def test_creation_ops_against_torch():
    for shape, v, dt in (((5, 7), 2.5, None), ((3,), -4, None), ((2, 2), True, None), ((9,), 200, torch.uint8),
                         ((4, 4), -1.75, torch.bfloat16)):
        torch.testing.assert_close(bt.full(shape, v, dtype=dt), torch.full(shape, v, dtype=dt, device="cuda"), rtol=0, atol=0)
    torch.testing.assert_close(bt.zeros(3, 4), torch.zeros(3, 4, device="cuda"), rtol=0, atol=0)
    torch.testing.assert_close(bt.ones((2, 5), dtype=torch.int32), torch.ones(2, 5, dtype=torch.int32, device="cuda"), rtol=0, atol=0)
    x = torch.randn(3, 6, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(bt.zeros_like(x), torch.zeros_like(x), rtol=0, atol=0)
    torch.testing.assert_close(bt.full_like(x, 7), torch.full_like(x, 7), rtol=0, atol=0)
    for args, dt in (((10,), None), ((-3, 17, 4), None), ((10, 1, -3), None), ((0.0, 1.0, 0.1), None), ((2, 9.5, 0.5), torch.float64),
                     ((1, 1000, 7), torch.int32), ((-5.5, 3.2, 0.3), torch.bfloat16)):
        want = torch.arange(*args, dtype=dt, device="cuda")
        got = bt.arange(*args, dtype=dt)
        assert got.shape == want.shape, args
        torch.testing.assert_close(got, want)
    with pytest.raises(baracuda.Error, match="step must be nonzero"):
        bt.arange(0, 5, 0)
    with pytest.raises(baracuda.Error, match="inconsistent with step sign"):
        bt.arange(0, 5, -1)
    for a, b, n, dt in ((-1, 3.7, 1001, None), (0.1, 1, 64, torch.float16), (-500, 1000, 333, torch.int16), (4, 9, 1, None),
                        (1e-3, -7, 255, torch.float64), (0, 10, 0, None)):
        torch.testing.assert_close(bt.linspace(a, b, n, dtype=dt), torch.linspace(a, b, n, dtype=dt, device="cuda"))
    for a, b, n, base in ((-3, 5, 200, 10.0), (0, 4, 50, 2.0)):
        torch.testing.assert_close(bt.logspace(a, b, n, base), torch.logspace(a, b, n, base, device="cuda"), rtol=1e-5, atol=0)
    for n, m, dt in ((5, None, None), (3, 7, torch.bool), (6, 2, torch.int64)):
        torch.testing.assert_close(bt.eye(n, m, dtype=dt), torch.eye(n, n if m is None else m, dtype=dt, device="cuda"), rtol=0, atol=0)


def test_flip_and_roll_against_torch():
    x = torch.randn(4, 6, 40, device="cuda")
    xt = torch.randn(40, 6, 4, device="cuda").permute(2, 1, 0)  # [4, 6, 40], transposed
    for t in (x, xt, x[:, ::2]):
        for dims in ((0,), (-1,), (0, 2), (1, 0, 2), ()):
            torch.testing.assert_close(bt.flip(t, dims), torch.flip(t, dims), rtol=0, atol=0)
        for shifts, dims in ((1, 0), (-3, 2), ((2, 5), (0, 1)), ((3, 3), (1, 1)), (7, None), (-(2 ** 62) + 3, 2), (8, -1)):  # (PyTorch's roll refuses -2^63)
            torch.testing.assert_close(bt.roll(t, shifts, dims), torch.roll(t, shifts, dims), rtol=0, atol=0)
    for dtype in (torch.bfloat16, torch.uint8, torch.float64, torch.int16):
        y = torch.randint(0, 100, (12, 64), device="cuda").to(dtype)
        torch.testing.assert_close(bt.flip(y, (1,)), torch.flip(y, (1,)), rtol=0, atol=0)
        torch.testing.assert_close(bt.roll(y, 16, 1), torch.roll(y, 16, 1), rtol=0, atol=0)
        torch.testing.assert_close(bt.roll(y, -5), torch.roll(y, -5), rtol=0, atol=0)
    xd = torch.randn(3, 5, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: bt.flip(v, (0, 1)), (xd,))
    assert torch.autograd.gradcheck(lambda v: bt.roll(v, (2, -7), (0, 1)), (xd,))
    assert torch.autograd.gradcheck(lambda v: bt.roll(v, 4), (xd,))
    with pytest.raises(baracuda.Error, match="appears multiple times"):
        bt.flip(x, (0, 0))


def test_gather_and_index_select_against_torch():
    x = torch.randn(6, 9, 5, device="cuda")
    xt = torch.randn(5, 9, 6, device="cuda").permute(2, 1, 0)  # transposed
    idx = torch.randint(0, 9, (4, 12, 5), device="cuda")
    for t in (x, xt):
        torch.testing.assert_close(bt.gather(t, 1, idx), torch.gather(t, 1, idx), rtol=0, atol=0)
        torch.testing.assert_close(bt.gather(t, -1, idx[:, :9, :3] % 5), torch.gather(t, -1, idx[:, :9, :3] % 5), rtol=0, atol=0)
        sel = torch.randint(0, 6, (11,), device="cuda", dtype=torch.int32)
        torch.testing.assert_close(bt.index_select(t, 0, sel), torch.index_select(t, 0, sel), rtol=0, atol=0)
        torch.testing.assert_close(bt.index_select(t, 2, sel % 5), torch.index_select(t, 2, sel % 5), rtol=0, atol=0)
    ta = torch.randint(0, 9, (6, 3, 1), device="cuda")
    torch.testing.assert_close(bt.take_along_dim(x, ta, 1), torch.take_along_dim(x, ta, 1), rtol=0, atol=0)
    tk = torch.randint(-x.numel(), x.numel(), (7, 3), device="cuda")
    torch.testing.assert_close(bt.take(x, tk), torch.take(x, tk), rtol=0, atol=0)
    for dtype in (torch.bfloat16, torch.uint8, torch.float64, torch.int16, torch.bool):
        y = torch.randint(0, 2, (40, 64), device="cuda").to(dtype)
        i = torch.randint(0, 40, (70,), device="cuda")
        torch.testing.assert_close(bt.index_select(y, 0, i), y[i], rtol=0, atol=0)
    bad = torch.tensor([0, 9, -1], device="cuda")
    out = bt.gather(x[:1, :, :1].reshape(1, 9), 1, bad.reshape(1, 3), fill_value=float("nan"))
    assert out[0, 0] == x[0, 0, 0] and out[0, 1:].isnan().all()
    clamped = bt.gather(x[:1, :, :1].reshape(1, 9), 1, bad.reshape(1, 3), mode="clamp")
    torch.testing.assert_close(clamped, x[0, [0, 8, 0], 0].reshape(1, 3), rtol=0, atol=0)


def test_scatter_family_against_torch():
    torch.manual_seed(3)
    self = torch.randn(8, 10, device="cuda")
    src = torch.randn(8, 14, device="cuda")
    idx = torch.randint(0, 10, (8, 12), device="cuda")
    perm = torch.stack([torch.randperm(10, device="cuda")[:7] for _ in range(8)])  # unique targets per row
    torch.testing.assert_close(bt.scatter(self, 1, perm, src), torch.scatter(self, 1, perm, src), rtol=0, atol=0)
    torch.testing.assert_close(bt.scatter(self, 1, perm, 2.5), torch.scatter(self, 1, perm, 2.5), rtol=0, atol=0)
    torch.testing.assert_close(bt.scatter_add(self, 1, idx, src), torch.scatter_add(self, 1, idx, src), rtol=1e-5, atol=1e-5)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            torch.testing.assert_close(bt.scatter_reduce(self, 1, idx, src, reduce, include_self=include_self),
                                       torch.scatter_reduce(self, 1, idx, src, reduce, include_self=include_self),
                                       rtol=1e-5, atol=1e-5)
    ii = torch.randint(-5, 5, (9,), device="cuda") % 8
    rows = torch.randn(9, 10, device="cuda")
    torch.testing.assert_close(bt.index_add(self, 0, ii, rows, alpha=0.5), self.index_add(0, ii, rows, alpha=0.5), rtol=1e-5, atol=1e-5)
    pi = torch.randperm(8, device="cuda")[:5]
    torch.testing.assert_close(bt.index_copy(self, 0, pi, rows[:5]), self.index_copy(0, pi, rows[:5]), rtol=0, atol=0)
    torch.testing.assert_close(bt.index_fill(self, 1, pi, -2.0), self.index_fill(1, pi, -2.0), rtol=0, atol=0)
    for reduce in ("prod", "mean", "amax", "amin"):
        torch.testing.assert_close(bt.index_reduce(self, 0, ii, rows, reduce, include_self=False),
                                   self.index_reduce(0, ii, rows, reduce, include_self=False), rtol=1e-5, atol=1e-5)
    pidx = torch.tensor([-1, 3, 17], device="cuda")
    torch.testing.assert_close(bt.put(self, pidx, torch.tensor([1.0, 2.0, 3.0], device="cuda"), accumulate=True),
                               self.put(pidx, torch.tensor([1.0, 2.0, 3.0], device="cuda"), accumulate=True), rtol=1e-6, atol=1e-6)
    ints = torch.randint(-50, 50, (8, 10), device="cuda", dtype=torch.int32)
    isrc = torch.randint(-50, 50, (8, 12), device="cuda", dtype=torch.int32)
    for reduce in ("sum", "mean", "amax", "prod"):
        torch.testing.assert_close(bt.scatter_reduce(ints, 1, idx % 3, isrc, reduce), torch.scatter_reduce(ints, 1, idx % 3, isrc, reduce),
                                   rtol=0, atol=0)
    # the sorted pass: bitwise identical reruns under determinism = run_to_run
    big = torch.randn(4096, 256, device="cuda", dtype=torch.bfloat16)
    tok = torch.randint(0, 64, (4096,), device="cuda")
    base = torch.zeros(64, 256, device="cuda", dtype=torch.bfloat16)
    a = baracuda.torch._scatter(base, 0, tok, big, "slices", "sum", preference="determinism=run_to_run")
    b = baracuda.torch._scatter(base, 0, tok, big, "slices", "sum", preference="determinism=run_to_run")
    assert torch.equal(a, b)
    torch.testing.assert_close(a.float(), torch.zeros(64, 256, device="cuda").index_add(0, tok, big.float()), rtol=2e-2, atol=2e-2)


def test_gather_scatter_gradients():
    xd = torch.randn(5, 7, dtype=torch.float64, device="cuda", requires_grad=True)
    idx = torch.randint(0, 7, (5, 9), device="cuda")
    assert torch.autograd.gradcheck(lambda v: bt.gather(v, 1, idx), (xd,))
    sel = torch.tensor([4, 0, 4, 2], device="cuda")
    assert torch.autograd.gradcheck(lambda v: bt.index_select(v, 0, sel), (xd,))
    sd = torch.randn(5, 9, dtype=torch.float64, device="cuda", requires_grad=True)
    perm = torch.stack([torch.randperm(7, device="cuda")[:6] for _ in range(5)])
    assert torch.autograd.gradcheck(lambda a, b: bt.scatter(a, 1, perm, b[:, :6]), (xd, sd))
    assert torch.autograd.gradcheck(lambda a, b: bt.scatter_add(a, 1, idx, b), (xd, sd))
    for reduce in ("mean", "amax", "amin"):
        for include_self in (True, False):
            assert torch.autograd.gradcheck(lambda a, b: bt.scatter_reduce(a, 1, idx, b, reduce, include_self=include_self), (xd, sd))
    rows = torch.randn(4, 7, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bt.index_add(a, 0, sel, b, alpha=2.0), (xd, rows))


def test_nonzero_masked_and_advanced_indexing_against_torch():
    torch.manual_seed(5)
    x = torch.randn(6, 7, 5, device="cuda")
    x[x.abs() < 0.5] = 0
    x[0, 0, 0] = -0.0  # zero
    x[1, 1, 1] = float("nan")  # nonzero
    torch.testing.assert_close(bt.nonzero(x), torch.nonzero(x), rtol=0, atol=0)
    for a, b in zip(bt.nonzero(x, as_tuple=True), torch.nonzero(x, as_tuple=True)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.testing.assert_close(bt.argwhere(x[:, ::2]), torch.argwhere(x[:, ::2]), rtol=0, atol=0)
    st = bt.nonzero_static(x, size=300, fill_value=-1)
    ref = torch.nonzero(x)
    n = ref.shape[0]
    torch.testing.assert_close(st[:n], ref, rtol=0, atol=0)
    assert (st[n:] == -1).all()
    x[1, 1, 1] = 2.0  # (the comparisons below would need equal_nan)
    m = x > 0.3
    torch.testing.assert_close(bt.masked_select(x, m), torch.masked_select(x, m), rtol=0, atol=0)
    torch.testing.assert_close(bt.masked_select(x, m[0]), torch.masked_select(x, m[0]), rtol=0, atol=0)  # broadcast mask
    src = torch.randn(300, device="cuda")
    torch.testing.assert_close(bt.masked_scatter(x, m, src), x.masked_scatter(m, src), rtol=0, atol=0)
    i = torch.tensor([[0, 5], [-1, 2]], device="cuda")
    j = torch.tensor([1, 6], device="cuda")
    torch.testing.assert_close(bt.index(x, (i, j)), x[i, j], rtol=0, atol=0)
    torch.testing.assert_close(bt.index(x, (slice(None), j)), x[:, j], rtol=0, atol=0)
    torch.testing.assert_close(bt.index(x, (i, slice(None), torch.tensor([4, 0], device="cuda"))),
                               x[i, :, torch.tensor([4, 0], device="cuda")], rtol=0, atol=0)  # non-adjacent: indexed dims first
    torch.testing.assert_close(bt.index(x, (m[:, :, 0],)), x[m[:, :, 0]], rtol=0, atol=0)
    v = torch.randn(2, 2, 5, device="cuda")
    torch.testing.assert_close(bt.index_put(x, (i, j), v), x.index_put((i, j), v), rtol=0, atol=0)
    dup = torch.tensor([1, 1, 3], device="cuda")
    vals = torch.randn(3, 7, 5, device="cuda")
    torch.testing.assert_close(bt.index_put(x, (dup,), vals, accumulate=True), x.index_put((dup,), vals, accumulate=True),
                               rtol=1e-6, atol=1e-6)
    xd = torch.randn(4, 6, dtype=torch.float64, device="cuda", requires_grad=True)
    md = torch.rand(4, 6, device="cuda") > 0.5
    assert torch.autograd.gradcheck(lambda a: bt.masked_select(a, md), (xd,))
    sd = torch.randn(30, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bt.masked_scatter(a, md, b), (xd, sd))


def test_layout_copies_against_torch():
    torch.manual_seed(7)
    x = torch.randn(3, 4, 5, device="cuda")
    torch.testing.assert_close(bt.tril(x), torch.tril(x), rtol=0, atol=0)
    torch.testing.assert_close(bt.triu(x, -1), torch.triu(x, -1), rtol=0, atol=0)
    torch.testing.assert_close(bt.tril(x.transpose(1, 2), 2), torch.tril(x.transpose(1, 2), 2), rtol=0, atol=0)
    for r, c, o in ((4, 5, 0), (6, 3, -2), (3, 7, 2)):
        torch.testing.assert_close(bt.tril_indices(r, c, o), torch.tril_indices(r, c, o, device="cuda"), rtol=0, atol=0)
        torch.testing.assert_close(bt.triu_indices(r, c, o), torch.triu_indices(r, c, o, device="cuda"), rtol=0, atol=0)
    torch.testing.assert_close(bt.repeat(x, 2, 1, 3), x.repeat(2, 1, 3), rtol=0, atol=0)
    torch.testing.assert_close(bt.repeat(x, 2, 2, 1, 1), x.repeat(2, 2, 1, 1), rtol=0, atol=0)
    torch.testing.assert_close(bt.tile(x, (2,)), torch.tile(x, (2,)), rtol=0, atol=0)
    torch.testing.assert_close(bt.repeat_interleave(x, 3, 1), torch.repeat_interleave(x, 3, 1), rtol=0, atol=0)
    torch.testing.assert_close(bt.repeat_interleave(x, 2), torch.repeat_interleave(x, 2), rtol=0, atol=0)
    reps = torch.tensor([2, 0, 1, 3], device="cuda")
    torch.testing.assert_close(bt.repeat_interleave(x, reps, 1), torch.repeat_interleave(x, reps, 1), rtol=0, atol=0)
    lab = torch.randint(0, 6, (4, 5), device="cuda")
    torch.testing.assert_close(bt.one_hot(lab, 7), F.one_hot(lab, 7), rtol=0, atol=0)
    torch.testing.assert_close(bt.one_hot(lab), F.one_hot(lab), rtol=0, atol=0)
    p = torch.randn(2, 18, 4, 5, device="cuda")
    torch.testing.assert_close(bt.pixel_shuffle(p, 3), F.pixel_shuffle(p, 3), rtol=0, atol=0)
    q = torch.randn(2, 2, 6, 9, device="cuda")
    torch.testing.assert_close(bt.pixel_unshuffle(q, 3), F.pixel_unshuffle(q, 3), rtol=0, atol=0)
    torch.testing.assert_close(bt.narrow_copy(x, 2, 1, 3), x.narrow_copy(2, 1, 3), rtol=0, atol=0)
    torch.testing.assert_close(bt.movedim(x, 0, 2), torch.movedim(x, 0, 2).contiguous(), rtol=0, atol=0)
    a, b = torch.arange(3, device="cuda"), torch.arange(4, device="cuda") * 10
    for ind in ("ij", "xy"):
        for g1, g2 in zip(bt.meshgrid(a, b, indexing=ind), torch.meshgrid(a, b, indexing=ind)):
            torch.testing.assert_close(g1, g2, rtol=0, atol=0)
    m = torch.randn(5, 7, device="cuda")
    torch.testing.assert_close(bt.diagonal(m, 1), torch.diagonal(m, 1), rtol=0, atol=0)
    torch.testing.assert_close(bt.diag(m, -2), torch.diag(m, -2), rtol=0, atol=0)
    v = torch.randn(2, 4, device="cuda")
    for off in (0, 2, -1):
        torch.testing.assert_close(bt.diag_embed(v, off), torch.diag_embed(v, off), rtol=0, atol=0)
    torch.testing.assert_close(bt.diag(v[0], 1), torch.diag(v[0], 1), rtol=0, atol=0)
    xd = torch.randn(3, 4, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: bt.tril(t, 1), (xd,))
    assert torch.autograd.gradcheck(lambda t: bt.repeat(t, 2, 3), (xd,))
    assert torch.autograd.gradcheck(lambda t: bt.repeat_interleave(t, 2, 0), (xd,))
    assert torch.autograd.gradcheck(lambda t: bt.diag_embed(t, 1), (xd,))


# ---------------------------------------------------------------- baracuda.jax: jax.lax gather / scatter / dynamic slices

def _jax_or_skip():
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX has no GPU backend here")
    import baracuda.jax as bj
    return jax, bj


def _jax_same(got, want, tol=None):
    """Same shape and dtype; values equal (NaN where NaN), or close within tol (float sums)."""
    import numpy as np
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    g, w = np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64)
    if tol:
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(g, w)


def _jax_data(jnp, shape, dtype, seed, lo=-8, hi=8, choice=None):
    import numpy as np
    rng = np.random.default_rng(seed)
    v = rng.choice(choice, size=shape) if choice is not None else rng.integers(lo, hi, size=shape)
    return jnp.asarray(v.astype(np.float32)).astype(getattr(jnp, dtype))  # small integers: exact in every dtype


def _jax_in_range(jnp, idx, operand_shape, start_map, sizes):
    """idx with every window start moved into [0, shape[d] - sizes[d]] (for promise_in_bounds)."""
    cols = [jnp.clip(idx[..., k], 0, operand_shape[d] - sizes[d]) for k, d in enumerate(start_map)]
    return jnp.stack(cols, axis=-1)


def _jax_gather_cases(jax):
    """(name, operand shape, dimension_numbers, slice_sizes, start_indices) with out-of-range starts."""
    jnp, lax = jax.numpy, jax.lax
    GDN = lax.GatherDimensionNumbers
    j = jnp.array([[0, 4, -1], [2, 5, 1], [3, 3, 0], [6, 1, 2]], dtype=jnp.int32)  # x[i, j[i, k]], j in [-1, 6]
    rows = jnp.broadcast_to(jnp.arange(4, dtype=jnp.int32)[:, None], j.shape)
    cases = [
        # torch.gather(x, 1, j): the full coordinate (i, j[i, k]) per output element
        ("torch.gather", (4, 5), GDN(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1)), (1, 1),
         jnp.stack([rows, j], axis=-1)),
        # jnp.take(x, t, axis=1): whole [6, ., 3] slabs as offset dims
        ("take axis 1", (6, 4, 3), GDN(offset_dims=(0, 2), collapsed_slice_dims=(1,), start_index_map=(1,)), (6, 1, 3),
         jnp.array([[0], [3], [-1], [4], [2]], dtype=jnp.int32)),
        # x[i:i+2, j:j+3] windows of a 2-D start (i, j)
        ("2x3 windows", (7, 9), GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1)), (2, 3),
         jnp.array([[0, 0], [3, 5], [6, 1], [-1, 7], [5, 6]], dtype=jnp.int32)),
        # 2-D batch of reversed (column, row) starts, windows 2x1 with the column collapsed
        ("reversed map", (5, 6), GDN(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1, 0)), (2, 1),
         jnp.array([[[0, 0], [5, 3], [6, 1]], [[2, 4], [1, -1], [3, 2]]], dtype=jnp.int32)),
    ]
    if "operand_batching_dims" in GDN._fields:  # torch.gather as JAX writes it with batching dims
        cases.append(("torch.gather batched", (4, 5),
                      GDN(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,),
                          start_indices_batching_dims=(0,)), (1, 1), j[..., None]))
    return cases


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_jax_lax_gather(dtype):
    jax, bj = _jax_or_skip()
    jnp, lax = jax.numpy, jax.lax
    for k, (name, shape, dn, sizes, idx) in enumerate(_jax_gather_cases(jax)):
        x = _jax_data(jnp, shape, dtype, seed=k)
        for mode in ("clip", "fill", lax.GatherScatterMode.FILL_OR_DROP, lax.GatherScatterMode.CLIP):
            got = bj.gather(x, idx, dn, sizes, mode=mode)
            _jax_same(got, lax.gather(x, idx, dn, sizes, mode=mode))
        got = bj.gather(x, idx, dn, sizes, mode="fill", fill_value=-7)
        _jax_same(got, lax.gather(x, idx, dn, sizes, mode="fill", fill_value=-7))
        ok = _jax_in_range(jnp, idx, shape, dn.start_index_map, sizes)
        for mode in (None, "promise_in_bounds"):
            _jax_same(bj.gather(x, ok, dn, sizes, mode=mode), lax.gather(x, ok, dn, sizes, mode=mode))
    # the default fill of an out-of-range window: NaN / the dtype's minimum, over the whole window
    x = _jax_data(jnp, (7, 9), dtype, seed=9)
    dn = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
    got = bj.gather(x, jnp.array([[6, 0], [0, 0]], dtype=jnp.int32), dn, (2, 3), mode="fill")
    fill = float("nan") if dtype != "int32" else -2**31
    _jax_same(got[0], jnp.full((2, 3), fill, x.dtype))
    _jax_same(got[1], x[0:2, 0:3])


def _jax_scatter_cases(jax, unique):
    """(name, operand shape, dimension_numbers, scatter_indices, updates shape) with out-of-range
    starts; unique: no two updates land on one element, clipped or not (for lax.scatter)."""
    jnp, lax = jax.numpy, jax.lax
    SDN = lax.ScatterDimensionNumbers
    j = jnp.array([[0, 2, 7], [-1, 3, 1], [4, 0, 2], [1, 5, 3]], dtype=jnp.int32)  # clipped: still distinct per row
    rows = jnp.broadcast_to(jnp.arange(4, dtype=jnp.int32)[:, None], j.shape)
    cases = [
        ("torch.scatter", (4, 5), SDN(update_window_dims=(), inserted_window_dims=(0, 1),
                                      scatter_dims_to_operand_dims=(0, 1)), jnp.stack([rows, j], axis=-1), (4, 3)),
        ("x.at[:, t, :]", (6, 4, 3), SDN(update_window_dims=(0, 2), inserted_window_dims=(1,),
                                         scatter_dims_to_operand_dims=(1,)),
         jnp.array([[0], [2], [5]], dtype=jnp.int32), (6, 3, 3)),
        ("2x3 windows", (7, 9), SDN(update_window_dims=(1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1)),
         jnp.array([[0, 0], [2, 3], [6, 0], [4, 7]], dtype=jnp.int32), (4, 2, 3)),
    ]
    if "operand_batching_dims" in SDN._fields:
        cases.append(("torch.scatter batched", (4, 5),
                      SDN(update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
                          operand_batching_dims=(0,), scatter_indices_batching_dims=(0,)), j[..., None], (4, 3)))
    if not unique:  # duplicate targets: repeated elements and overlapping windows
        cases += [
            ("duplicates", (6,), SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)),
             jnp.array([[1], [3], [1], [1], [7], [-2], [3], [5]], dtype=jnp.int32), (8,)),
            ("overlapping windows", (7, 9), SDN(update_window_dims=(1, 2), inserted_window_dims=(),
                                                scatter_dims_to_operand_dims=(0, 1)),
             jnp.array([[0, 0], [1, 1], [0, 0], [5, 6], [6, 8], [1, 2]], dtype=jnp.int32), (6, 2, 3)),
        ]
    return cases


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_jax_lax_scatter(dtype):
    jax, bj = _jax_or_skip()
    jnp, lax = jax.numpy, jax.lax
    floating = dtype != "int32"
    ops = [("scatter", None, True), ("scatter_add", None, False), ("scatter_mul", [-1.0, 1.0, 2.0], False),
           ("scatter_min", None, False), ("scatter_max", None, False)]
    for fn, choice, unique in ops:
        for k, (name, shape, dn, idx, ushape) in enumerate(_jax_scatter_cases(jax, unique)):
            x = _jax_data(jnp, shape, dtype, seed=k, lo=-4, hi=5)
            u = _jax_data(jnp, ushape, dtype, seed=100 + k, choice=choice)
            tol = (2e-2 if dtype == "bfloat16" else 1e-5) if floating and fn in ("scatter_add", "scatter_mul") else None
            for mode in ("clip", "drop", "fill", None, lax.GatherScatterMode.CLIP):
                got = getattr(bj, fn)(x, idx, u, dn, mode=mode)
                want = getattr(lax, fn)(x, idx, u, dn, mode=mode)
                _jax_same(got, want, tol)
    # no updates: the operand comes back
    x = _jax_data(jnp, (6,), dtype, seed=7)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    _jax_same(bj.scatter_add(x, jnp.zeros((0, 1), jnp.int32), jnp.zeros((0,), x.dtype), dn), x)


def test_jax_lax_dynamic_slice():
    jax, bj = _jax_or_skip()
    jnp, lax = jax.numpy, jax.lax
    for dtype in ("float32", "bfloat16", "int32"):
        x = _jax_data(jnp, (5, 7), dtype, seed=1)
        u = _jax_data(jnp, (2, 3), dtype, seed=2)
        for starts in [(1, 2), (-1, 3), (4, 6), (-10, 100), (0, 0), jnp.array([2, -3], dtype=jnp.int32),
                       (jnp.int32(3), 5)]:
            for sizes in [(2, 3), (5, 7), (1, 1), (0, 2)]:
                _jax_same(bj.dynamic_slice(x, starts, sizes), lax.dynamic_slice(x, starts, sizes))
            _jax_same(bj.dynamic_update_slice(x, u, starts), lax.dynamic_update_slice(x, u, starts))
            _jax_same(bj.dynamic_update_slice(x, x, starts), lax.dynamic_update_slice(x, x, starts))
        y = _jax_data(jnp, (3, 4, 5), dtype, seed=3)
        w = _jax_data(jnp, (2, 2, 3), dtype, seed=4)
        _jax_same(bj.dynamic_slice(y, (1, -2, 2), (2, 2, 3)), lax.dynamic_slice(y, (1, -2, 2), (2, 2, 3)))
        _jax_same(bj.dynamic_update_slice(y, w, (2, -1, 4)), lax.dynamic_update_slice(y, w, (2, -1, 4)))
    with pytest.raises(baracuda.Error):
        jax.jit(lambda a: bj.dynamic_slice(a, (0, 0), (1, 1)))(x)


def test_scatter_reduce_prod_gradients():
    """reduce="prod": PyTorch's backward (exclusive products where self or src hold zeros)."""
    torch.manual_seed(11)
    idx = torch.tensor([[0, 1, 1, 3, 3, 3], [2, 2, 0, 4, 4, 1]], device="cuda")

    def signed(*shape):
        v = torch.rand(*shape, dtype=torch.float64, device="cuda") + 0.5
        return torch.where(torch.rand(*shape, device="cuda") > 0.5, v, -v)

    for zeros in ("none", "self", "single", "multiple"):
        x, s = signed(2, 5), signed(2, 6)
        if zeros == "self":
            x[0, 1] = x[0, 3] = x[1, 3] = 0  # two targets and an untouched position
            s[0, 1] = 0  # a zero term into a zero self
        if zeros in ("single", "multiple"):
            s[0, 1] = s[1, 3] = 0  # one zero among target (0, 1)'s terms, and (1, 4)'s
        if zeros == "multiple":
            s[0, 3] = s[0, 4] = 0  # two of target (0, 3)'s three terms
            s[1, 0] = s[1, 1] = 0  # both of target (1, 2)'s
            x[1, 4] = 0
        for include_self in (True, False):
            def fn(a, b):
                return bt.scatter_reduce(a, 1, idx, b, "prod", include_self=include_self)

            xd, sd = x.clone().requires_grad_(), s.clone().requires_grad_()
            xr, sr = x.clone().requires_grad_(), s.clone().requires_grad_()
            out = fn(xd, sd)
            want = torch.scatter_reduce(xr, 1, idx, sr, "prod", include_self=include_self)
            torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
            g = torch.randn_like(want)
            for a, b in zip(torch.autograd.grad(out, (xd, sd), g), torch.autograd.grad(want, (xr, sr), g)):
                torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
            assert torch.autograd.gradcheck(fn, (xd, sd), nondet_tol=1e-12)
    sel = torch.tensor([1, 0, 1, 3], device="cuda")
    for include_self in (True, False):  # index_reduce: the slices form
        xd = signed(5, 3).requires_grad_()
        s = signed(4, 3)
        s[0, 1] = s[2, 1] = 0  # both terms of (1, 1)
        s[1, 2] = 0  # the one term of (0, 2)
        s[2, 0] = 0  # one of (1, 0)'s two
        sd = s.requires_grad_()
        assert torch.autograd.gradcheck(lambda a, b: bt.index_reduce(a, 0, sel, b, "prod", include_self=include_self), (xd, sd),
                                        nondet_tol=1e-12)


def test_advanced_indexing_non_adjacent_and_bounds():
    torch.manual_seed(12)
    x = torch.randn(4, 5, 6, 3, device="cuda")
    i = torch.tensor([[0, 3], [-1, 2]], device="cuda")
    k = torch.tensor([5, -6], device="cuda")
    j = torch.tensor([1, 4, 0], device="cuda")
    m = torch.tensor([0, 2, 2], device="cuda")
    cases = [((i, None, k), torch.randn(2, 2, 5, 3, device="cuda")),  # separated by an axis: [B, 5, 3]
             ((i, None, None, torch.tensor([1, 2], device="cuda")), torch.randn(5, 6, device="cuda")),  # values broadcast over B
             ((None, j, None, m), torch.randn(3, 4, 6, device="cuda")),  # an axis before the first: [B, 4, 6]
             ((None, j, None, m), torch.tensor(2.5, device="cuda")),
             ((None, i[:, :1], k[:1]), torch.randn(4, 2, 1, 3, device="cuda"))]  # adjacent: [4, B, 3]
    for idx, v in cases:
        sl = tuple(slice(None) if t is None else t for t in idx)
        torch.testing.assert_close(bt.index(x, idx), x[sl], rtol=0, atol=0)
        torch.testing.assert_close(bt.index(x, sl), x[sl], rtol=0, atol=0)
        # (Tensor.index_put takes no None entries; aten's does: Tensor?[] indices)
        torch.testing.assert_close(bt.index_put(x, idx, v), torch.ops.aten.index_put(x, list(idx), v), rtol=0, atol=0)
        torch.testing.assert_close(bt.index_put(x, idx, v, accumulate=True), torch.ops.aten.index_put(x, list(idx), v, True),
                                   rtol=1e-6, atol=1e-6)
    dup = (None, torch.tensor([1, 1, 4], device="cuda"), None, torch.tensor([2, 2, 0], device="cuda"))
    v = torch.randn(3, 4, 6, device="cuda")
    torch.testing.assert_close(bt.index_put(x, dup, v, accumulate=True), torch.ops.aten.index_put(x, list(dup), v, True), rtol=1e-6,
                               atol=1e-6)
    # gradients (float64)
    xd = torch.randn(2, 4, 3, 5, dtype=torch.float64, device="cuda", requires_grad=True)
    gi = (None, torch.tensor([0, 3, 3], device="cuda"), None, torch.tensor([1, 2, 4], device="cuda"))
    vd = torch.randn(3, 2, 3, dtype=torch.float64, device="cuda", requires_grad=True)
    for acc in (False, True):
        assert torch.autograd.gradcheck(lambda a, b: bt.index_put(a, gi, b, accumulate=acc), (xd, vd))
    gdup = (None, torch.tensor([1, 1], device="cuda"), None, torch.tensor([2, 2], device="cuda"))
    assert torch.autograd.gradcheck(lambda a, b: bt.index_put(a, gdup, b, accumulate=True), (xd, vd[:2].detach().requires_grad_()))
    assert torch.autograd.gradcheck(lambda a: bt.index(a, gi), (xd,))
    xe = torch.randn(3, 4, 5, dtype=torch.float64, device="cuda", requires_grad=True)
    ge = (torch.tensor([0, 2], device="cuda"), None, torch.tensor([1, -1], device="cuda"))
    ve = torch.randn(2, 4, dtype=torch.float64, device="cuda", requires_grad=True)
    for acc in (False, True):
        assert torch.autograd.gradcheck(lambda a, b: bt.index_put(a, ge, b, accumulate=acc), (xe, ve))
    assert torch.autograd.gradcheck(lambda a: bt.index(a, ge), (xe,))
    # out of range: PyTorch's IndexError (also a baracuda.Error); check_bounds=False reads 0 / drops the write
    bad = torch.tensor([0, 4], device="cuda")
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        bt.index(x, (bad,))
    with pytest.raises(baracuda.Error, match="index -6 is out of bounds for dimension 1 with size 5"):
        bt.index(x, (None, torch.tensor([-6, 1], device="cuda")))
    with pytest.raises(IndexError, match="index 6 is out of bounds for dimension 2 with size 6"):
        bt.index_put(x, (i, None, torch.tensor([6, 0], device="cuda")), 1.0)
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        bt.index_put(x, (bad,), 1.0, accumulate=True)
    got = bt.index(x, (bad,), check_bounds=False)
    torch.testing.assert_close(got[0], x[0], rtol=0, atol=0)
    assert (got[1] == 0).all()
    v = torch.randn(2, 5, 6, 3, device="cuda")
    torch.testing.assert_close(bt.index_put(x, (bad,), v, check_bounds=False), x.index_put((bad[:1],), v[:1]), rtol=0, atol=0)
    torch.testing.assert_close(bt.index(x, (torch.tensor([-4, 3], device="cuda"),)), x[[0, 3]], rtol=0, atol=0)  # negatives wrap


def test_diag_embed_any_dims_against_torch():
    torch.manual_seed(13)
    t = torch.randn(2, 3, 4, device="cuda")
    for dims in ((0, 2), (1, 0), (-3, -1), (-2, -1), (3, 1), (0, 3), (2, 1)):
        for off in (-1, 0, 2):
            want = torch.diag_embed(t, off, *dims)
            got = bt.diag_embed(t, off, *dims)
            assert got.shape == want.shape and got.is_contiguous()
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    with pytest.raises(baracuda.Error, match="cannot be identical"):
        bt.diag_embed(t, 0, 1, 1)
    with pytest.raises(baracuda.Error, match="cannot be identical"):
        bt.diag_embed(t, 0, -4, 0)
    with pytest.raises(IndexError):
        bt.diag_embed(t, 0, 0, 4)
    td = torch.randn(2, 3, dtype=torch.float64, device="cuda", requires_grad=True)
    for dims in ((0, 2), (1, 0), (-3, -1)):
        for off in (-1, 0, 2):
            assert torch.autograd.gradcheck(lambda a: bt.diag_embed(a, off, *dims), (td,))


def test_split_chunk_unbind_views_and_one_launch_backward():
    torch.manual_seed(14)
    x = torch.randn(5, 7, 3, device="cuda")

    def same_views(got, want):
        assert isinstance(got, tuple) and len(got) == len(want)
        for a, b in zip(got, want):
            assert a.shape == b.shape and a.stride() == b.stride() and a.data_ptr() == b.data_ptr()

    for dim, sections in ((0, [2, 0, 3]), (1, [1, 4, 2]), (-1, [3])):
        same_views(bt.split(x, sections, dim), torch.split(x, sections, dim))
        for s in (1, 2, 3, 10):
            same_views(bt.split(x, s, dim), torch.split(x, s, dim))
        for c in (1, 2, 3, 4, 8):
            same_views(bt.chunk(x, c, dim), torch.chunk(x, c, dim))
        for arg in (1, 2, 3, 4, [1, 2], [2, -1], [4, 1], [0, 9], torch.tensor([1, 2]), torch.tensor(2)):
            same_views(bt.tensor_split(x, arg, dim), torch.tensor_split(x, arg, dim))
        same_views(bt.unbind(x, dim), torch.unbind(x, dim))
    with pytest.raises(baracuda.Error, match="sum exactly"):
        bt.split(x, [1, 2], 1)
    with pytest.raises(baracuda.Error):
        bt.chunk(x, 0)
    xd = torch.randn(4, 6, dtype=torch.float64, device="cuda", requires_grad=True)
    assert type(bt.split(xd, 2, 1)[0].grad_fn).__name__ == "_SplitBackward"
    assert type(bt.unbind(xd, 0)[0].grad_fn).__name__ == "_SplitBackward"
    for fn in (lambda a: bt.split(a, [1, 3, 2], 1)[1],  # the other pieces unused: no gradient, zeros in the join
               lambda a: bt.split(a, 1, 0)[2:],
               lambda a: bt.chunk(a, 4, 1)[-1],
               lambda a: bt.tensor_split(a, [2, 5], 1)[:2],
               lambda a: bt.tensor_split(a, [3, 1], 1),  # overlapping pieces: the views' own backward
               lambda a: bt.unbind(a, 1)[4],
               lambda a: bt.unbind(a, 0)[1:3]):
        assert torch.autograd.gradcheck(fn, (xd,))
    w = torch.randn(4, 2, dtype=torch.float64, device="cuda")
    (bt.split(xd, 2, 1)[1] * w).sum().backward()
    want = torch.zeros_like(xd)
    want[:, 2:4] = w
    torch.testing.assert_close(xd.grad, want, rtol=0, atol=0)
    with pytest.raises(RuntimeError):  # as torch.split's: views of a multi-output autograd node
        bt.split(xd, 2, 1)[0].mul_(2)
