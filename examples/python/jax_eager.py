"""baracuda ops on JAX arrays, eagerly (DLPack; outputs allocated through PyTorch or CuPy)."""
import jax.numpy as jnp

import baracuda.jax as bj

a = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
y = bj.call("pad", dtype="f32", mode="reflect", rank=2, in_shape=[3, 4], pad_low=[0, 1], pad_high=[0, 1], x=a)["y"]
print(y)
