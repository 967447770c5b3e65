# Prints PyTorch's (CUDA) results of pointwise ops on special values, to pin down semantics
# (NaN/signed-zero/integer-sign rules) that the float64 reference must reproduce.
import math, torch
d = 'cuda'
F = torch.nn.functional
sv = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -3.0, float('inf'), float('-inf'), float('nan'), 1e-40, 100.0, -100.0]
def show(name, t):
    t = t.cpu()
    vals = t.tolist()
    print(f"{name}: " + " ".join(repr(v) for v in vals))
x = torch.tensor(sv, device=d)
un = {
 'sign': torch.sign, 'sgn': torch.sgn, 'signbit': torch.signbit, 'round': torch.round, 'frac': torch.frac,
 'relu': torch.relu, 'hardtanh': F.hardtanh, 'relu6': F.relu6, 'abs': torch.abs, 'sinc': torch.sinc,
 'logit': torch.logit, 'nan_to_num': torch.nan_to_num, 'hardshrink': F.hardshrink, 'softshrink': F.softshrink,
 'threshold': lambda t: F.threshold(t, 0.5, -7.0), 'softplus': F.softplus, 'mish': F.mish, 'rsqrt': torch.rsqrt,
 'leaky': F.leaky_relu, 'elu': F.elu, 'celu': F.celu, 'selu': F.selu, 'hardsigmoid': F.hardsigmoid, 'hardswish': F.hardswish,
 'clamp_0_1': lambda t: torch.clamp(t, 0, 1), 'clamp_min0': lambda t: torch.clamp(t, min=0.0), 'round_dec1': lambda t: torch.round(t, decimals=1),
 'erfinv': torch.erfinv, 'lgamma': torch.lgamma, 'digamma': torch.digamma, 'logsigmoid': F.logsigmoid, 'tanhshrink': F.tanhshrink,
 'softsign': F.softsign, 'entr': torch.special.entr, 'log_ndtr': torch.special.log_ndtr, 'ndtri': torch.special.ndtri, 'erfcx': torch.special.erfcx,
 'i0': torch.i0, 'expit': torch.special.expit, 'reciprocal': torch.reciprocal, 'cbrt': lambda t: torch.pow(t, 1/3),
}
for k, f in un.items():
    try: show(k, f(x))
    except Exception as e: print(k, 'ERR', e)
# gradients at special points
for k, f in {'abs': torch.abs, 'relu': torch.relu, 'hardtanh': F.hardtanh, 'relu6': F.relu6, 'clamp_0_1': lambda t: torch.clamp(t, 0, 1),
             'sign': torch.sign, 'round': torch.round, 'hardshrink': F.hardshrink, 'softshrink': F.softshrink, 'threshold': lambda t: F.threshold(t, 0.5, -7.0),
             'leaky': F.leaky_relu, 'elu': F.elu, 'celu': F.celu, 'hardsigmoid': F.hardsigmoid, 'hardswish': F.hardswish, 'sqrt': torch.sqrt,
             'softplus': F.softplus, 'logit': torch.logit, 'sinc': torch.sinc, 'frac': torch.frac, 'nan_to_num': torch.nan_to_num,
             'mish': F.mish, 'logsigmoid': F.logsigmoid, 'rsqrt': torch.rsqrt, 'cbrt_pow': lambda t: torch.pow(t, 1/3), 'entr': torch.special.entr}.items():
    xx = x.clone().requires_grad_(True)
    try:
        f(xx).backward(torch.ones_like(xx)); show('grad_' + k, xx.grad)
    except Exception as e: print('grad_' + k, 'ERR', e)
# binary float
a = torch.tensor([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 5.0, -5.0, float('inf'), float('-inf'), float('nan'), 0.0, 1.0, 3.0, -3.0, 7.0], device=d)
b = torch.tensor([0.0, 0.0, -0.0, 0.0, 2.0, 2.0, -3.0, -3.0, 2.0, float('inf'), 1.0, float('nan'), float('inf'), -0.0, float('-inf'), 0.0], device=d)
print('A:', a.tolist()); print('B:', b.tolist())
bi = {'div': torch.div, 'div_trunc': lambda p, q: torch.div(p, q, rounding_mode='trunc'), 'div_floor': lambda p, q: torch.div(p, q, rounding_mode='floor'),
      'remainder': torch.remainder, 'fmod': torch.fmod, 'pow': torch.pow, 'atan2': torch.atan2, 'hypot': torch.hypot, 'copysign': torch.copysign,
      'maximum': torch.maximum, 'minimum': torch.minimum, 'fmax': torch.fmax, 'fmin': torch.fmin, 'nextafter': torch.nextafter, 'heaviside': torch.heaviside,
      'logaddexp': torch.logaddexp, 'logaddexp2': torch.logaddexp2, 'xlogy': torch.xlogy, 'xlog1py': torch.special.xlog1py, 'float_power': torch.float_power,
      'lt': torch.lt, 'eq': torch.eq, 'ne': torch.ne, 'isclose': torch.isclose, 'floor_divide': torch.floor_divide, 'ldexp': torch.ldexp}
for k, f in bi.items():
    try: show(k, f(a, b))
    except Exception as e: print(k, 'ERR', e)
for k, f in {'maximum': torch.maximum, 'minimum': torch.minimum, 'fmax': torch.fmax, 'fmin': torch.fmin, 'pow': torch.pow, 'atan2': torch.atan2,
             'hypot': torch.hypot, 'copysign': torch.copysign, 'remainder': torch.remainder, 'fmod': torch.fmod, 'div': torch.div,
             'xlogy': torch.xlogy, 'logaddexp': torch.logaddexp, 'div_floor': lambda p, q: torch.div(p, q, rounding_mode='floor')}.items():
    aa = a.clone().requires_grad_(True); bb = b.clone().requires_grad_(True)
    try:
        f(aa, bb).backward(torch.ones_like(aa)); show('ga_' + k, aa.grad); show('gb_' + k, bb.grad)
    except Exception as e: print('grad2', k, 'ERR', e)
