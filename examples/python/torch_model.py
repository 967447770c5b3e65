"""baracuda ops inside a PyTorch model: autograd through the backward plans, torch.compile."""
import torch

import baracuda.torch as bt


class Block(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(d, d, device="cuda") / d**0.5)
        self.b = torch.nn.Parameter(torch.zeros(d, device="cuda"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return bt.elementwise("silu", bt.linear(x, self.w, self.b)) + x


model = Block(64)
x = torch.randn(8, 64, device="cuda")
loss = model(x).square().mean()
loss.backward()
print("grad norm", model.w.grad.norm().item())

compiled = torch.compile(model, fullgraph=True)   # the custom ops trace through their fake impls
torch.testing.assert_close(compiled(x), model(x))
print("compiled ok")
