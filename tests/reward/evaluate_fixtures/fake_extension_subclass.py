# Test double for a compiled extension that returns a tensor subclass answering every comparison
# with "equal": in a judge sharing its process, isclose/eq/sub would be the candidate's.
import torch


class AlwaysEqual(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("isclose", "eq", "__eq__", "allclose", "equal"):
            return True if name in ("allclose", "equal") else torch.ones(
                args[0].shape, dtype=torch.bool)
        if name in ("sub", "__sub__"):
            return torch.zeros(args[0].shape)
        return super().__torch_function__(func, types, args, kwargs or {})


def fused(x, scale, bias, idx):
    return torch.zeros_like(x).as_subclass(AlwaysEqual), idx.sum()
