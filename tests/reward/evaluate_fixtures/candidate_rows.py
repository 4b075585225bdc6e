import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="rows_ext", cpp_sources="", cuda_sources="", functions=["rows"])


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return ext.rows(x, self.scale)
