"""The plan API on any device array: select once, run many times (PyTorch tensors here; CuPy,
numba and JAX arrays work the same through __cuda_array_interface__ / __dlpack__)."""
import torch

import baracuda

x = torch.randn(2, 3, 8, device="cuda", dtype=torch.bfloat16)
p = baracuda.plan("pad", dtype="bf16", mode="reflect", rank=3, in_shape=[2, 3, 8], pad_low=[0, 0, 1],
                  pad_high=[0, 0, 2])
print(p)                                  # op, sku, workspace
for o in p.operands:
    print(o["name"], o["role"], o["dtype"], o["shape"])
y = torch.empty(p.outputs[0]["shape"], device="cuda", dtype=torch.bfloat16)
p(x=x, y=y, stream=torch.cuda.current_stream())
torch.testing.assert_close(y, torch.nn.functional.pad(x.float(), (1, 2), mode="reflect").bfloat16())

try:
    p(x=x.cpu(), y=y)
except baracuda.Error as e:
    print(e.code, e.message)              # InvalidProblem operand 'x': a tensor on cpu; ...
