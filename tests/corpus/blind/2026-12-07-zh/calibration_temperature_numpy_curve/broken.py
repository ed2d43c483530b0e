"""A classifier trained briefly, then calibrated by temperature scaling on a held-out split.

Source: https://github.com/ClownW/Reinforcement-learning-with-PyTorch/issues/3 -- the DQN
example stopped with "RuntimeError: Can't call numpy() on Tensor that requires grad. Use
tensor.detach().numpy() instead." because the loss tensors kept for the loss curve were
turned into a NumPy array; the answer was to detach the loss after its backward before
keeping it for the plot. The report is a DQN; the training setting is the writer's.

What the author was doing: after a few epochs of cross-entropy training, the logits of a
held-out split are computed once without a graph and a single temperature T is fitted to
them by minimising the NLL with Adam (T kept positive through its log). Each step keeps the
NLL tensor in a list for the calibration curve and prints its running mean through NumPy;
those tensors still require grad (they depend on log T), so ``np.array`` on them fails.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CLASSES = 5
DIM = 20
TRAIN_STEPS = 6
CALIB_STEPS = 20


def make_split(n):
    y = torch.randint(0, N_CLASSES, (n,))
    x = torch.randn(n, DIM) + 2.0 * F.one_hot(y, DIM).float()[:, :DIM]
    return x, y


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                                 nn.Linear(64, N_CLASSES))

    def forward(self, x):
        return self.net(x)


def expected_calibration_error(probs, labels, n_bins=10):
    conf, pred = probs.max(axis=1), probs.argmax(axis=1)
    acc = (pred == labels).astype(np.float64)
    edges = np.linspace(0, 1, n_bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (conf > lo) & (conf <= hi)
        if in_bin.any():
            ece += in_bin.mean() * abs(acc[in_bin].mean() - conf[in_bin].mean())
    return ece


model = Classifier()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
log_temperature = nn.Parameter(torch.zeros(1))  # fitted after training, on held-out logits
temp_optimizer = torch.optim.Adam([log_temperature], lr=0.05)
x_train, y_train = make_split(256)
x_val, y_val = make_split(128)

for step in range(TRAIN_STEPS):
    idx = torch.randint(0, len(x_train), (64,))
    loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

# temperature scaling on the held-out logits
with torch.no_grad():
    val_logits = model(x_val)
nll_curve = []

for step in range(CALIB_STEPS):
    nll = F.cross_entropy(val_logits / log_temperature.exp(), y_val)
    temp_optimizer.zero_grad()
    nll.backward()
    temp_optimizer.step()
    nll_curve.append(nll)
    if step % 5 == 0:
        print(f"calib step {step}: T {log_temperature.exp().item():.3f} "
              f"mean NLL {np.array(nll_curve).mean():.4f}")

probs = F.softmax(val_logits / log_temperature.exp(), dim=1).detach().numpy()
print("ECE after scaling:", expected_calibration_error(probs, y_val.numpy()))
