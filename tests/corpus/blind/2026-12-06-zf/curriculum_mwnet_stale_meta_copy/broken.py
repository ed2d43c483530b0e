"""Meta-Weight-Net: per-sample loss weights learned from the loss by a small weighting net.

Source: https://github.com/xjtushujun/meta-weight-net/issues/8
The report: after porting Meta-Weight-Net's meta ResNet into their own code, the author's
first batch trained, and the second batch failed with "Trying to backward through the
graph a second time" even though retain_graph was set; they then found they had not kept
``meta_model`` and ``model`` apart. In Meta-Weight-Net the virtual SGD step is taken on a
fresh copy of the classifier, loaded from the real model at every iteration; here the
copy (the "meta model", a dict of weights used with functional_call) is made once before
the loop, so after the first virtual step its weights are the non-leaf results of that
step, and the next meta-gradient walks back into the first batch's freed graph. The
setting (noisy-label curriculum with a loss-to-weight MLP on tabular data) is the
writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(0)

N_FEAT, N_CLASSES, BATCH, META_BATCH, STEPS, LR = 10, 3, 32, 16, 5, 0.1


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(N_FEAT, 32), nn.ReLU(), nn.Linear(32, N_CLASSES))

    def forward(self, x):
        return self.net(x)


class VNet(nn.Module):
    """Maps a sample's loss to its weight in [0, 1] (the curriculum)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, loss):
        return torch.sigmoid(self.net(loss))


def make_data(n, noise):
    x = torch.randn(n, N_FEAT)
    y = (x[:, :N_CLASSES] * 2).argmax(1)
    flip = torch.rand(n) < noise
    y = torch.where(flip, torch.randint(0, N_CLASSES, (n,)), y)
    return x, y


model = Classifier()
vnet = VNet()
optimizer_model = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
optimizer_vnet = torch.optim.Adam(vnet.parameters(), lr=1e-3)

train_x, train_y = make_data(STEPS * BATCH, noise=0.4)  # noisy labels
meta_x, meta_y = make_data(64, noise=0.0)  # small clean meta set

meta_weights = {name: p.detach().clone().requires_grad_() for name, p in model.named_parameters()}

for step in range(STEPS):
    x, y = train_x[step * BATCH:(step + 1) * BATCH], train_y[step * BATCH:(step + 1) * BATCH]
    idx = torch.randint(0, meta_x.shape[0], (META_BATCH,))

    # virtual step of the meta model with the current sample weights
    cost = F.cross_entropy(functional_call(model, meta_weights, (x,)), y, reduction="none")
    eps = vnet(cost.view(-1, 1)).view(-1)
    l_f_meta = (cost * eps).sum() / eps.sum().clamp_min(1e-8)
    grads = torch.autograd.grad(l_f_meta, list(meta_weights.values()), create_graph=True)
    meta_weights = {name: w - LR * g for (name, w), g in zip(meta_weights.items(), grads)}

    # update the weighting net on the clean meta batch
    l_g_meta = F.cross_entropy(functional_call(model, meta_weights, (meta_x[idx],)), meta_y[idx])
    optimizer_vnet.zero_grad()
    l_g_meta.backward()
    optimizer_vnet.step()

    # actual step of the classifier with the updated weights
    cost = F.cross_entropy(model(x), y, reduction="none")
    with torch.no_grad():
        w = vnet(cost.view(-1, 1)).view(-1)
    loss = (cost * w).sum() / w.sum().clamp_min(1e-8)
    optimizer_model.zero_grad()
    loss.backward()
    optimizer_model.step()
    print(f"step {step}: weighted loss {loss.item():.4f} meta loss {l_g_meta.item():.4f} mean w {w.mean():.3f}")
