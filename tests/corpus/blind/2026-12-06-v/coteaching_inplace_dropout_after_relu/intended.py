"""Co-teaching on noisy tabular labels: peer MLPs with in-place dropout right after ReLU.

Source: https://github.com/torchgeo/torchgeo/issues/3735

The reporter trained torchgeo's L-TAE encoder and ``loss.backward()`` failed
with "one of the variables needed for gradient computation has been modified
by an inplace operation: ... output 0 of ReluBackward0".  The model's MLP
blocks had been given ``nn.Dropout(..., inplace=True)`` after ``nn.ReLU`` to
save activation memory; ReLU's backward needs its own output, which the
in-place dropout overwrites.  The maintainers merged the fix that drops
``inplace=True`` from the dropout layers (#3737).  The training setting is the
writer's: two peer MLPs trained with co-teaching on a synthetic tabular data
set with 40% symmetric label noise, each network updated on the small-loss
samples its peer selects, the MLP blocks built the same memory-saving way.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_SAMPLES, N_FEATURES, N_CLASSES = 1024, 20, 4
NOISE_RATE = 0.4
FORGET_RATE = NOISE_RATE
NUM_GRADUAL = 2
EPOCHS = 3
BATCH = 256


def make_noisy_dataset():
    centers = torch.randn(N_CLASSES, N_FEATURES) * 1.5
    y_true = torch.randint(0, N_CLASSES, (N_SAMPLES,))
    x = centers[y_true] + torch.randn(N_SAMPLES, N_FEATURES)
    flip = torch.rand(N_SAMPLES) < NOISE_RATE
    y_noisy = torch.where(flip, torch.randint(0, N_CLASSES, (N_SAMPLES,)), y_true)
    return x, y_noisy, y_true


def mlp_block(d_in, d_out, p):
    # out-of-place dropout: ReLU's backward needs its own output
    return nn.Sequential(nn.Linear(d_in, d_out), nn.ReLU(), nn.Dropout(p))


class PeerNet(nn.Module):
    def __init__(self, hidden=(128, 64), p=0.25):
        super().__init__()
        self.features = nn.Sequential(mlp_block(N_FEATURES, hidden[0], p), mlp_block(hidden[0], hidden[1], p))
        self.head = nn.Linear(hidden[1], N_CLASSES)

    def forward(self, x):
        return self.head(self.features(x))


def forget_rate_schedule(n_epochs):
    ramp = torch.linspace(0, FORGET_RATE, NUM_GRADUAL)
    return torch.cat([ramp, torch.full((max(n_epochs - NUM_GRADUAL, 0),), FORGET_RATE)])[:n_epochs]


def loss_coteaching(logits_1, logits_2, targets, forget_rate):
    """Each network keeps its small-loss samples and hands them to its peer."""
    with torch.no_grad():
        ce_1 = F.cross_entropy(logits_1, targets, reduction="none")
        ce_2 = F.cross_entropy(logits_2, targets, reduction="none")
        n_keep = int(round((1.0 - forget_rate) * targets.shape[0]))
        keep_1 = torch.argsort(ce_1)[:n_keep]
        keep_2 = torch.argsort(ce_2)[:n_keep]
    loss_1 = F.cross_entropy(logits_1[keep_2], targets[keep_2])
    loss_2 = F.cross_entropy(logits_2[keep_1], targets[keep_1])
    return loss_1, loss_2


def evaluate(net, x, y):
    net.eval()
    with torch.no_grad():
        acc = (net(x).argmax(dim=1) == y).float().mean().item()
    net.train()
    return acc


def main():
    x, y_noisy, y_true = make_noisy_dataset()
    net1, net2 = PeerNet(), PeerNet()
    opt1 = torch.optim.Adam(net1.parameters(), lr=1e-3)
    opt2 = torch.optim.Adam(net2.parameters(), lr=1e-3)
    rates = forget_rate_schedule(EPOCHS)

    for epoch in range(EPOCHS):
        net1.train()
        net2.train()
        perm = torch.randperm(N_SAMPLES)
        for start in range(0, N_SAMPLES, BATCH):
            idx = perm[start:start + BATCH]
            xb, yb = x[idx], y_noisy[idx]
            logits_1 = net1(xb)
            logits_2 = net2(xb)
            loss_1, loss_2 = loss_coteaching(logits_1, logits_2, yb, rates[epoch].item())

            opt1.zero_grad()
            loss_1.backward()
            opt1.step()
            opt2.zero_grad()
            loss_2.backward()
            opt2.step()
        print(f"epoch {epoch} clean acc net1 {evaluate(net1, x, y_true):.3f} net2 {evaluate(net2, x, y_true):.3f}")


if __name__ == "__main__":
    main()
