import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="fused_ext", cpp_sources="", cuda_sources="", functions=["double"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.double(x)
