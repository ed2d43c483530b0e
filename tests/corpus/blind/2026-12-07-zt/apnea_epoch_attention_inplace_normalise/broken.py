"""Sleep-apnea screening: hierarchical attention over breaths and over 30-s epochs.

Source: https://discuss.pytorch.org/t/in-place-operation-error-in-backward-call/171058
("In-place operation error in backward call"). Attention weights computed by hand,
``ait = torch.exp(ait)`` followed by ``ait /= torch.sum(ait, dim=..., keepdim=True) + eps``:
``exp`` saves its output for the backward, so the in-place division overwrites a tensor autograd
needs and ``backward()`` fails with "one of the variables needed for gradient computation has been
modified by an inplace operation". The fix (a hierarchical-attention repository cites the thread for
it): leave ``exp``'s output untouched, by a ``.clone()`` or an out-of-place division.

Reduction: nasal-flow and SpO2 samples are grouped into breaths, breaths into 30-s epochs; a breath
encoder with hand-written additive attention pools breaths into an epoch vector, and an apnea-hypopnea
classifier labels each epoch (normal / hypopnea / obstructive apnea).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)

SETTINGS = dict(n_nights=4, epochs_per_night=10, breaths=8, samples=16, channels=2,
                hidden=20, att_dim=12, lr=2e-3, rounds=3, eps=1e-6)


def simulate_nights(s):
    x = torch.randn(s["n_nights"], s["epochs_per_night"], s["breaths"], s["samples"], s["channels"])
    labels = torch.randint(0, 3, (s["n_nights"], s["epochs_per_night"]))
    x[..., 0] *= (1.0 - 0.35 * labels.float()).view(*labels.shape, 1, 1)
    x[..., 1] -= 0.2 * (labels == 2).float().view(*labels.shape, 1, 1)
    return x, labels


class BreathAttentionPool(nn.Module):
    """Additive attention over the breaths of one epoch, weights normalised by hand."""

    def __init__(self, hidden, att_dim, eps):
        super().__init__()
        self.proj = nn.Linear(hidden, att_dim)
        self.context = nn.Parameter(torch.randn(att_dim, 1) * 0.1)
        self.eps = eps

    def forward(self, h):
        u = torch.tanh(self.proj(h))
        score = torch.einsum("nbka,al->nbkl", u, self.context).squeeze(-1)
        weights = torch.exp(score)
        weights /= torch.sum(weights, dim=2, keepdim=True) + self.eps
        return (weights.unsqueeze(-1) * h).sum(dim=2)


class ApneaNet(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.breath_enc = nn.GRU(s["channels"], s["hidden"], batch_first=True)
        self.pool = BreathAttentionPool(s["hidden"], s["att_dim"], s["eps"])
        self.epoch_ctx = nn.GRU(s["hidden"], s["hidden"], batch_first=True, bidirectional=True)
        self.classify = nn.Linear(2 * s["hidden"], 3)

    def forward(self, night):
        n, e, b, t, c = night.shape
        _, h_last = self.breath_enc(night.reshape(n * e * b, t, c))
        breaths = h_last[-1].reshape(n, e, b, -1)
        epochs = self.pool(breaths)
        ctx, _ = self.epoch_ctx(epochs)
        return self.classify(ctx)


def main(s=SETTINGS):
    nights, labels = simulate_nights(s)
    net = ApneaNet(s)
    opt = torch.optim.Adam(net.parameters(), lr=s["lr"])
    class_weight = torch.tensor([1.0, 2.0, 3.0])
    for rnd in range(s["rounds"]):
        for i in range(0, s["n_nights"], 2):
            logits = net(nights[i:i + 2])
            ahi_loss = F.cross_entropy(logits.reshape(-1, 3), labels[i:i + 2].reshape(-1), weight=class_weight)
            opt.zero_grad()
            ahi_loss.backward()
            opt.step()
        print(f"round {rnd}: {ahi_loss.item():.4f}")


if __name__ == "__main__":
    main()
