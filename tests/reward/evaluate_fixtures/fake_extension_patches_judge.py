# Test double for a compiled extension that patches every comparison it can reach in its own
# process (torch.isclose, torch.allclose, Tensor.__eq__, and any harness module loaded there) and
# then returns garbage: in a judge sharing its process, the comparison would be its own.
import sys

import torch

torch.isclose = lambda a, b, **k: torch.ones(a.shape, dtype=torch.bool)
torch.allclose = lambda *a, **k: True
torch.Tensor.__eq__ = lambda self, other: torch.ones(self.shape, dtype=torch.bool)
for name in ("judge", "evaluate", "__main__"):
    module = sys.modules.get(name)
    for helper in ("compare_outputs", "compare_tensor", "check_output_kinds"):
        if module is not None and hasattr(module, helper):
            setattr(module, helper, lambda *a, **k: (0.0, []))


def fused(x, scale, bias, idx):
    return torch.zeros_like(x) + 123.0, idx.sum() + 7
