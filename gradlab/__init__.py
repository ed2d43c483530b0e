"""gradlab: make PyTorch autograd failures visible.

Inspect the tensors autograd saved for backward, their version counters,
predict whether a backward will succeed, and name the line that modified a
saved tensor in place.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
