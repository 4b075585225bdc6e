# Test double for a compiled extension that computes and returns float16 for a float32 reference
# (a silent precision downgrade: half the bytes to write, so "faster").
import torch


def fused(x, scale, bias, idx):
    return (x.half() * scale + bias.half()).to(torch.float16), idx.sum()
