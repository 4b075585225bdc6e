import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="softmax_ext", cpp_sources="", cuda_sources="", functions=["softmax"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax(x)
