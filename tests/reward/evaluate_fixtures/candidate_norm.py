import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="fused_ext", cpp_sources="", cuda_sources="", functions=["normalise"])


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.BatchNorm1d(features)

    def forward(self, x):
        n = self.norm
        return ext.normalise(x, n.weight, n.bias, n.running_mean, n.running_var, n.eps)
