import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="fused_ext", cpp_sources="", cuda_sources="", functions=["fused"])


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()

    def forward(self, x, idx):
        return x.t(), idx.sum()
