"""A correct training script, for timing ``python -m gradlab run`` against ``python`` (benchmarks/cost.py).

Trains the benchmarks' small CNN (``workloads.py``) with Adam for ``STEPS`` steps
(the first argument, default 200) on one CPU thread, and prints the last loss:
the two runs must print the same.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import workloads

torch.set_num_threads(1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
w = workloads.build("cnn", "Adam", steps)
for _ in range(steps):
    loss = w.step()
print(f"loss {loss:.6f}")
