# expect: syntax-error
# cheat: none; the file does not parse
import torch

class ModelNew(torch.nn.Module:
    pass
