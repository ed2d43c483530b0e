"""Raises a ValueError that has nothing to do with autograd."""


def load(n):
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return n


print("loading")
load(-1)
