# Test double for a compiled extension: batch normalisation with the batch's statistics, as the
# reference in training mode.
import torch


def normalise(x, weight, bias, running_mean, running_var, eps):
    mean = x.mean(0)
    var = x.var(0, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias
