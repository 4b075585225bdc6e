# Test double for a compiled extension: doubles its input, as reference_picky.py's model does.
def double(x):
    return x * 2
