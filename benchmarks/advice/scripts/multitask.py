"""Multi-task: a shared encoder with a classification head and a regression head; one optimizer for the encoder, one for the heads."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def make_data(n=128, d=8):
    x = torch.randn(n, d)
    w = torch.randn(d)
    y_cls = (x @ w > 0).long()
    y_reg = torch.sin(x[:, 0]) + 0.5 * x[:, 1] ** 2
    return x, y_cls, y_reg


class SharedEncoder(nn.Module):
    def __init__(self, d_in=8, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, hidden)

    def forward(self, x):
        h = self.norm(self.fc1(x))
        h = torch.sigmoid(h) * h
        return F.relu(self.fc2(h))


def build():
    nets = {
        "encoder": SharedEncoder(),
        "cls_head": nn.Linear(32, 2),
        "reg_head": nn.Sequential(nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 1)),
    }
    opt_encoder = torch.optim.SGD(nets["encoder"].parameters(), lr=0.05, momentum=0.9)
    head_params = list(nets["cls_head"].parameters()) + list(nets["reg_head"].parameters())
    opt_heads = torch.optim.Adam(head_params, lr=5e-3)
    return nets, [opt_encoder, opt_heads]


def train(nets, optimizers, data, epochs=3, reg_weight=0.5):
    x, y_cls, y_reg = data
    for epoch in range(epochs):
        for idx in torch.arange(len(x)).split(32):
            feats = nets["encoder"](x[idx])
            cls_loss = F.cross_entropy(nets["cls_head"](feats), y_cls[idx])
            reg_loss = F.mse_loss(nets["reg_head"](feats).squeeze(1), y_reg[idx])
            for opt in optimizers:
                opt.zero_grad()
            cls_loss.backward(retain_graph=True)  # the encoder's graph is needed again by the regression loss
            (reg_weight * reg_loss).backward()
            for opt in optimizers:
                opt.step()
        print(f"epoch {epoch}: cls {cls_loss.item():.3f} reg {reg_loss.item():.3f}")


if __name__ == "__main__":
    nets, optimizers = build()
    train(nets, optimizers, make_data())
