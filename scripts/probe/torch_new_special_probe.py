# PyTorch (CUDA) on the special values of frexp, igamma/igammac and i0e/i1e, and the dtypes it
# accepts for them: the rules our reference reproduces (docs/notes/torch-pointwise-probe.txt).
import torch
d = 'cuda'
S = torch.special
sv = [0.0, -0.0, 1.0, -12.0, 0.375, float('inf'), float('-inf'), float('nan'), 1e-45, 1e-40]
for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
    x = torch.tensor(sv, device=d, dtype=dt)
    m, e = torch.frexp(x)
    print(f"frexp {dt}: m={m.float().tolist()} e={e.tolist()} e.dtype={e.dtype}")
    xx = x.clone().requires_grad_(True)
    torch.frexp(xx)[0].backward(torch.ones_like(xx))
    print(f"grad_frexp {dt}: {xx.grad.float().tolist()}")
a = torch.tensor([-1.0, 0.0, 0.0, 3.0, 3.0, float('inf'), float('inf'), 3.0, float('nan'), 1.0, 0.5, 2.0], device=d)
b = torch.tensor([1.0, 0.0, 2.0, 0.0, float('inf'), 5.0, float('inf'), float('nan'), 1.0, 0.0, 0.0, 0.0], device=d)
print('A:', a.tolist()); print('B:', b.tolist())
print('igamma:', torch.igamma(a, b).tolist())
print('igammac:', torch.igammac(a, b).tolist())
bb = b.clone().requires_grad_(True)
torch.igamma(a, bb).backward(torch.ones_like(bb)); print('grad_x igamma:', bb.grad.tolist())
x = torch.tensor([0.0, -0.0, 1.0, -2.5, 85.0, 1000.0, float('inf'), float('-inf'), float('nan')], device=d)
print('i0e:', S.i0e(x).tolist()); print('i1e:', S.i1e(x).tolist())
xx = x.clone().requires_grad_(True); S.i0e(xx).backward(torch.ones_like(xx)); print('grad_i0e:', xx.grad.tolist())
xx = x.clone().requires_grad_(True); S.i1e(xx).backward(torch.ones_like(xx)); print('grad_i1e:', xx.grad.tolist())
for dt in (torch.float16, torch.bfloat16, torch.int32):
    for name, f in (('igamma', lambda t: torch.igamma(t, t)), ('i0e', S.i0e), ('i1e', S.i1e), ('frexp', torch.frexp)):
        try:
            f(torch.ones(4, device=d, dtype=dt)); print(name, dt, 'ok')
        except Exception as e:
            print(name, dt, 'ERR', str(e)[:100])
