"""Quarry blast vibration regression with a subspace adapter: W = Theta + Delta @ P.

Source: https://discuss.pytorch.org/t/how-to-do-back-propagation-with-loss-f-theta-delta-p-x-y-2-delta-p-2-instead-of-the-usual-loss-f-theta-delta-x-y-2/223591
The author wants to fine-tune a layer only inside a subspace P: the loss is
||f_{Theta + Delta P}(X) - Y||^2 + ||Delta P||^2, with Theta the pretrained weights and
Delta the trainable coefficients. The writer reduces that to an adapter whose effective
weight Theta + Delta @ P (and its penalty) is built by a ``materialise()`` method that an
epoch-start callback calls, so every batch of the epoch reads the same effective weight.
The setting (peak particle velocity at a monitoring station predicted from blast design
and distance features, a pretrained site model adapted to a new bench) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

CFG = dict(n_blasts=192, n_feat=10, hidden=32, rank=4, batch=24, epochs=2, lr=5e-3)


def make_blasts(n, d):
    """Charge per delay, burden, spacing, stemming, distance... -> log peak particle velocity."""
    x = torch.randn(n, d)
    scaled_distance = x[:, 0] - 0.5 * x[:, 1]
    log_ppv = (1.2 - 0.9 * scaled_distance + 0.1 * x[:, 2:5].sum(1)).unsqueeze(1)
    return x, log_ppv + 0.05 * torch.randn(n, 1)


class SubspaceAdapter(nn.Module):
    """A linear layer frozen at Theta, trained only along the rows of P."""

    def __init__(self, d_in, d_out, rank):
        super().__init__()
        self.register_buffer("theta", torch.randn(d_out, d_in) / d_in ** 0.5)
        self.register_buffer("P", torch.linalg.qr(torch.randn(d_in, rank))[0].T.contiguous())
        self.delta = nn.Parameter(torch.zeros(d_out, rank))
        self.bias = nn.Parameter(torch.zeros(d_out))
        self.weight_eff = None
        self.penalty = None

    def materialise(self):
        delta_p = self.delta @ self.P
        self.weight_eff = self.theta + delta_p
        self.penalty = delta_p.pow(2).sum()

    def forward(self, x):
        self.materialise()
        return F.linear(x, self.weight_eff, self.bias)


class BlastNet(nn.Module):
    def __init__(self, d, hidden, rank):
        super().__init__()
        self.adapter = SubspaceAdapter(d, hidden, rank)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(torch.tanh(self.adapter(x)))


class EpochCallbacks:
    def __init__(self, net):
        self.net = net

    def on_epoch_start(self, epoch):
        pass


def run(net, optimizer, x, y, callbacks):
    for epoch in range(CFG["epochs"]):
        callbacks.on_epoch_start(epoch)
        order = torch.randperm(x.shape[0])
        for i in range(0, x.shape[0], CFG["batch"]):
            idx = order[i:i + CFG["batch"]]
            pred = net(x[idx])
            fit_loss = F.mse_loss(pred, y[idx])
            reg_loss = net.adapter.penalty
            optimizer.zero_grad()
            (fit_loss + 1e-2 * reg_loss).backward()
            optimizer.step()
        print(f"epoch {epoch}: fit {fit_loss.item():.4f} reg {reg_loss.item():.5f}")


def main():
    x, y = make_blasts(CFG["n_blasts"], CFG["n_feat"])
    net = BlastNet(CFG["n_feat"], CFG["hidden"], CFG["rank"])
    optimizer = torch.optim.Adam(net.parameters(), lr=CFG["lr"])
    run(net, optimizer, x, y, EpochCallbacks(net))


if __name__ == "__main__":
    main()
