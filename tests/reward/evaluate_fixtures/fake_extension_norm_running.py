# Test double for a compiled extension: batch normalisation with the running statistics (the
# inference formula) where the reference, in training mode, uses the batch's. Right while the
# batch's mean and variance are near 0 and 1 (get_inputs' standard normal values), wrong
# otherwise: two published dev kernels (BatchNorm2d, BatchNorm3d) are written this way.
import torch


def normalise(x, weight, bias, running_mean, running_var, eps):
    return (x - running_mean) / torch.sqrt(running_var + eps) * weight + bias