# integer semantics
for dt in (torch.int8, torch.int32, torch.int64, torch.uint8):
    if dt == torch.uint8:
        ia = torch.tensor([7, 0, 200, 255, 3, 5], device=d, dtype=dt); ib = torch.tensor([2, 3, 7, 0, 0, 255], device=d, dtype=dt)
    else:
        ia = torch.tensor([7, -7, 7, -7, 0, 5, -128 if dt == torch.int8 else -2**31, 3, -3], device=d, dtype=dt)
        ib = torch.tensor([2, 2, -2, -2, 3, 0, -1, 0, 0], device=d, dtype=dt)
    print('IA', dt, ia.tolist(), 'IB', ib.tolist())
    for k, f in {'floor_divide': torch.floor_divide, 'remainder': torch.remainder, 'fmod': torch.fmod, 'div_trunc': lambda p, q: torch.div(p, q, rounding_mode='trunc'),
                 'gcd': torch.gcd, 'lcm': torch.lcm, 'shl': torch.bitwise_left_shift, 'shr': torch.bitwise_right_shift, 'pow': torch.pow,
                 'abs': lambda p, q: torch.abs(p), 'neg': lambda p, q: torch.neg(p), 'sign': lambda p, q: torch.sign(p), 'div': torch.div}.items():
        try: show(f'{k}[{dt}]', f(ia, ib))
        except Exception as e: print(k, dt, 'ERR', str(e)[:100])
    sh = torch.tensor([0, 1, 7, 8, 9, 31, 32, 63, 64, 70], device=d, dtype=dt)
    v = torch.full_like(sh, -3 if dt != torch.uint8 else 3)
    try: show(f'shl_amt[{dt}]', torch.bitwise_left_shift(v, sh)); show(f'shr_amt[{dt}]', torch.bitwise_right_shift(v, sh))
    except Exception as e: print('shift', e)
# promotion
dts = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64]
print('PROMOTE')
for p in dts:
    print(p, [str(torch.promote_types(p, q)).replace('torch.', '') for q in dts])
for p in dts:
    t = torch.ones(3, dtype=p, device=d)
    r = []
    for s in (True, 2, 2.5):
        try: r.append(str((t + s).dtype).replace('torch.', ''))
        except Exception as e: r.append('ERR')
    z = torch.ones((), dtype=torch.float64, device=d)
    r.append(str((t * z).dtype).replace('torch.', ''))
    print('scalar', p, r)
for k, f in {'exp': torch.exp, 'abs': torch.abs, 'neg': torch.neg, 'sign': torch.sign, 'floor': torch.floor, 'round': torch.round, 'sqrt': torch.sqrt,
             'relu': torch.relu, 'sigmoid': torch.sigmoid, 'bitwise_not': torch.bitwise_not, 'square': torch.square, 'frac': torch.frac, 'trunc': torch.trunc,
             'reciprocal': torch.reciprocal, 'isnan': torch.isnan, 'signbit': torch.signbit}.items():
    r = []
    for p in dts:
        try: r.append(str(f(torch.ones(2, dtype=p, device=d)).dtype).replace('torch.', ''))
        except Exception as e: r.append('ERR')
    print('unary_dtype', k, r)
for k, f in {'add': torch.add, 'sub': torch.sub, 'mul': torch.mul, 'div': torch.div, 'maximum': torch.maximum, 'floor_divide': torch.floor_divide,
             'remainder': torch.remainder, 'pow': torch.pow, 'atan2': torch.atan2, 'bitwise_and': torch.bitwise_and, 'logical_and': torch.logical_and,
             'copysign': torch.copysign, 'hypot': torch.hypot, 'fmax': torch.fmax, 'gcd': torch.gcd, 'heaviside': torch.heaviside, 'xlogy': torch.xlogy,
             'nextafter': torch.nextafter, 'ldexp': torch.ldexp, 'logaddexp': torch.logaddexp}.items():
    r = []
    for p in (torch.bool, torch.uint8, torch.int32, torch.float16):
        try: r.append(str(f(torch.ones(2, dtype=p, device=d), torch.ones(2, dtype=p, device=d)).dtype).replace('torch.', ''))
        except Exception as e: r.append('ERR')
    print('binary_dtype', k, r)
# lerp, addcmul fusion, round half even, casts
s = torch.tensor([0.1, 0.7, 1e8, -3.3], device=d); e = torch.tensor([5.3, -2.2, 1.0, 1e-8], device=d)
for w in (0.25, 0.75, 0.5):
    show(f'lerp_w{w}', torch.lerp(s, e, w))
show('addcmul', torch.addcmul(s, e, s, value=0.3)); show('addcdiv', torch.addcdiv(s, e, s, value=0.3))
c = torch.tensor([1e10, -1e10, 300.7, -300.7, 2.5, -2.5, float('nan'), 127.9, -129.5], device=d)
for dt in (torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool):
    show(f'cast_f32_to_{dt}', c.to(dt))
show('cast_to_e4m3', torch.tensor([500.0, -500.0, 448.0, 460.0, 1e-9, float('nan'), float('inf')], device=d).to(torch.float8_e4m3fn).float())
show('cast_to_e5m2', torch.tensor([60000.0, 70000.0, -1e6, 1e-9, float('nan'), float('inf')], device=d).to(torch.float8_e5m2).float())
print('torch', torch.__version__)
